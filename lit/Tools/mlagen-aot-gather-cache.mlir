// The GQA KV-cache gather compiled ahead of time for every target: sm_90a
// and sm_80 with NVRTC, gfx942 and gfx950 with clang-22, gfx90a with
// hiprtc; no scratch, 16-byte loads and stores on CDNA.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=sm_90a,sm_80,gfx942,gfx950,gfx90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA

// PROGRESS: building 15 kernels
// PROGRESS: gather_cache hkv=8 v=128 page=16 kv=bf16
// PROGRESS: wrote {{.*}}manifest.json

// NOTES-COUNT-9: .private_segment_fixed_size: 0
// ISA: global_load_dwordx4
// ISA: global_store_dwordx4

mla.gather_cache @llama3_8b kv_heads = 8, head_dim = 128, page_size = 16, kv_type = bf16
mla.gather_cache @gqa_d64_fp16 kv_heads = 2, head_dim = 64, page_size = 64, kv_type = f16
mla.gather_cache @d80_page1 kv_heads = 4, head_dim = 80, page_size = 1, kv_type = bf16
