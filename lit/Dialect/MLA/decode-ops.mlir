// RUN: mlagen-opt %s | FileCheck %s
// The generic form reads back to the same ops.
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// DeepSeek-V3 absorbed MLA decode, TP8: 16 heads, one token, 64-key pages.
// CHECK-LABEL: mla.decode @deepseek_v3_tp8
//  CHECK-SAME:   qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1,
//  CHECK-SAME:   page_size = 64, lse, arch = sm_90a,
//  CHECK-SAME:   q_type = bf16, kv_type = bf16, out_type = bf16{{$}}
mla.decode @deepseek_v3_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16

// TP1, speculative decoding (4 tokens), one key per page, no LSE, fp16,
// batch-invariant, a pinned tile_k, no arch yet.
// CHECK-LABEL: mla.decode @tp1_mtp
//  CHECK-SAME:   q_heads = 128, q_len = 4, page_size = 1, batch_invariant, tile_k = 32,
//  CHECK-SAME:   q_type = f16, kv_type = f16, out_type = f16{{$}}
mla.decode @tp1_mtp qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 4, page_size = 1, batch_invariant, tile_k = 32, q_type = f16, kv_type = f16, out_type = f16

// The extremes the verifier takes: one head, 8 tokens, 256-key pages, V as
// wide as K, an fp8 cache (valid IR; mla-legalize refuses the dims).
// CHECK-LABEL: mla.decode @extremes
//  CHECK-SAME:   qk_head_dim = 512, v_head_dim = 512, q_heads = 1, q_len = 8, page_size = 256,
//  CHECK-SAME:   kv_type = f8E4M3
mla.decode @extremes qk_head_dim = 512, v_head_dim = 512, q_heads = 1, q_len = 8, page_size = 256, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// A variant as mla-prepare-emission leaves it: gfx942 padded 8 heads to 16.
// CHECK-LABEL: mla.decode @prepared
//  CHECK-SAME:   q_heads = 8,
//  CHECK-SAME:   tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>,
//  CHECK-SAME:   launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 39808>,
//  CHECK-SAME:   reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>,
mla.decode @prepared qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 1, page_size = 64, lse, arch = gfx942, tiling = <heads = 16, heads_per_block = 16, tile_k = 32, warps = 4, wave_size = 64, stages = 1>, launch = <entry = "mlagen_decode", threads = 256, shared_bytes = 39808>, reduce_launch = <entry = "mlagen_decode_reduce", threads = 256, shared_bytes = 0>, q_type = bf16, kv_type = bf16, out_type = bf16

// Prefill and decode variants share a module.
// CHECK-LABEL: mla.prefill @beside
mla.prefill @beside qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
