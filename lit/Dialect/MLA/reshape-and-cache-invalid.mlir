// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'kv_heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 256]}}
mla.reshape_and_cache @w kv_heads = 0, head_dim = 128, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'kv_heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 256]}}
mla.reshape_and_cache @w kv_heads = 257, head_dim = 128, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint: 32-bit integer attribute whose value is in [8, 512]}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 576, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 4096]}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 128, page_size = 0, kv_type = bf16

// -----

// expected-error @+1 {{'head_dim' must be a multiple of 8 (a 16-byte vector of 16-bit elements), got 100}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 100, page_size = 16, kv_type = bf16

// -----

// expected-error @+1 {{an f8E4M3 cache needs 'in_type' bf16 or f16 (the new tokens' type)}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 128, page_size = 16, kv_type = f8E4M3

// -----

// expected-error @+1 {{'in_type' (f16) must equal 'kv_type' (bf16) for a 16-bit cache}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 128, page_size = 16, in_type = f16, kv_type = bf16

// -----

// expected-error @+1 {{gfx90a has no fp8 conversion instructions: an f8E4M3 cache needs sm_80, sm_90a, gfx942 (FNUZ) or gfx950 (OCP)}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 128, page_size = 16, arch = gfx90a, in_type = bf16, kv_type = f8E4M3

// -----

// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
mla.reshape_and_cache @w kv_heads = 8, head_dim = 128, page_size = 16, launch = <entry = "mlagen_reshape_and_cache", threads = 256, shared_bytes = 0>, kv_type = bf16
