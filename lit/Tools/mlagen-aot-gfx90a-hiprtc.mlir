// gfx90a through ROCm 5.2's hiprtc, in process: MFMA, no scratch. The same
// hiprtc aborts its process when asked for gfx942, so mlagen refuses that
// with a clear error and exits normally.
// RUN: rm -rf %t && mlagen %s --arch=gfx90a --compiler=hiprtc -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in %t/*.hsaco; do llvm-objdump -d --mcpu=gfx90a $f; done | FileCheck %s --check-prefix=ISA
// RUN: not mlagen %s --arch=gfx942 --compiler=hiprtc -o %t.942 2>&1 | FileCheck %s --check-prefix=REFUSE

// PROGRESS: building 2 kernels
// PROGRESS: wrote {{.*}}manifest.json
// NOTES-COUNT-2: .private_segment_fixed_size: 0
// ISA: v_mfma_f32_16x16x16bf16_1k
// REFUSE: mlagen: error: Unsupported: {{.*}}gfx942

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @mha_gqa qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = none, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
