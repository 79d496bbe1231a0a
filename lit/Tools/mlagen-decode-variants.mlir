// Decode variants reach `mlagen` as signature text and as mla.decode ops; a
// variant's faults come back as one line naming the field and the rule.
// RUN: mlagen --print-source --variant="decode qk=576 v=512 hq=8 q_len=2 page=16 arch=gfx942" | FileCheck %s --check-prefix=TEXT
// RUN: mlagen %s --print-source --arch=sm_90a,gfx950 | FileCheck %s --check-prefix=FILE
// RUN: not mlagen --variant="decode qk=576 v=512 hq=12 q_len=1 page=64 arch=gfx942" -o %t 2>&1 | FileCheck %s --check-prefix=PAD
// RUN: not mlagen --variant="decode qk=576 v=512 hq=16 hkv=1 q_len=1 page=64 arch=sm_90a" -o %t 2>&1 | FileCheck %s --check-prefix=FIELD
// RUN: not mlagen --variant="decode qk=576 v=512 hq=16 q_len=1 page=48 arch=sm_90a" -o %t 2>&1 | FileCheck %s --check-prefix=PAGE
// RUN: not mlagen --variant="decode qk=576 v=512 hq=16 q_len=1 page=64 kv=fp8e4m3 arch=gfx90a" -o %t 2>&1 | FileCheck %s --check-prefix=FP8

// TEXT:      // decode qk=576 v=512 hq=8 q_len=2 page=16 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 batch_invariant=0 tile_k=0 arch=gfx942
// TEXT:      #define MLAGEN_TARGET_CDNA 1
// TEXT:      constexpr int kNumHeads = 16;
// TEXT-NEXT: constexpr int kNumQHeads = 8;
// TEXT-NEXT: constexpr int kQLen = 2;
// TEXT-NEXT: constexpr int kPageSize = 16;
// Rows count padded heads: 2 tokens x 16 fill a 32-row block.
// TEXT:      constexpr int kHeadsPerBlock = 32;
// TEXT:      mlagen_decode_reduce(mlagen_decode_params p)

// A variant with no arch gives one kernel per --arch, in file order.
// FILE:      // decode qk=576 v=512 hq=128 q_len=4 page=1 mask=causal lse=0 q=fp16 kv=fp16 out=fp16 batch_invariant=1 tile_k=32 arch=sm_90a
// FILE:      constexpr int kTileK = 32;
// FILE:      // decode qk=576 v=512 hq=128 q_len=4 page=1 mask=causal lse=0 q=fp16 kv=fp16 out=fp16 batch_invariant=1 tile_k=32 arch=gfx950
// FILE:      // prefill qk=192 v=128 hq=16 hkv=16 mask=causal
// FILE-SAME: arch=sm_90a

// PAD: mlagen: error: Unsupported: decode {{.*}} arch=gfx942: 'mla.decode' op 'q_heads' (12) cannot be padded on gfx942: decode there pads q heads to 16, so the count must divide 16 or be a multiple of it
// FIELD: mlagen: error: InvalidSignature: signature field 'hkv' is not a decode field
// PAGE: mlagen: error: InvalidSignature: decode {{.*}}: page_size must be a power of two in [1, 256] (got 48)
// FP8: mlagen: error: Unsupported: decode {{.*}}: 'mla.decode' op gfx90a has no fp8 conversion instructions: an fp8 cache ('kv_type' f8E4M3) needs sm_80, sm_90a, gfx942 (FNUZ) or gfx950 (OCP)

mla.decode @tp1_mtp qk_head_dim = 576, v_head_dim = 512, q_heads = 128, q_len = 4, page_size = 1, batch_invariant, tile_k = 32, q_type = f16, kv_type = f16, out_type = f16
mla.prefill @prefill qk_head_dim = 192, v_head_dim = 128, q_heads = 16, kv_heads = 16, mask = causal, lse, arch = sm_90a, q_type = bf16, kv_type = bf16, out_type = bf16, layout = varlen
