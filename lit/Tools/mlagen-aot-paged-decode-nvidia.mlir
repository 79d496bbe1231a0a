// Paged GQA decode compiled ahead of time for sm_90a: every head dim
// compiles (a head under 16 takes the CUDA-core kernel, the matrix-core
// body compiles unused), and the manifest gives the decode planner the
// blocks an SM that the launch bounds promise: 4 for fp8 blocks of up to 8
// rows at d <= 128, 2 for other matrix-core blocks, 0 (not stated) for the
// CUDA-core kernel.
// RUN: rm -rf %t && mlagen %s --arch=sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// PROGRESS: building 5 kernels
// PROGRESS: wrote {{.*}}manifest.json

// MANIFEST:      "blocks_per_sm": 2,
// MANIFEST:      "signature": "paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 {{.*}} kv=bf16
// MANIFEST:      "blocks_per_sm": 4,
// MANIFEST:      "signature": "paged_decode hq=32 hkv=8 v=128 q_len=1 page=64 {{.*}} kv=fp8e4m3
// MANIFEST:      "blocks_per_sm": 2,
// MANIFEST:      "signature": "paged_decode hq=32 hkv=8 v=128 q_len=4 page=64 {{.*}} kv=fp8e4m3
// MANIFEST:      "blocks_per_sm": 2,
// MANIFEST:      "signature": "paged_decode hq=16 hkv=8 v=256 q_len=1 page=64 {{.*}} kv=fp8e4m3
// MANIFEST:      "blocks_per_sm": 0,
// MANIFEST:      "signature": "paged_decode hq=8 hkv=1 v=8 q_len=8 page=1 {{.*}} kv=bf16

mla.paged_decode @d128 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d128_fp8 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d128_fp8_4_tokens q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 4, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d256_fp8 q_heads = 16, kv_heads = 8, head_dim = 256, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d8 q_heads = 8, kv_heads = 1, head_dim = 8, q_len = 8, page_size = 1, lse, q_type = bf16, kv_type = bf16, out_type = bf16
