// Decode for CDNA, compile-verified (no AMD GPU here): gfx942 and gfx950
// with clang-22, gfx90a with hiprtc; MFMA, no scratch, both entries.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950,gfx90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES

// PROGRESS: building 6 kernels
// PROGRESS: wrote {{.*}}manifest.json

// ISA: v_mfma_f32_16x16x

// NOTES-COUNT-12: .private_segment_fixed_size: 0
// NOTES-NOT: .vgpr_spill_count: {{[1-9]}}

// TP8 pads 8 heads to 16 on AMD.
mla.decode @tp16 qk_head_dim = 576, v_head_dim = 512, q_heads = 8, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @tp1_mtp qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 2, page_size = 1, lse, q_type = bf16, kv_type = bf16, out_type = bf16
