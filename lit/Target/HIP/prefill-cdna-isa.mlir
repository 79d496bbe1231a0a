// The emitted source compiles offline for CDNA and runs on its matrix cores.
// REQUIRES: clang-hip
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=gfx942 --mla-prepare-emission | mlagen-translate --mla-to-hip -o %t.gfx942.hip
// RUN: clang++-22 -x hip --offload-arch=gfx942 --cuda-device-only --no-gpu-bundle-output -nogpulib -nogpuinc -O3 --ld-path=ld.lld %t.gfx942.hip -o %t.gfx942.hsaco
// RUN: llvm-objdump -d %t.gfx942.hsaco | FileCheck %s --check-prefix=GFX942
// RUN: llvm-readelf --notes %t.gfx942.hsaco | FileCheck %s --check-prefix=ENTRY
// gfx950 takes the 32-deep MFMA the target table assumes (mma_k = 32).
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=gfx950 --mla-prepare-emission | mlagen-translate --mla-to-hip -o %t.gfx950.hip
// RUN: clang++-22 -x hip --offload-arch=gfx950 --cuda-device-only --no-gpu-bundle-output -nogpulib -nogpuinc -O3 --ld-path=ld.lld %t.gfx950.hip -o %t.gfx950.hsaco
// RUN: llvm-objdump -d %t.gfx950.hsaco | FileCheck %s --check-prefix=GFX950

mla.prefill @mla_192x128 qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen

// GFX942: v_mfma_f32_16x16x16_bf16
// GFX950: v_mfma_f32_16x16x32_bf16
// ENTRY: .name: mlagen_prefill
