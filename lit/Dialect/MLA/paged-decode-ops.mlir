// RUN: mlagen-opt %s | FileCheck %s
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// Llama-3-8B decode: 32 q heads over 8 kv heads of 128, 16-key pages.
// CHECK-LABEL: mla.paged_decode @llama3_8b
//  CHECK-SAME:   q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16{{$}}
mla.paged_decode @llama3_8b q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16
// A window, a soft cap, four tokens and an fp8 cache.
// CHECK-LABEL: mla.paged_decode @gemma_like
//  CHECK-SAME:   window = 256, soft_cap = 3.000000e+01, q_type = bf16, kv_type = f8E4M3, out_type = bf16{{$}}
mla.paged_decode @gemma_like q_heads = 16, kv_heads = 4, head_dim = 256, q_len = 4, page_size = 64, window = 256, soft_cap = 30.0, q_type = bf16, kv_type = f8E4M3, out_type = bf16
// ALiBi (MPT-7B's shape: 32 q heads, 32 kv heads); the flag prints after the cap.
// CHECK-LABEL: mla.paged_decode @mpt_7b
//  CHECK-SAME:   page_size = 16, soft_cap = 8.000000e+00, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16{{$}}
mla.paged_decode @mpt_7b q_heads = 32, kv_heads = 32, head_dim = 128, q_len = 1, page_size = 16, soft_cap = 8.0, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16
