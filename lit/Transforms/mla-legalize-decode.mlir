// RUN: mlagen-opt %s --split-input-file --verify-diagnostics --mla-legalize | FileCheck %s

// A decode variant the template implements is left as written.
// CHECK-LABEL: mla.decode @supported
//  CHECK-SAME:   qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 2, page_size = 1, lse, batch_invariant, tile_k = 32, arch = gfx950, q_type = f16, kv_type = f16, out_type = f16{{$}}
mla.decode @supported qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 2, page_size = 1, lse, batch_invariant, tile_k = 32, arch = gfx950, q_type = f16, kv_type = f16, out_type = f16

// -----

// An fp8 e4m3 cache with bf16 q and out is supported (dequantised on load).
// CHECK-LABEL: mla.decode @fp8_cache
//  CHECK-SAME:   q_type = bf16, kv_type = f8E4M3, out_type = bf16{{$}}
mla.decode @fp8_cache qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// fp8 q rides the fp8 cache's conversion; out is bf16.
// CHECK-LABEL: mla.decode @fp8_q
//  CHECK-SAME:   q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16{{$}}
mla.decode @fp8_q qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'mla.decode' op an fp8 cache ('kv_type' f8E4M3) writes 'out_type' bf16, got f16}}
mla.decode @fp8_q_f16_out qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = f8E4M3, kv_type = f8E4M3, out_type = f16

// -----

// expected-error @+1 {{'mla.decode' op an fp8 cache ('kv_type' f8E4M3) needs 'q_type' bf16 or f8E4M3, got f16}}
mla.decode @fp8_cache_f16 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = f16, kv_type = f8E4M3, out_type = f16

// -----

// expected-error @+1 {{'mla.decode' op gfx90a has no fp8 conversion instructions: an fp8 cache ('kv_type' f8E4M3) needs sm_80, sm_90a, gfx942 (FNUZ) or gfx950 (OCP)}}
mla.decode @fp8_gfx90a qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// -----

// expected-error @+1 {{'kv_type' (f16) must equal 'q_type' (bf16) for decode}}
mla.decode @mixed_cache qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = f16, out_type = bf16

// -----

// expected-error @+1 {{'out_type' (f16) must equal 'q_type' (bf16): the decode kernel writes q's type}}
mla.decode @mixed_out qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = f16

// -----

// expected-error @+1 {{the decode template implements 'qk_head_dim' 576 and 'v_head_dim' 512 only (absorbed MLA), got 512 and 512}}
mla.decode @other_dims qk_head_dim = 512, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16

// -----

// Every unsupported variant of a module is reported, prefill and decode.
// expected-error @+1 {{gfx90a has no fp8 conversion instructions}}
mla.decode @first qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, arch = gfx90a, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @fine qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, q_type = bf16, kv_type = bf16, out_type = bf16
// expected-error @+1 {{fp8 prefill is not supported yet}}
mla.prefill @second qk_head_dim = 128, v_head_dim = 128, q_heads = 8, kv_heads = 8, mask = causal, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16, layout = varlen
