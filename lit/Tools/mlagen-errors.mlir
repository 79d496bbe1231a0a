// Bad input to `mlagen` gets one clear line and a failing exit, no crash.
// RUN: not mlagen %s --arch=gfx1234 -o %t 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not mlagen --variant="prefill qk=100 v=128 hq=16 hkv=16 mask=causal window=-1,-1 softcap=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen tile_q=0 arch=sm_90a" -o %t 2>&1 | FileCheck %s --check-prefix=SIG
// RUN: not mlagen %s.missing -o %t 2>&1 | FileCheck %s --check-prefix=FILE

// ARCH: mlagen: error: InvalidSignature: unknown arch 'gfx1234'
// SIG: mlagen: error: {{.*}}qk
// FILE: mlagen: error: {{.*}}missing

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
