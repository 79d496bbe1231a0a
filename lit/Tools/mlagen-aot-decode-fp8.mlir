// fp8 e4m3 cache decode (bf16 or fp8 q), compile-verified for AMD (no AMD
// GPU here):
// gfx942 (FNUZ) and gfx950 (OCP) convert with v_cvt_pk_f32_fp8, no
// scratch, no spills; sm_90a and sm_80 build through NVRTC. gfx90a is
// refused by name.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: rm -rf %t.nv && mlagen %s --arch=sm_90a,sm_80 -o %t.nv 2>&1 | FileCheck %s --check-prefix=NV
// RUN: not mlagen %s --arch=gfx90a -o %t.90a 2>&1 | FileCheck %s --check-prefix=GFX90A

// PROGRESS: building 6 kernels
// PROGRESS: kv=fp8e4m3
// PROGRESS: wrote {{.*}}manifest.json

// ISA-DAG: v_cvt_pk_f32_fp8
// ISA-DAG: v_mfma_f32_16x16x

// NOTES-COUNT-12: .private_segment_fixed_size: 0
// NOTES-NOT: .vgpr_spill_count: {{[1-9]}}

// NV: building 6 kernels
// NV: wrote {{.*}}manifest.json

// GFX90A: gfx90a has no fp8 conversion instructions

mla.decode @fp8_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @fp8_tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16
mla.decode @fp8_q_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, q_type = f8E4M3, kv_type = f8E4M3, out_type = bf16
