// AOT build of decode variants through `mlagen`: one code object holds both
// entries, and the manifest says how to launch the second.
// RUN: rm -rf %t && mlagen %s --arch=sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=PROGRESS
// RUN: for f in %t/*.cubin; do llvm-readelf -s $f; done | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// PROGRESS: building 2 kernels
// PROGRESS: decode qk=576 v=512 hq={{16|128}} q_len=1 page=64 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 batch_invariant=0 tile_k=0 arch=sm_90a
// PROGRESS: wrote {{.*}}manifest.json

// ELF-DAG: mlagen_decode
// ELF-DAG: mlagen_decode_reduce

// In file order: hq=16 (16 rows a block, the wgmma kernel's 8 warps: the
// reduce takes 2 rows a block; chunk pairs merge inside a cluster), then
// hq=128 (64 rows, the two-consumer wgmma kernel's 12 warps: 3 rows; no
// cluster merging).
// MANIFEST: "cluster_parts": 2,
// MANIFEST: "entry": "mlagen_decode",
// MANIFEST: "extra_entries": [
// MANIFEST: "name": "mlagen_decode_reduce",
// MANIFEST: "rows_per_block": 2,
// MANIFEST: "padded_heads": 16,
// MANIFEST: "shared_bytes": 202480,
// MANIFEST: "tile_k": 64,
// MANIFEST: "cluster_parts": 1,
// MANIFEST: "entry": "mlagen_decode",
// MANIFEST: "rows_per_block": 3,
// MANIFEST: "padded_heads": 128,
// MANIFEST: "shared_bytes": 232120,
// MANIFEST: "tile_k": 64,

mla.decode @tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = bf16, out_type = bf16
mla.decode @tp1 qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = bf16, out_type = bf16
