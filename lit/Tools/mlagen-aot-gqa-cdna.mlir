// GQA prefill head dims 64, 80, 96, 128, 192, 256 (qk = v), with ALiBi and
// with a soft cap + sliding window, build for gfx942 and gfx950 through
// `mlagen` with no scratch and no spills; gfx950 runs head dim 80's last 16
// columns with the 16-deep MFMA.
// REQUIRES: clang-hip
// RUN: rm -rf %t && mlagen %s --arch=gfx942,gfx950 -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json
// RUN: for f in %t/*.hsaco; do llvm-readelf --notes $f; done | FileCheck %s --check-prefix=NOTES
// RUN: for f in $(grep -l gfx950 %t/*.hsaco); do llvm-objdump -d --mcpu=gfx950 $f; done | FileCheck %s --check-prefix=ISA950

// PROGRESS: building 18 kernels
// PROGRESS: wrote {{.*}}manifest.json

// MANIFEST-DAG: "signature": "prefill qk=80 v=80 hq=16 hkv=8 mask=causal window=-1,-1 softcap=0 alibi=1 {{.*}} arch=gfx950"
// MANIFEST-DAG: "signature": "prefill qk=256 v=256 hq=16 hkv=8 mask=causal window=4095,-1 softcap=50 alibi=0 {{.*}} arch=gfx942"

// NOTES-COUNT-18: .private_segment_fixed_size: 0
// NOTES-NOT: .vgpr_spill_count: {{[1-9]}}

// ISA950-DAG: v_mfma_f32_16x16x32_bf16
// ISA950-DAG: v_mfma_f32_16x16x16_bf16

mla.prefill @d64 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d80_alibi qk_head_dim = 80, v_head_dim = 80, q_heads = 16, kv_heads = 8, mask = causal, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d96 qk_head_dim = 96, v_head_dim = 96, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @llama3_8b qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @alibi_noncausal qk_head_dim = 128, v_head_dim = 128, q_heads = 32, kv_heads = 32, mask = none, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d192 qk_head_dim = 192, v_head_dim = 192, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d256 qk_head_dim = 256, v_head_dim = 256, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gemma2_9b qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 8, mask = causal, window = <left = 4095, right = -1>, soft_cap = 50.0, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @gemma2_alibi qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 8, mask = none, window = <left = 1024, right = 128>, soft_cap = 50.0, alibi, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
