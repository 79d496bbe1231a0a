// The sm_90a cubin's machine code uses the tensor cores, and copies K and V
// tiles with bulk tensor copies (TMA) when the host passes tensor maps.
// REQUIRES: cuobjdump
// RUN: rm -rf %t && mlagen %s --arch=sm_90a -o %t
// RUN: for f in %t/*.cubin; do cuobjdump -sass $f; done | FileCheck %s
// CHECK: Function : mlagen_prefill
// CHECK-DAG: UTMALDG.3D
// CHECK-DAG: HGMMA.64x{{[0-9]+}}x16.F32.BF16

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
