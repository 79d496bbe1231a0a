// RUN: mlagen-opt %s | FileCheck %s
// RUN: mlagen-opt %s --mlir-print-op-generic | mlagen-opt | FileCheck %s

// DeepSeek-V3: 512 latent + 64 rope, 64-key pages.
// CHECK-LABEL: mla.kv_cache_write @deepseek_v3
//  CHECK-SAME:   latent_dim = 512, rope_dim = 64, page_size = 64, arch = sm_90a, kv_type = bf16{{$}}
mla.kv_cache_write @deepseek_v3 latent_dim = 512, rope_dim = 64, page_size = 64, arch = sm_90a, kv_type = bf16
// CHECK-LABEL: mla.kv_cache_write @page1
//  CHECK-SAME:   latent_dim = 8, rope_dim = 256, page_size = 1, kv_type = f16{{$}}
mla.kv_cache_write @page1 latent_dim = 8, rope_dim = 256, page_size = 1, kv_type = f16
// An fp8 cache names its inputs' type.
// CHECK-LABEL: mla.kv_cache_write @fp8
//  CHECK-SAME:   latent_dim = 512, rope_dim = 64, page_size = 64, in_type = bf16, kv_type = f8E4M3{{$}}
mla.kv_cache_write @fp8 latent_dim = 512, rope_dim = 64, page_size = 64, in_type = bf16, kv_type = f8E4M3
