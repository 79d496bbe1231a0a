// RUN: mlagen-opt %s | FileCheck %s
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// Llama-3-8B: 8 kv heads of 128, vLLM's 16-key pages.
// CHECK-LABEL: mla.gather_cache @llama3_8b
//  CHECK-SAME:   kv_heads = 8, head_dim = 128, page_size = 16, arch = sm_90a, kv_type = bf16{{$}}
mla.gather_cache @llama3_8b kv_heads = 8, head_dim = 128, page_size = 16, arch = sm_90a, kv_type = bf16
// The bounds: one head of 8, 256 heads of 512, pages of 1 and 4096.
// CHECK-LABEL: mla.gather_cache @smallest
//  CHECK-SAME:   kv_heads = 1, head_dim = 8, page_size = 1, kv_type = f16{{$}}
mla.gather_cache @smallest kv_heads = 1, head_dim = 8, page_size = 1, kv_type = f16
// CHECK-LABEL: mla.gather_cache @largest
//  CHECK-SAME:   kv_heads = 256, head_dim = 512, page_size = 4096, arch = gfx90a, kv_type = bf16{{$}}
mla.gather_cache @largest kv_heads = 256, head_dim = 512, page_size = 4096, arch = gfx90a, kv_type = bf16
// An fp8 cache names its outputs' type.
// CHECK-LABEL: mla.gather_cache @fp8
//  CHECK-SAME:   kv_heads = 8, head_dim = 128, page_size = 64, kv_type = f8E4M3, out_type = f16{{$}}
mla.gather_cache @fp8 kv_heads = 8, head_dim = 128, page_size = 64, kv_type = f8E4M3, out_type = f16
// A prepared variant.
// CHECK-LABEL: mla.gather_cache @prepared
//  CHECK-SAME:   arch = gfx942, launch = <entry = "mlagen_gather_cache", threads = 256, shared_bytes = 0>, kv_type = f8E4M3, out_type = bf16{{$}}
mla.gather_cache @prepared kv_heads = 2, head_dim = 64, page_size = 16, arch = gfx942, launch = <entry = "mlagen_gather_cache", threads = 256, shared_bytes = 0>, kv_type = f8E4M3, out_type = bf16
