// An fp8 e4m3 cache (bf16 q and out), through the pipeline to HIP source:
// kCacheDType 1. sm_90a at 16 rows multiplies e4m3 (12 warps, three raw
// stages; the consumers split q into hi + lo), at 32 rows takes the wgmma
// kernel that widens to fp16 (8 warps, two fp16 stages filled through
// registers by the producer warpgroup), at 64 the two-consumer kernel whose
// producer widens raw halves in place (12 warps, two fp16 stages); sm_80
// keeps one 16-bit tile (the fp8 tiles stream through registers).
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=sm_90a --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=SM90A
// RUN: sed 's/q_heads = 16,/q_heads = 32,/' %s | mlagen-opt --mla-legalize --mla-select-tiling=arch=sm_90a --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=WIDE
// RUN: sed 's/q_heads = 16,/q_heads = 128,/' %s | mlagen-opt --mla-legalize --mla-select-tiling=arch=sm_90a --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=ROWS64
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=sm_80 --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=SM80
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=gfx942 --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=GFX942
// RUN: mlagen-opt %s --mla-legalize --mla-select-tiling=arch=gfx950 --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=GFX950
// RUN: not mlagen-opt %s --mla-legalize --mla-select-tiling=arch=gfx90a --mla-prepare-emission 2>&1 | FileCheck %s --check-prefix=GFX90A

mla.decode @fp8_tp8 qk_head_dim = 576, v_head_dim = 512, q_heads = 16, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3, out_type = bf16

// SM90A:      #define MLAGEN_ARCH_SM90A 1
// SM90A:      constexpr bool kInputBF16 = true;
// SM90A-NEXT: constexpr int kCacheDType = 1;
// SM90A-NEXT: constexpr bool kQueryFP8 = false;
// SM90A:      constexpr int kNumWarps = 12;
// SM90A:      constexpr int kStages = 3;
// Q's hi and lo slabs and a float a row more than fp8 q's kernel; the
// tiles bypass L1 (cp.async), so chunk pairs merge inside a cluster.
// SM90A-NEXT: constexpr int kSharedBytes = 182464;
// SM90A-NEXT: constexpr int kHeadsPerBlock = 16;
// SM90A-NEXT: constexpr int kClusterParts = 2;
// SM90A:      float kv_scale;
// SM90A:      constexpr bool kSplitQuery = kFP8Operands && !kQueryFP8;
// SM90A:      sm90::split_fp8_pair(a * up, b * up, hi[w], lo[w]);

// WIDE:       constexpr int kNumWarps = 8;
// WIDE:       constexpr int kStages = 2;
// The producer converts the tiles to fp16 through registers and L1: no
// chunk pairs merge inside a cluster (the receive area would shrink L1).
// WIDE-NEXT:  constexpr int kSharedBytes = 190248;
// WIDE-NEXT:  constexpr int kHeadsPerBlock = 32;
// WIDE-NEXT:  constexpr int kClusterParts = 1;
// The prelude converts in hardware.
// WIDE:       cvt.rn.f16x2.e4m3x2
// The fp8 rows are read once: the producer loads them evict-first from L2.
// WIDE:       createpolicy.fractional.L2::evict_first
// WIDE:       ld.global.L2::cache_hint.v4.u32
// WIDE:       const unsigned long long stream = nv::l2_evict_first_policy();
// WIDE:       nv::load_global_16(t.chunk[pass][sl].w, src + sl * 64, stream);

// ROWS64:      constexpr int kNumWarps = 12;
// ROWS64:      constexpr int kStages = 2;
// The same shared memory as a 16-bit cache: the stages hold fp16.
// ROWS64-NEXT: constexpr int kSharedBytes = 232120;
// ROWS64-NEXT: constexpr int kHeadsPerBlock = 64;
// ROWS64-NEXT: constexpr int kClusterParts = 1;
// ROWS64:      constexpr bool kFP8Operands = kCacheFP8 && (kRowsN != 64 || kQueryFP8) && (kQueryFP8 || kNumWarps == 12);
// A whole tile's raw halves come by TMA on their raw barrier.
// ROWS64:      sm90::mbarrier_arrive_expect_tx(bar, raw_boxes(half) * kSlabBytes);
// ROWS64:      produce_fp8_halves(job, cache, q, q_token_stride, q_head_stride, kv_map, lay, num_tiles, ptid);

// SM80:       #define MLAGEN_ARCH_SM80 1
// SM80:       constexpr int kCacheDType = 1;
// SM80:       constexpr int kStages = 1;
// SM80:       constexpr int kClusterParts = 1;

// gfx942 reads FNUZ, gfx950 OCP: the same instruction, each arch's encoding.
// GFX942:     #define MLAGEN_ARCH_GFX942 1
// GFX942:     constexpr int kCacheDType = 1;
// GFX942:     __builtin_amdgcn_cvt_pk_f32_fp8
// GFX950:     #define MLAGEN_ARCH_GFX950 1
// GFX950:     constexpr int kCacheDType = 1;

// GFX90A: gfx90a has no fp8 conversion instructions

// fp8 q: the same kernel with q read as fp8 bytes (its scale is folded into
// softmax_scale by the runtime).
// RUN: sed 's/q_type = bf16, kv_type = f8E4M3/q_type = f8E4M3, kv_type = f8E4M3/' %s | mlagen-opt --mla-legalize --mla-select-tiling=arch=sm_90a --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefixes=FP8Q,FP8Q-SM90A
// RUN: sed 's/q_type = bf16, kv_type = f8E4M3/q_type = f8E4M3, kv_type = f8E4M3/' %s | mlagen-opt --mla-legalize --mla-select-tiling=arch=gfx942 --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefixes=FP8Q,FP8Q-CDNA
// FP8Q:      constexpr bool kInputBF16 = true;
// FP8Q-NEXT: constexpr int kCacheDType = 1;
// FP8Q-NEXT: constexpr bool kQueryFP8 = true;
// sm_90a's e4m3-operand kernel of 16 rows merges pairs in a cluster; CDNA
// merges nothing so.
// FP8Q-SM90A: constexpr int kClusterParts = 2;
// FP8Q-CDNA:  constexpr int kClusterParts = 1;

// fp8 q at 128 heads: 64-row blocks of the seesaw (consume_seesaw_fp8; two
// consumers and a producer, 12 warps), four raw e4m3 stages of 40 KB, Q 40
// KB, two P slabs, the consumers' row floats and the barriers: the host's
// shared-memory sum is the template's kSharedBytesUsed.
// RUN: sed 's/q_heads = 16, q_len = 1, page_size = 64, lse, q_type = bf16, kv_type = f8E4M3/q_heads = 128, q_len = 1, page_size = 64, lse, q_type = f8E4M3, kv_type = f8E4M3/' %s | mlagen-opt --mla-legalize --mla-select-tiling=arch=sm_90a --mla-prepare-emission | mlagen-translate --mla-to-hip | FileCheck %s --check-prefix=SEESAW
// SEESAW:      constexpr bool kQueryFP8 = true;
// SEESAW:      constexpr int kNumWarps = 12;
// SEESAW:      constexpr int kStages = 4;
// SEESAW:      constexpr int kSharedBytes = 225352;
// SEESAW-NEXT: constexpr int kHeadsPerBlock = 64;
// SEESAW-NEXT: constexpr int kClusterParts = 1;
// SEESAW:      constexpr bool kSeesawFP8 = kFP8Operands && kRowsN == 64;
// SEESAW:      consume_seesaw_fp8<1>(job, output, lay, num_tiles, warp, lane, staged);
