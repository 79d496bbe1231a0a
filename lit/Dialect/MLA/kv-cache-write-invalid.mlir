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

// expected-error @+1 {{'kv_type' f8E4M3 is not supported yet (it will take a scale)}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, kv_type = f8E4M3

// -----

// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
mla.kv_cache_write @w latent_dim = 512, rope_dim = 64, page_size = 64, launch = <entry = "mlagen_kv_cache_write", threads = 256, shared_bytes = 0>, kv_type = bf16
