// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-legalize | FileCheck %s

// A causal variant sees no key right of the diagonal: its right window is 0.
// CHECK-LABEL: mla.prefill @causal_right_window
//  CHECK-SAME:   mask = causal, window = <left = 1024, right = 0>,
mla.prefill @causal_right_window qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, window = <left = 1024, right = 128>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// CHECK-LABEL: mla.prefill @causal_right_only
//  CHECK-SAME:   mask = causal, window = <left = -1, right = 0>,
mla.prefill @causal_right_only qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, window = <left = -1, right = 7>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// No right window: nothing to bound.
// CHECK-LABEL: mla.prefill @causal_left_only
//  CHECK-SAME:   mask = causal, window = <left = 256, right = -1>,
mla.prefill @causal_left_only qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, window = <left = 256, right = -1>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// Without a causal mask the right window stands.
// CHECK-LABEL: mla.prefill @bidirectional_window
//  CHECK-SAME:   mask = none, window = <left = 64, right = 64>,
mla.prefill @bidirectional_window qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = 64, right = 64>, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// An unbounded window and a zero soft cap are no window and no cap.
// CHECK-LABEL: mla.prefill @unbounded_window_zero_cap
//  CHECK-SAME:   mask = none, lse, q_type = bf16,
mla.prefill @unbounded_window_zero_cap qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = none, window = <left = -1, right = -1>, soft_cap = 0.0, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// CHECK-LABEL: mla.prefill @negative_zero_cap
//  CHECK-SAME:   mask = causal, q_type = f16,
mla.prefill @negative_zero_cap qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, soft_cap = -0.0, q_type = f16, kv_type = f16, out_type = f16, layout = varlen

// CHECK-LABEL: mla.prefill @soft_cap_kept
//  CHECK-SAME:   mask = causal, soft_cap = 5.000000e+01, q_type
mla.prefill @soft_cap_kept qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, soft_cap = 50.0, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// Everything else is left as written.
// CHECK-LABEL: mla.prefill @untouched
//  CHECK-SAME:   qk_head_dim = 192, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = causal, lse, tile_q = 64, arch = gfx950, q_type = f16, kv_type = f16, out_type = f16, layout = varlen{{$}}
mla.prefill @untouched qk_head_dim = 192, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = causal, lse, tile_q = 64, arch = gfx950, q_type = f16, kv_type = f16, out_type = f16, layout = varlen

// -----

// expected-error @+1 {{'mla.prefill' op fp8 prefill is not supported yet ('q_type' is f8E4M3)}}
mla.prefill @fp8 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{fp8 prefill is not supported yet ('kv_type' is f8E4M3)}}
mla.prefill @fp8_kv qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = f8E4M3, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'kv_type' (f16) must equal 'q_type' (bf16) for prefill}}
mla.prefill @mixed_kv qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = f16, out_type = bf16, layout = varlen

// -----

// expected-error @+1 {{'out_type' (f16) must equal 'q_type' (bf16): other output types are not supported yet}}
mla.prefill @mixed_out qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = f16, layout = varlen

// -----

// expected-error @+1 {{'layout' paged is not supported for prefill yet, only varlen}}
mla.prefill @paged qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = paged

// -----

// Every unsupported variant of a module is reported, not only the first.
// expected-error @+1 {{fp8 prefill is not supported yet}}
mla.prefill @first qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = varlen
mla.prefill @fine qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
// expected-error @+1 {{'layout' paged is not supported for prefill yet}}
mla.prefill @second qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = paged
