// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{'q_heads' (12) must be a multiple of 'kv_heads' (8)}}
mla.paged_decode @d q_heads = 12, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'q_len' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 8]}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 9, page_size = 16, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint: 32-bit integer attribute whose value is in [8, 256]}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 512, q_len = 1, page_size = 16, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'head_dim' must be a multiple of 8 (16-byte cache vectors), got 100}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 100, q_len = 1, page_size = 16, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'head_dim' must be a multiple of 16 (16-byte cache vectors), got 40}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 40, q_len = 1, page_size = 16, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'window' must be -1 (unbounded) or >= 0, got -2}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, window = -2, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'soft_cap' must be finite and >= 0 (0 is off), got -1}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, soft_cap = -1.0, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// expected-error @+1 {{'q_type' (f16) must equal 'out_type' (bf16)}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, q_type = f16, kv_type = f16, out_type = bf16

// -----

// expected-error @+1 {{an f8E4M3 cache needs bf16 q and out}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, q_type = f16, kv_type = f8E4M3, out_type = f16

// -----

// expected-error @+1 {{gfx90a has no fp8 conversion instructions}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, arch = gfx90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'kv_type' (f16) must equal 'q_type' (bf16) or be f8E4M3}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, q_type = bf16, kv_type = f16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint}}
mla.paged_decode @d q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 24, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// alibi is a unit flag: its slopes are a run-time argument, not a value.
// expected-error @+1 {{expected ','}}
mla.paged_decode @d q_heads = 32, kv_heads = 32, head_dim = 128, q_len = 1, page_size = 16, alibi = 1, q_type = bf16, kv_type = bf16, out_type = bf16
