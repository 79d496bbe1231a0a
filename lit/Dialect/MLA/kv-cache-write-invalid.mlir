// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'rope_dim' failed to satisfy constraint: 32-bit integer attribute whose value is in [8, 256]}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 0, page_size = 64, kv_type = bf16

// -----

// expected-error @+1 {{attribute 'page_size' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 4096]}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 0, kv_type = bf16

// -----

// expected-error @+1 {{'latent_dim' must be a multiple of 8 (a 16-byte vector of 16-bit elements), got 500}}
mla.kv_cache_write @w latent_dim = 500, rope_dim = 64, page_size = 64, kv_type = bf16

// -----

// expected-error @+1 {{'rope_dim' must be a multiple of 8 (a 16-byte vector of 16-bit elements), got 60}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 60, page_size = 64, kv_type = bf16

// -----

// expected-error @+1 {{an f8E4M3 cache needs 'in_type' bf16 or f16 (the new tokens' type)}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, kv_type = f8E4M3

// -----

// expected-error @+1 {{'in_type' (f16) must equal 'kv_type' (bf16) for a 16-bit cache}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, in_type = f16, kv_type = bf16

// -----

// expected-error @+1 {{gfx90a has no fp8 conversion instructions: an f8E4M3 cache needs sm_80, sm_90a, gfx942 (FNUZ) or gfx950 (OCP)}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, arch = gfx90a, in_type = bf16, kv_type = f8E4M3

// -----

// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, launch = <entry = "mlagen_kv_cache_write", threads = 256, shared_bytes = 0>, kv_type = bf16
