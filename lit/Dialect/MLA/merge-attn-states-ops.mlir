// RUN: mlagen-opt %s | FileCheck %s
// The generic form reads back to the same ops.
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// MLA prefill's v head dim, TP8: merges a context chunk with the new tokens.
// CHECK-LABEL: mla.merge_attn_states @context_merge
//  CHECK-SAME:   head_dim = 128, heads = 16, out_lse, arch = sm_90a, out_type = bf16{{$}}
mla.merge_attn_states @context_merge head_dim = 128, heads = 16, out_lse, arch = sm_90a, out_type = bf16

// No LSE out, fp16, no arch yet; the extremes the verifier takes.
// CHECK-LABEL: mla.merge_attn_states @small
//  CHECK-SAME:   head_dim = 8, heads = 1, out_type = f16{{$}}
mla.merge_attn_states @small head_dim = 8, heads = 1, out_type = f16
// CHECK-LABEL: mla.merge_attn_states @large
//  CHECK-SAME:   head_dim = 1024, heads = 65535, arch = gfx942,
//  CHECK-SAME:   launch = <entry = "mlagen_merge_attn_states", threads = 256, shared_bytes = 0>, out_type = bf16{{$}}
mla.merge_attn_states @large head_dim = 1024, heads = 65535, arch = gfx942, launch = <entry = "mlagen_merge_attn_states", threads = 256, shared_bytes = 0>, out_type = bf16
