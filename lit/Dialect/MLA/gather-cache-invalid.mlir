// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'kv_heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 256]}}
mla.gather_cache @g kv_heads = 0, head_dim = 128, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint: 32-bit integer attribute whose value is in [8, 512]}}
mla.gather_cache @g kv_heads = 8, head_dim = 576, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 4096]}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 4097, kv_type = bf16

// -----

// expected-error @+1 {{'head_dim' must be a multiple of 8 (a thread moves 8 elements), got 100}}
mla.gather_cache @g kv_heads = 8, head_dim = 100, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{an f8E4M3 cache needs 'out_type' bf16 or f16 (the gathered tokens' type)}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 16, kv_type = f8E4M3

// -----

// expected-error @+1 {{an f8E4M3 cache needs 'out_type' bf16 or f16 (the gathered tokens' type)}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 16, kv_type = f8E4M3, out_type = f8E4M3

// -----

// expected-error @+1 {{'out_type' (f16) must equal 'kv_type' (bf16) for a 16-bit cache}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 16, kv_type = bf16, out_type = f16

// -----

// expected-error @+1 {{gfx90a has no fp8 conversion instructions: an f8E4M3 cache needs sm_80, sm_90a, gfx942 (FNUZ) or gfx950 (OCP)}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 16, arch = gfx90a, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
mla.gather_cache @g kv_heads = 8, head_dim = 128, page_size = 16, launch = <entry = "mlagen_gather_cache", threads = 256, shared_bytes = 0>, kv_type = bf16
