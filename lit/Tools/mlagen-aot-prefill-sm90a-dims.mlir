// The sm_90a prefill's tilings compiled ahead of time through NVRTC:
// head dim 64 on three consumer warpgroups (192 rows, 512 threads); head
// dims that end inside a 64-column slab (80, 112) on the wgmma kernel;
// d256 with a window and soft cap on 80-key tiles in 230472 of its 232448
// bytes; and head dim 48, below a slab, on mma.sync (256 threads), whose
// source carries the wgmma code unused.
// RUN: rm -rf %t && mlagen %s --arch=sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// PROGRESS: building 5 kernels
// PROGRESS: wrote {{.*}}manifest.json

// MANIFEST:      "shared_bytes": 91208,
// MANIFEST-NEXT: "signature": "prefill qk=64 v=64 hq=32 hkv=8
// MANIFEST:      "threads_per_block": 512,
// MANIFEST-NEXT: "tile_k": 128,
// MANIFEST-NEXT: "tile_q": 192,
// MANIFEST:      "signature": "prefill qk=80 v=80
// MANIFEST:      "threads_per_block": 384,
// MANIFEST-NEXT: "tile_k": 128,
// MANIFEST:      "signature": "prefill qk=112 v=112
// MANIFEST:      "threads_per_block": 384,
// MANIFEST:      "shared_bytes": 230472,
// MANIFEST-NEXT: "signature": "prefill qk=256 v=256
// MANIFEST:      "threads_per_block": 384,
// MANIFEST-NEXT: "tile_k": 80,
// MANIFEST:      "signature": "prefill qk=48 v=48
// MANIFEST:      "threads_per_block": 256,

mla.prefill @d64 qk_head_dim = 64, v_head_dim = 64, q_heads = 32, kv_heads = 8, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d80 qk_head_dim = 80, v_head_dim = 80, q_heads = 32, kv_heads = 32, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d112 qk_head_dim = 112, v_head_dim = 112, q_heads = 16, kv_heads = 8, mask = none, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d256 qk_head_dim = 256, v_head_dim = 256, q_heads = 16, kv_heads = 8, mask = causal, window = <left = 1023, right = 0>, soft_cap = 50.0, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
mla.prefill @d48 qk_head_dim = 48, v_head_dim = 48, q_heads = 16, kv_heads = 16, mask = causal, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
