// RUN: mlagen-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint: 32-bit integer attribute whose value is in [8, 1024]}}
mla.merge_attn_states @m head_dim = 4, heads = 16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'head_dim' failed to satisfy constraint}}
mla.merge_attn_states @m head_dim = 1032, heads = 16, out_type = bf16

// -----

// expected-error @+1 {{attribute 'heads' failed to satisfy constraint: 32-bit integer attribute whose value is in [1, 65535]}}
mla.merge_attn_states @m head_dim = 128, heads = 0, out_type = bf16

// -----

// expected-error @+1 {{'head_dim' must be a multiple of 8 (a 16-byte vector of 16-bit elements), got 100}}
mla.merge_attn_states @m head_dim = 100, heads = 16, out_type = bf16

// -----

// expected-error @+1 {{'out_type' must be bf16 or f16, got f8E4M3}}
mla.merge_attn_states @m head_dim = 128, heads = 16, out_type = f8E4M3

// -----

// expected-error @+1 {{'launch' requires 'arch': a launch is prepared for a target}}
mla.merge_attn_states @m head_dim = 128, heads = 16, launch = <entry = "mlagen_merge_attn_states", threads = 256, shared_bytes = 0>, out_type = bf16

