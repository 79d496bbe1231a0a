// The GQA KV-cache gather out of fp8 e4m3 caches, compile-verified for AMD
// (no AMD GPU here): gfx942 (FNUZ) and gfx950 (OCP) decode with
// v_cvt_pk_f32_fp8, 8-byte cache loads, 16-byte stores, no scratch;
// sm_90a (cvt.rn.f16x2.e4m3x2) and sm_80 (the software decode) build
// through NVRTC; gfx90a is refused by name.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-objdump -d $f; done | FileCheck %s --check-prefix=ISA
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: rm -rf %t.nv && mlagen %s --arch=sm_90a,sm_80 -o %t.nv 2>&1 | FileCheck %s --check-prefix=NV
// RUN: not mlagen %s --arch=gfx90a -o %t.90a 2>&1 | FileCheck %s --check-prefix=GFX90A

// PROGRESS: building 4 kernels
// PROGRESS: kv=fp8e4m3 out=bf16
// PROGRESS: wrote {{.*}}manifest.json

// ISA: global_load_dwordx2
// ISA: v_cvt_pk_f32_fp8
// ISA: global_store_dwordx4

// NOTES-COUNT-4: .private_segment_fixed_size: 0

// NV: building 4 kernels
// NV: wrote {{.*}}manifest.json

// GFX90A: gfx90a has no fp8 conversion instructions

mla.gather_cache @llama3_8b_fp8 kv_heads = 8, head_dim = 128, page_size = 16, kv_type = f8E4M3, out_type = bf16
mla.gather_cache @d256_fp16_out kv_heads = 4, head_dim = 256, page_size = 64, kv_type = f8E4M3, out_type = f16
