// AOT builds for AMD through `mlagen`: the code objects use MFMA, spill
// nothing (no scratch) and the manifest names every kernel.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in $(grep -l gfx942 %t/*.hsaco); do llvm-objdump -d --mcpu=gfx942 $f; done | FileCheck %s --check-prefix=ISA942
// RUN: for f in $(grep -l gfx950 %t/*.hsaco); do llvm-objdump -d --mcpu=gfx950 $f; done | FileCheck %s --check-prefix=ISA950

// PROGRESS: building 4 kernels
// PROGRESS: [4/4]
// PROGRESS: wrote {{.*}}manifest.json

// MANIFEST-DAG: "signature": "prefill qk=192 v=128 hq=16 hkv=16 mask=causal {{.*}} arch=gfx942"
// MANIFEST-DAG: "signature": "prefill qk=192 v=128 hq=32 hkv=8 mask=none {{.*}} arch=gfx942"
// MANIFEST-DAG: "signature": "prefill qk=192 v=128 hq=16 hkv=16 mask=causal {{.*}} arch=gfx950"
// MANIFEST-DAG: "signature": "prefill qk=192 v=128 hq=32 hkv=8 mask=none {{.*}} arch=gfx950"

// NOTES-COUNT-4: .private_segment_fixed_size: 0
// NOTES-NOT: .vgpr_spill_count: {{[1-9]}}

// ISA942: mlagen_prefill
// ISA942: v_mfma_f32_16x16x16_bf16
// ISA950: mlagen_prefill
// ISA950: v_mfma_f32_16x16x32_bf16

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @context_chunk_gqa qk_head_dim = 192, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = none, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
