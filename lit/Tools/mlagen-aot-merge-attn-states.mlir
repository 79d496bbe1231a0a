// merge_attn_states compiled ahead of time for every target: sm_90a with
// NVRTC, gfx942 and gfx950 with clang-22, gfx90a with hiprtc; no scratch,
// 16-byte global loads and stores on CDNA.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=sm_90a,gfx942,gfx950,gfx90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES

// PROGRESS: building 8 kernels
// PROGRESS: wrote {{.*}}manifest.json

// ISA: global_load_dwordx4
// ISA: global_store_dwordx4

// NOTES-COUNT-6: .private_segment_fixed_size: 0
// NOTES-NOT: .vgpr_spill_count: {{[1-9]}}

mla.merge_attn_states @mla_prefill_tp8 head_dim = 128, heads = 16, out_lse, out_type = bf16
mla.merge_attn_states @fp16_no_lse head_dim = 512, heads = 128, out_type = f16
