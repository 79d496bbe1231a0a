// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'q_heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 128]}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 0, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'q_heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 128]}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 129, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'q_len' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 8]}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 9, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint: 32-bit integer attribute whose value is a power of two in [1, 256]}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 48, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 512, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 0, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'qk_head_dim' must be a multiple of 16 in [16, 576], got 580}}
mla.decode @d qk_head_dim = 580, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'v_head_dim' must be a multiple of 16 in [16, 512], got 8}}
mla.decode @d qk_head_dim = 576, v_head_dim = 8, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'v_head_dim' (512) must be <= 'qk_head_dim' (256): V is the first v_head_dim columns of the latent cache}}
mla.decode @d qk_head_dim = 256, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'q_type' f8E4M3 needs an fp8 cache ('kv_type' f8E4M3), got 'kv_type' bf16}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = f8E4M3, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'out_type' must be bf16 or f16, got f8E4M3}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = f8E4M3

// -----

// expected-error @+1 {{'tile_k' must be a multiple of 16 in [16, 256], got 24}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tile_k = 24, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' requires 'arch': a tiling is chosen for a target}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' heads (24) must be a multiple of 'q_heads' (16): padding (AMD, to 16) takes whole multiples}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 24, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' heads (8) must be a multiple of 'q_heads' (16)}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 8, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'tiling' tile_k (64) must equal the pinned 'tile_k' (32)}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, tile_k = 32, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'launch' and 'reduce_launch' require 'tiling'}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 0>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'launch' threads (128) must equal the tiling's warps * wave_size (256)}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, launch = <entry = "mlagen_decode", threads = 128, shared_bytes = 0>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'reduce_launch' threads (192) must be a multiple of 128: the reduce gives each q row 128 threads}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 0>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 192, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'launch' and 'reduce_launch' come together: one code object holds both kernels}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{decode_tiling 'heads_per_block' (24) and 'tile_k' (64) must be multiples of 16}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 24, tile_k = 64, warps = 8, wave_size = 32, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{decode_tiling 'wave_size' must be 32 or 64, got 16}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 16, stages = 2>, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{decode_tiling 'stages' must be positive, got 0}}
mla.decode @d qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = sm_90a, tiling = <heads = 16, heads_per_block = 16, tile_k = 64, warps = 8, wave_size = 32, stages = 0>, q_type = bf16, kv_type = bf16, out_type = bf16
