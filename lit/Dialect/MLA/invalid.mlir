// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --allow-unregistered-dialect

// expected-error @+1 {{'qk_head_dim' must be a multiple of 16 in [16, 576], got 100}}
mla.prefill @p qk_head_dim = 100, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'v_head_dim' must be a multiple of 16 in [16, 512], got 528}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 528, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{attribute 'q_heads' failed to satisfy constraint: 32-bit integer attribute whose value is positive}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 0, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{attribute 'kv_heads' failed to satisfy constraint: 32-bit integer attribute whose value is positive}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 16, kv_heads = -1, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'q_heads' (12) must be a multiple of 'kv_heads' (8)}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 12, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{window 'left' must be >= -1 (-1 is unbounded), got -2}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = -2, right = 0>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{window 'right' must be >= -1 (-1 is unbounded), got -5}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = 16, right = -5>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'soft_cap' must be finite and >= 0 (0 is off), got -1}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, soft_cap = -1.0, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{window 'left' must be >= -1 (-1 is unbounded), got -5}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, window = <left = -5, right = 0>, alibi, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'soft_cap' must be finite and >= 0 (0 is off), got nan}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, soft_cap = 0x7FC00000, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'soft_cap' must be finite and >= 0 (0 is off), got INF}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, soft_cap = 0x7F800000, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tile_q' must be a multiple of 16 in [16, 256], got 72}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, tile_q = 72, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tile_q' must be a multiple of 16 in [16, 256], got 512}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, tile_q = 512, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'out_type' must be bf16 or f16, got f8E4M3}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, q_type = f8E4M3, kv_type = f8E4M3, out_type = f8E4M3, layout = varlen

// -----

// expected-error @+2 {{expected one of [none, causal] for attention mask, got: sliding}}
// expected-error @+1 {{failed to parse MLA_MaskAttr parameter 'value'}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = sliding, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tiling' requires 'arch': a tiling is chosen for a target}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'tiling' tile_q (64) must equal the pinned 'tile_q' (128)}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, tile_q = 128, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'qk_head_dim' (80) must be a multiple of the tiling's 'mma_k' (64; of 16 where mma_k is 32) and 'v_head_dim' (128) of its 'mma_n' (16)}}
mla.prefill @p qk_head_dim = 80, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = gfx942, tiling = <tile_q = 64, tile_k = 64, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 16, mma_k = 64>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'qk_head_dim' (128) must be a multiple of the tiling's 'mma_k' (16; of 16 where mma_k is 32) and 'v_head_dim' (80) of its 'mma_n' (32)}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 80, q_heads = 8, kv_heads = 8, mask = none, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 1, mma_m = 16, mma_n = 32, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'stages' must be positive, got 0}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 64, stages = 0, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'wave_size' must be 32 or 64, got 16}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = gfx942, tiling = <tile_q = 64, tile_k = 32, warps = 4, wave_size = 16, stages = 1, mma_m = 16, mma_n = 16, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'tile_q' (64) must equal 'warps' (8) * 'mma_m' (16): each warp owns mma_m query rows}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 64, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'warps' (8) must be 4 * ('tile_q' (128) / 64 + 1) with 'mma_m' 64: a producer warpgroup and a consumer warpgroup per 64 query rows}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 8, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// The wgmma kernel's limits: up to three consumer warpgroups, its key tiles,
// and head dims whose output fits the Q tile's slabs.
// expected-error @+1 {{tiling 'tile_q' (256) must be at most 192 with 'mma_m' 64: up to three consumer warpgroups}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 256, tile_k = 64, warps = 20, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'tile_k' (112) must be 64, 80, 96 or 128 with 'mma_m' 64}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 128, tile_k = 112, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{head dims 64/128 do not suit the wgmma tiling (mma_m 64): it needs qk_head_dim >= 64, v_head_dim in [64, 256], and v_head_dim in no more 64-column slabs than qk_head_dim}}
mla.prefill @p qk_head_dim = 64, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{head dims 48/48 do not suit the wgmma tiling}}
mla.prefill @p qk_head_dim = 48, v_head_dim = 48, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 128, tile_k = 128, warps = 12, wave_size = 32, stages = 2, mma_m = 64, mma_n = 64, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{tiling 'tile_k' (24) must be a multiple of 'mma_n' (8) and 'mma_k' (16)}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, tiling = <tile_q = 128, tile_k = 24, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'launch' requires 'tiling'}}
mla.prefill @p qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, arch = sm_90a, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 1024>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'launch' threads (128) must equal the tiling's warps * wave_size (256)}}
mla.prefill @p qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 128, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'launch' shared_bytes (1024) must equal what the tiling uses (137216)}}
mla.prefill @p qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = 1024>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{launch 'entry' must be a C identifier, got "9lives"}}
mla.prefill @p qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "9lives", threads = 256, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{launch 'threads' must be in [1, 1024], got 2048}}
mla.prefill @p qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 2048, shared_bytes = 137216>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{launch 'shared_bytes' must be >= 0, got -1}}
mla.prefill @p qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, arch = sm_90a, tiling = <tile_q = 128, tile_k = 64, warps = 8, wave_size = 32, stages = 2, mma_m = 16, mma_n = 8, mma_k = 16>, launch = <entry = "mlagen_prefill", threads = 256, shared_bytes = -1>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

// A module is a set of variants, each named once.
// expected-note @+1 {{see existing symbol definition here}}
mla.prefill @twice qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
// expected-error @+1 {{redefinition of symbol named 'twice'}}
mla.prefill @twice qk_head_dim = 64, v_head_dim = 64, q_heads = 8, kv_heads = 8, mask = none, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// -----

"test.wrapper"() ({
  // expected-error @+1 {{'mla.prefill' op expects parent op 'builtin.module'}}
  mla.prefill @nested qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
}) : () -> ()
