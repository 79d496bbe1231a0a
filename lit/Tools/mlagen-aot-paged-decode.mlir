// Paged GQA decode compiled ahead of time for CDNA at every head dim, bf16
// and fp8, with and without ALiBi: no scratch, no VGPR spills in either
// entry.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=SPILLS

// PROGRESS: building 26 kernels
// PROGRESS: wrote {{.*}}manifest.json

// NOTES-COUNT-52: .private_segment_fixed_size: 0
// SPILLS-NOT: .vgpr_spill_count: {{[1-9]}}

mla.paged_decode @d128 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d128_fp8 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d64 q_heads = 8, kv_heads = 1, head_dim = 64, q_len = 4, page_size = 16, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d256 q_heads = 16, kv_heads = 8, head_dim = 256, q_len = 4, page_size = 64, window = 256, soft_cap = 30.0, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d80 q_heads = 16, kv_heads = 4, head_dim = 80, q_len = 4, page_size = 16, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d96 q_heads = 16, kv_heads = 4, head_dim = 96, q_len = 1, page_size = 16, lse, q_type = f16, kv_type = f16, out_type = f16
mla.paged_decode @d192 q_heads = 16, kv_heads = 4, head_dim = 192, q_len = 4, page_size = 16, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d32 q_heads = 8, kv_heads = 2, head_dim = 32, q_len = 4, page_size = 16, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d8 q_heads = 8, kv_heads = 1, head_dim = 8, q_len = 8, page_size = 1, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @mpt_alibi q_heads = 32, kv_heads = 32, head_dim = 128, q_len = 1, page_size = 16, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d64_alibi_fp8 q_heads = 8, kv_heads = 1, head_dim = 64, q_len = 4, page_size = 64, window = 256, alibi, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.paged_decode @d128_tile32 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, key_tile = 32, q_type = bf16, kv_type = bf16, out_type = bf16
mla.paged_decode @d128_fp8_tile128 q_heads = 32, kv_heads = 8, head_dim = 128, q_len = 1, page_size = 16, lse, key_tile = 128, q_type = bf16, kv_type = f8E4M3, out_type = bf16
