// `mlagen cache list|verify|prune` on a cache the AOT build filled (NVRTC),
// and the manifest it writes for the runtime's bundle loader.
// RUN: rm -rf %t && mkdir -p %t
// RUN: env MLAGEN_CACHE_DIR=%t/cache mlagen %s --arch=sm_90a -o %t/bundle 2>&1 | FileCheck %s --check-prefix=BUILD
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/bundle/manifest.json
// RUN: mlagen cache list --dir=%t/cache | FileCheck %s --check-prefix=LIST
// RUN: env MLAGEN_CACHE_DIR=%t/cache mlagen cache verify | FileCheck %s --check-prefix=VERIFY
// Damage the entry: verify fails and names it, --remove removes it.
// RUN: for f in %t/cache/v6/*.entry; do printf 'x' >> $f; done
// RUN: not mlagen cache verify --dir=%t/cache | FileCheck %s --check-prefix=CORRUPT
// RUN: mlagen cache verify --remove --dir=%t/cache | FileCheck %s --check-prefix=REMOVE
// RUN: mlagen cache list --dir=%t/cache | FileCheck %s --check-prefix=EMPTY
// Rebuild, then prune to nothing.
// RUN: env MLAGEN_CACHE_DIR=%t/cache mlagen %s --arch=sm_90a -o %t/bundle2 2>&1 | FileCheck %s --check-prefix=BUILD
// RUN: mlagen cache prune --max-size=0 --dir=%t/cache | FileCheck %s --check-prefix=PRUNE
// RUN: not mlagen cache prune --max-size=lots --dir=%t/cache 2>&1 | FileCheck %s --check-prefix=BADSIZE
// RUN: not mlagen cache frobnicate --dir=%t/cache 2>&1 | FileCheck %s --check-prefix=BADACTION

// BUILD: wrote {{.*}}manifest.json

// MANIFEST: "format": 6
// MANIFEST: "compiler": "nvrtc
// MANIFEST: "generator": "mlagen-mlir pipeline=
// MANIFEST: "xxh3_128": "{{([0-9a-f]{32})}}"
// MANIFEST: "producer": "mlagen

// LIST: {{^([0-9a-f]{32})}}  sm_90a  {{[0-9]+}}  {{[0-9-]+ [0-9:]+}}  prefill qk=192 v=128 hq=16 hkv=16 mask=causal {{.*}} arch=sm_90a
// LIST: 1 entries, {{[0-9]+}} bytes, 0 corrupt, {{.*}}/cache/v6

// VERIFY: 1 entries, {{[0-9]+}} bytes, 0 corrupt

// CORRUPT: corrupt: {{.*}}.entry: size mismatch
// CORRUPT: 1 entries, {{[0-9]+}} bytes, 1 corrupt

// REMOVE: removed {{.*}}.entry
// REMOVE: removed 1 entries

// EMPTY: 0 entries, 0 bytes, 0 corrupt

// PRUNE: removed 1 entries ({{[0-9]+}} bytes) and {{[0-9]+}} stale files; 0 bytes of entries left

// BADSIZE: mlagen: error: InvalidArgument: --max-size=lots is not a byte count
// BADACTION: mlagen: error: InvalidArgument: unknown cache action 'frobnicate'

mla.prefill @mla_causal qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
