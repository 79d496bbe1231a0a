// Absorbed MLA decode (DeepSeek) on matrix cores only: mma.sync on NVIDIA,
// MFMA on AMD CDNA. One latent KV head of 576 columns is shared by every q
// head; V is its first 512 columns, read from the same shared-memory tile as
// K. `mlagen_decode` runs one work item (a request's key chunk) per block
// against a paged cache and writes either the final output or an fp32
// partial; `mlagen_decode_reduce` merges the partials of each request by LSE
// in slot order. templates/DECODE_CONTRACT.md defines the ABI, the work list
// and the masking rule.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/DecodeParams.h. Strides are in elements.
struct mlagen_decode_params {
  const void *q;
  const void *kv_cache;
  void *out;
  float *lse;
  const int *block_table;
  const int *seq_lens;
  const int *work;     // int4 per item: batch, key_begin, key_end, slot
  const int *num_work; // [1]
  const int *merge;    // int2 per request: first_slot, num_slots
  float *partial_out;  // [slot][kQLen * kNumHeads][kHeadDimV]
  float *partial_lse;  // [slot][kQLen * kNumHeads]
  long long q_batch_stride, q_token_stride, q_head_stride;
  long long out_batch_stride, out_token_stride, out_head_stride;
  long long kv_block_stride, kv_token_stride;
  int block_table_stride;
  int batch;
  float softmax_scale;
  float kv_scale; // fp8 cache (kCacheDType 1): dequantised key = kv_scale * stored; else ignored
  int *error_flags; // checked mode: 8 ints, the first bad request; null: unchecked
  int num_blocks;   // checked mode: pages in the cache
  int max_pages;    // checked mode: pages of a block-table row
  int kv_map_ready; // 1: kv_map describes the cache (64-row sm_90a blocks, pages of 64 keys)
  alignas(64) unsigned char kv_map[128]; // CUtensorMap for bulk tensor copies of whole pages
  int *merge_arrivals; // [batch][kRowBlocks] arrival counters, zero between steps
};

namespace mlagen {
namespace decode {

using namespace mlagen_config;

typedef select_type<kInputBF16, bf16, fp16>::type Elem;
// Storage of one cache element: q's type (kCacheDType 0) or fp8 e4m3
// (kCacheDType 1: OCP on NVIDIA and gfx950, FNUZ on gfx942) with one
// per-tensor scale. fp8 tiles are converted exactly on their way into
// shared memory (every e4m3 value is an fp16 and a bf16), so the MMA path is
// the 16-bit one; kv_scale multiplies the logits (folded into the softmax
// scale) and the output (folded into the final normalisation) instead of
// every element.
static_assert(kCacheDType == 0 || kCacheDType == 1, "kCacheDType: 0 (q's type) or 1 (fp8 e4m3)");
constexpr bool kCacheFP8 = kCacheDType == 1;
static_assert(!kCacheFP8 || kInputBF16, "an fp8 cache is read with bf16 (or fp8) q and bf16 out");
// fp8 e4m3 q (kQueryFP8) comes with an fp8 cache only: it takes the cache's
// register path into shared memory (or the MFMA operand), converted exactly
// like the keys; its per-tensor scale is folded into softmax_scale by the
// host, since q only ever scales the logits. Its strides count bytes.
static_assert(!kQueryFP8 || kCacheFP8, "fp8 q is read with an fp8 cache");
constexpr int kQElemBytes = kQueryFP8 ? 1 : 2;
#if MLAGEN_ARCH_GFX90A
static_assert(!kCacheFP8, "gfx90a has no fp8 conversion instructions");
#endif
typedef Elem CacheElem;
// The matrix-core operand type. NVIDIA multiplies an fp8 cache as fp16
// (every e4m3 value and, below 65504, every bf16 q is exact in fp16; one
// cvt.rn.f16x2.e4m3x2 converts two keys); CDNA converts fp8 to bf16.
#if MLAGEN_TARGET_NVIDIA
typedef select_type<kCacheFP8, fp16, Elem>::type MmaElem;
MLAGEN_DEVICE void fp8x4_to_operands(u32 v, u32 &lo, u32 &hi) { fp8e4m3x4_to_f16(v, lo, hi); }
#else
typedef Elem MmaElem;
MLAGEN_DEVICE void fp8x4_to_operands(u32 v, u32 &lo, u32 &hi) { fp8e4m3x4_to_bf16(v, lo, hi); }
#endif

static_assert(kHeadDimQK == 576 && kHeadDimV == 512, "absorbed MLA: K is 576 wide, V its first 512 columns");
static_assert(kQLen >= 1 && kQLen <= 8, "1..8 query tokens per request");
static_assert(kPageSize >= 1 && kPageSize <= 256 && (kPageSize & (kPageSize - 1)) == 0,
              "kPageSize is a power of two in 1..256");
static_assert(kHeadsPerBlock % 16 == 0, "kHeadsPerBlock (q rows per block) is a multiple of 16");
static_assert(kTileK % 16 == 0, "kTileK is a multiple of 16");
static_assert(kThreads == kNumWarps * kWaveSize, "kThreads = kNumWarps * kWaveSize");
static_assert(kStages >= 1, "at least one KV buffer");
static_assert(kThreads % 128 == 0, "the reduce kernel gives each row 128 threads");

// q rows of a request, row = token * kNumHeads + head. A block owns
// kHeadsPerBlock consecutive rows. Rows past kRows, and rows of heads at or
// past kNumQHeads (the caller's heads, when kNumHeads pads them), are
// padding: zero q, nothing written.
static_assert(kNumQHeads >= 1 && kNumQHeads <= kNumHeads, "kNumQHeads <= kNumHeads");
constexpr int kRows = kQLen * kNumHeads;
constexpr int kRowTiles = kHeadsPerBlock / 16;
MLAGEN_DEVICE bool is_real_row(int g) { return g < kRows && (kNumQHeads == kNumHeads || g % kNumHeads < kNumQHeads); }

// sm_90a runs the warp-specialised wgmma kernel (warpgroup_mma) when the
// tiling pass gives it 64-key tiles, two or more stages and a producer
// warpgroup beside one consumer warpgroup (16 or 32 q rows, 8 warps) or two
// (12 warps: 64 rows of a 16-bit cache, as O^T of 64 rows is too large for
// one warpgroup's registers; or an fp8 cache multiplied as e4m3, 16 and 32
// rows of fp8 q or 16 of bf16 q, the consumers taking tiles in turn).
// DecodeSupport.cpp's
// isWarpgroupDecode mirrors this rule; any other tiling selects mma.sync
// (warp_mma).
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
constexpr bool kWarpgroupDecode = kTileK == 64 && kStages >= 2 &&
                                  ((kHeadsPerBlock <= 32 && kNumWarps == 8) ||
                                   (kHeadsPerBlock == 64 && kNumWarps == 12) ||
                                   (kNumWarps == 12 && kCacheFP8 && (kQueryFP8 ? kHeadsPerBlock <= 32 : kHeadsPerBlock == 16)));
#else
constexpr bool kWarpgroupDecode = false;
#endif
static_assert(kNumWarps != 12 || kWarpgroupDecode, "12 warps: sm_90a's two-consumer wgmma kernel only");

// A work item's slot + kGridPair: its request is a pair merged in the grid.
constexpr int kGridPair = 1 << 30;

// A request's q rows split into kRowBlocks blocks (grid y).
constexpr int kRowBlocks = ceil_div(kRows, kHeadsPerBlock);

// Row g's q (token g / kNumHeads, head g % kNumHeads) of a request's q.
MLAGEN_DEVICE const u8 *q_row(const void *q, int g, long long token_stride, long long head_stride) {
  return static_cast<const u8 *>(q) + ((g / kNumHeads) * token_stride + (g % kNumHeads) * head_stride) * kQElemBytes;
}

struct alignas(8) Pair32 {
  u32 x, y;
};
struct alignas(8) Float2 {
  float x, y;
};
struct alignas(16) Float4 {
  float x, y, z, w;
};

// Tile copies move 16-byte chunks, 8 threads to a 576-element row (1152
// contiguous bytes per row in 9 column blocks of 128 bytes).
constexpr int kChunkElems = 16 / (int)sizeof(CacheElem);
constexpr int kCopyThreadsPerRow = 8;
constexpr int kCopyRowsPerPass = kThreads / kCopyThreadsPerRow;
constexpr int kCopyBlockCols = kCopyThreadsPerRow * kChunkElems;
constexpr int kCopyColumnBlocks = kHeadDimQK / kCopyBlockCols;
static_assert(kHeadDimQK % kCopyBlockCols == 0, "rows split into whole column blocks");
// KV tile copies: fp8 rows are 576 bytes, 4 threads to a row moving 16
// bytes (16 elements) each, so column blocks stay 64 elements wide.
constexpr int kKVThreadsPerRow = kCacheFP8 ? 4 : kCopyThreadsPerRow;
constexpr int kKVChunkElems = kCacheFP8 ? 16 : kChunkElems;
constexpr int kKVRowsPerPass = kThreads / kKVThreadsPerRow;
static_assert(kKVThreadsPerRow * kKVChunkElems == kCopyBlockCols, "KV column blocks are copy column blocks");
constexpr int kKVPasses = ceil_div(kTileK, kKVRowsPerPass);

// One work item as this block runs it.
struct Job {
  int batch;
  int key_begin;  // first key of the chunk
  int key_end;    // one past its last key, as planned
  int block_end;  // one past the last key some row of this block sees
  int mask_from;  // keys at or past this are invisible to some row
  int seq_len;
  // -1: final output; <= -2: final output merged inside the cluster
  // (merge_parts, merge_rank); else the partial slot.
  int slot;
  bool pair;      // the request is a pair merged in the grid (merge_pair_if_second)
  int row0;       // first q row of the block
  float unit;     // softmax_scale * kv_scale * log2(e): raw q.k -> log2-unit logit
  float v_scale;  // kv_scale (fp8 cache) or 1: multiplies the normalised output

  // One past the last key row g (< kRows or padding) may see. Query token t
  // sees keys [0, seq_len - kQLen + t].
  MLAGEN_DEVICE int row_end(int g) const {
    const int t = min_int(g / kNumHeads, kQLen - 1);
    return min_int(key_end, seq_len - kQLen + 1 + t);
  }
};

// Checked mode (DECODE_CONTRACT.md, "Checked mode"): seq_len must fit the
// block-table row and every page id it covers must be inside the cache.
// Every thread of every item of the request scans the same entries (the
// decision needs no barrier and is the same in all of the request's items);
// one thread records the first violation seen in error_flags.
enum { kDecodeErrorSeqLen = 1, kDecodeErrorPage = 2 };

MLAGEN_DEVICE void record_decode_error(const mlagen_decode_params &p, int code, int batch, int value, int page) {
  int *flags = p.error_flags;
#if MLAGEN_TARGET_NVIDIA
  const bool first = atomicCAS(flags, 0, code) == 0;
#else
  int expected = 0;
  const bool first = __atomic_compare_exchange_n(flags, &expected, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
  if (!first)
    return;
  flags[1] = batch;
  flags[2] = value;
  flags[3] = page;
  flags[4] = p.max_pages;
  flags[5] = p.num_blocks;
  flags[6] = kPageSize;
}

// 0 when request `batch` may be read, else its error code, with the bad
// value and page index. Uniform: every thread reads the same entries.
MLAGEN_DEVICE int check_request(const mlagen_decode_params &p, int batch, int seq_len, int &value, int &page) {
  value = seq_len;
  page = 0;
  if (seq_len < 0 || (long long)seq_len > (long long)p.max_pages * kPageSize)
    return kDecodeErrorSeqLen;
  const int *row = p.block_table + (long long)batch * p.block_table_stride;
  const int pages = (seq_len + kPageSize - 1) / kPageSize;
  for (int i = 0; i < pages; ++i) {
    const int entry = row[i];
    if ((unsigned)entry >= (unsigned)p.num_blocks) {
      value = entry;
      page = i;
      return kDecodeErrorPage;
    }
  }
  return 0;
}

// A request merged inside the cluster (DECODE_CONTRACT.md): slot -2 - (8
// parts + rank), its chunks in `parts` adjacent blocks, this one the
// rank-th; merge_parts 0: not merged so.
MLAGEN_DEVICE int merge_parts(const Job &job) { return job.slot < -1 ? (-2 - job.slot) / 8 : 0; }
MLAGEN_DEVICE int merge_rank(const Job &job) { return (-2 - job.slot) % 8; }

// Whether the block's cluster is exactly its item's merge group, in order
// (the planner's clusterBlocks: see DecodePlan.h).
MLAGEN_DEVICE bool in_merge_cluster(const Job &job) {
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
  return kClusterParts > 1 && merge_parts(job) == kClusterParts && (int)sm90::cluster_blocks() == kClusterParts &&
         (int)sm90::cluster_rank() == merge_rank(job);
#else
  return false;
#endif
}

// Reads the block's work item; false if the block has none. The row
// blocks of an item are adjacent in launch order: they read the same keys,
// so all but the first find them in L2.
MLAGEN_DEVICE bool load_job(const mlagen_decode_params &p, Job &job) {
  const int linear = block_index_x() + block_index_y() * grid_size_x();
  const int index = linear / kRowBlocks;
  const int row_block = linear % kRowBlocks;
  // The item is read before num_work is known, so that the two loads
  // overlap: index < grid x = the work list's capacity, so the read stays
  // inside it, and a block past num_work ignores what it read.
  const int *item = p.work + 4 * index;
  job.batch = item[0];
  job.key_begin = item[1];
  job.key_end = item[2];
  job.slot = item[3];
  if (index >= *p.num_work)
    return false;
  job.pair = job.slot >= kGridPair;
  if (job.pair)
    job.slot -= kGridPair;
  job.seq_len = p.seq_lens[job.batch];
  if (p.error_flags) {
    int value, page;
    int code = check_request(p, job.batch, job.seq_len, value, page);
#if MLAGEN_TARGET_CDNA
    code = __builtin_amdgcn_readfirstlane(code); // uniform: keep the job in SGPRs
#endif
    if (code != 0) {
      // Read nothing of the cache: the request's rows get zeros and LSE
      // -inf, as for seq_len 0 (every item of the request decides alike).
      if (thread_index() == 0 && row_block == 0)
        record_decode_error(p, code, job.batch, value, page);
      job.seq_len = 0;
      job.key_begin = 0;
      job.key_end = 0;
    }
  }
  job.row0 = row_block * kHeadsPerBlock;
  job.block_end = max_int(job.key_begin, job.row_end(job.row0 + kHeadsPerBlock - 1));
  job.mask_from = job.row_end(job.row0);
  job.unit = kCacheFP8 ? p.softmax_scale * p.kv_scale * kLog2e : p.softmax_scale * kLog2e;
  job.v_scale = kCacheFP8 ? p.kv_scale : 1.0f;
  if (kClusterParts > 1 && job.slot < -1 && !in_merge_cluster(job)) {
    // The plan's groups do not match the launch's clusters (a launch
    // without its cluster): no block may wait for a partner that is not
    // there. The rows come out NaN. (Kernels that merge nothing in
    // clusters get no such item from their planner; the test would cost
    // the 12-warp fp8 kernel of 32 rows a spill.)
    job.slot = -1;
    job.v_scale = __builtin_bit_cast(float, 0x7fc00000u);
  }
  return true;
}

// Key rows of the request through its block table. Row lookups of a tile
// happen one tile before its copy is issued, so the table's load latency
// hides behind a tile of math.
struct PagedCache {
  const u16 *base;
  const int *pages; // the request's block-table row
  long long block_stride;
  long long token_stride;

  MLAGEN_DEVICE int page_of(int key) const { return pages[(unsigned)key / kPageSize]; }
  MLAGEN_DEVICE const u16 *row(int page, int key) const {
    return base + page * block_stride + (long long)((unsigned)key % kPageSize) * token_stride;
  }
  // fp8 cache: strides count 1-byte elements.
  MLAGEN_DEVICE const u8 *row8(int page, int key) const {
    return reinterpret_cast<const u8 *>(base) + page * block_stride +
           (long long)((unsigned)key % kPageSize) * token_stride;
  }
};

// The copy rows of one thread in a KV tile: row r = tid / kKVThreadsPerRow + pass * kKVRowsPerPass.
struct KVRows {
  int page[kKVPasses]; // -1: past the block's keys (zero-filled, never read)

  MLAGEN_DEVICE void lookup(const PagedCache &cache, const Job &job, int k0, int tid) {
#pragma unroll
    for (int pass = 0; pass < kKVPasses; ++pass) {
      const int r = tid / kKVThreadsPerRow + pass * kKVRowsPerPass;
      const int key = k0 + r;
      const bool valid = (kTileK % kKVRowsPerPass == 0 || r < kTileK) && key < job.block_end;
      page[pass] = valid ? cache.page_of(key) : -1;
    }
  }
};

struct alignas(16) Raw16 {
  u32 w[4];
};

#if MLAGEN_TARGET_NVIDIA
// Eight q elements of a row at element column `col` as fp16 operands (the
// operand type of an fp8 cache on NVIDIA): fp8 q converted exactly like
// the keys, bf16 q rounded to fp16.
MLAGEN_DEVICE Raw16 q_chunk_as_fp16(const u8 *row, int col) {
  Raw16 v;
  if (kQueryFP8) {
    const Pair32 raw = *reinterpret_cast<const Pair32 *>(row + col);
    fp8x4_to_operands(raw.x, v.w[0], v.w[1]);
    fp8x4_to_operands(raw.y, v.w[2], v.w[3]);
  } else {
    v = *reinterpret_cast<const Raw16 *>(row + col * 2);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      unpack2<bf16>(v.w[i], lo, hi);
      v.w[i] = pack2<fp16>(lo, hi);
    }
  }
  return v;
}
#endif

// fp8 cache: one thread's share of a KV tile in registers (16 fp8 per
// chunk), loaded one tile ahead; `store` converts to bf16 (32 bytes per
// chunk) into the shared tile of row stride kStride elements.
template <int kStride>
struct StagedFP8 {
  Raw16 chunk[kKVPasses][kCopyColumnBlocks];

  MLAGEN_DEVICE void fetch(const PagedCache &cache, const KVRows &rows, int k0, int tid) {
    const int col = tid % kKVThreadsPerRow * kKVChunkElems;
    const Raw16 zero = {{0u, 0u, 0u, 0u}};
#pragma unroll
    for (int pass = 0; pass < kKVPasses; ++pass) {
      const int r = tid / kKVThreadsPerRow + pass * kKVRowsPerPass;
      const int page = rows.page[pass];
      const u8 *src = cache.row8(page < 0 ? 0 : page, k0 + r) + col;
#pragma unroll
      for (int cb = 0; cb < kCopyColumnBlocks; ++cb)
        chunk[pass][cb] = page >= 0 ? *reinterpret_cast<const Raw16 *>(src + cb * kCopyBlockCols) : zero;
    }
  }
  MLAGEN_DEVICE void store(u16 *tile, int tid) const {
    const int col = tid % kKVThreadsPerRow * kKVChunkElems;
#pragma unroll
    for (int pass = 0; pass < kKVPasses; ++pass) {
      const int r = tid / kKVThreadsPerRow + pass * kKVRowsPerPass;
      if (kTileK % kKVRowsPerPass != 0 && r >= kTileK)
        break;
#pragma unroll
      for (int cb = 0; cb < kCopyColumnBlocks; ++cb) {
        u32 v[8];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          fp8x4_to_operands(chunk[pass][cb].w[i], v[2 * i], v[2 * i + 1]);
        u16 *dst = tile + r * kStride + col + cb * kCopyBlockCols;
        if (kStride % 8 == 0) {
          const Raw16 a = {{v[0], v[1], v[2], v[3]}}, b = {{v[4], v[5], v[6], v[7]}};
          reinterpret_cast<Raw16 *>(dst)[0] = a;
          reinterpret_cast<Raw16 *>(dst)[1] = b;
        } else { // rows are only 8-byte aligned
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const Pair32 pair = {v[2 * i], v[2 * i + 1]};
            reinterpret_cast<Pair32 *>(dst)[i] = pair;
          }
        }
      }
    }
  }
};

// The 512 outputs of one row: the final bf16/fp16 output (slot -1) or the
// fp32 partial of the slot.
struct RowOutput {
  u16 *out;      // null for a partial
  float *partial;

  MLAGEN_DEVICE void store2(int col, float v0, float v1) const {
    if (out) {
      *reinterpret_cast<u32 *>(out + col) = pack2<Elem>(v0, v1);
    } else {
      const Float2 v = {v0, v1};
      *reinterpret_cast<Float2 *>(partial + col) = v;
    }
  }
  MLAGEN_DEVICE void store4(int col, float v0, float v1, float v2, float v3) const {
    if (out) {
      const Pair32 v = {pack2<Elem>(v0, v1), pack2<Elem>(v2, v3)};
      *reinterpret_cast<Pair32 *>(out + col) = v;
    } else {
      const Float4 v = {v0, v1, v2, v3};
      *reinterpret_cast<Float4 *>(partial + col) = v;
    }
  }
};

// Where a work item's results go.
struct Output {
  int slot;
  u16 *out; // the request's out
  long long out_token_stride, out_head_stride;
  float *lse; // the request's lse ([kQLen][kNumQHeads]), or null
  float *partial_out;
  float *partial_lse;
  // The plan's (not offset by the request: kernel parameters, which need
  // no registers through the main loop).
  const int *merge;  // int2 per request: first_slot, num_slots
  int *arrivals;     // per request and row block

  // Final rows, 16-byte aligned every 8 columns (the launch checks out and
  // its strides; checked again here because it costs nothing at the end).
  MLAGEN_DEVICE bool wide_rows() const {
    const unsigned long long strides = 2 * (out_token_stride | out_head_stride); // bytes
    return slot < 0 && ((reinterpret_cast<unsigned long long>(out) | strides) & 15) == 0;
  }
  MLAGEN_DEVICE RowOutput row(int g) const {
    RowOutput r;
    if (slot < 0) {
      r.out = out + (g / kNumHeads) * out_token_stride + (g % kNumHeads) * out_head_stride;
      r.partial = nullptr;
    } else {
      r.out = nullptr;
      r.partial = partial_out + ((long long)slot * kRows + g) * kHeadDimV;
    }
    return r;
  }
  MLAGEN_DEVICE void store_lse(int g, float value) const {
    if (slot >= 0)
      partial_lse[(long long)slot * kRows + g] = value;
    else if (kReturnLSE && lse)
      lse[g / kNumHeads * kNumQHeads + g % kNumHeads] = value;
  }
};

// Pairs merged in the grid (DECODE_CONTRACT.md): a request of two chunks
// whose merge entry counts them as -2 is merged by whichever of its two
// blocks (of a row block) writes its partial second, with
// mlagen_decode_reduce's arithmetic in its order (the same bits), so the
// step needs no reduce launch. Called once the block's partial rows are
// written, by the kWriters threads (tid 0..kWriters-1) that wrote them;
// `sync` is a barrier over exactly those threads; `scratch` is shared
// memory free for 4 + 3 kHeadsPerBlock floats (the stage buffers). kPass:
// positions (a row's column quad) a thread loads at once.

// A pair's row g merged by LSE (merge_row's: w_i = exp(lse_i - max lse),
// totalled in slot order; l0 the first slot's): its weights and scale into
// shared memory at row i, its LSE to final_rows.
MLAGEN_DEVICE void pair_row_weights(const Output &final_rows, int g, bool real, float l0, float l1, float *weights,
                                    float *scales, int i) {
  const float max_lse = max_float(l0, l1);
  const float shift = max_lse == kNegInf ? 0.0f : max_lse * kLog2e;
  const float w0 = real ? exp2_approx(l0 * kLog2e - shift) : 0.0f;
  const float w1 = real ? exp2_approx(l1 * kLog2e - shift) : 0.0f;
  const float weight = w0 + w1;
  weights[2 * i] = w0;
  weights[2 * i + 1] = w1;
  scales[i] = weight > 0.0f ? 1.0f / weight : 0.0f;
  if (real)
    final_rows.store_lse(g, weight > 0.0f ? max_lse + log2_approx(weight) * kLn2 : kNegInf);
}
// One merged element: products rounded, then added, then the reduce's
// empty sums (+0), times the scale.
MLAGEN_DEVICE float pair_value(float w0, float x0, float w1, float x1, float scale) {
  return (fma_float(w0, x0, 0.0f) + fma_float(w1, x1, 0.0f) + 0.0f) * scale;
}

template <int kWriters, int kPass, class Sync>
MLAGEN_DEVICE void merge_pair_if_second(const Job &job, const Output &output, int tid, float *scratch, Sync sync) {
  constexpr int kPositions = kHeadsPerBlock * (kHeadDimV / 4) / kWriters; // a thread's
  static_assert(kWriters >= kHeadsPerBlock && kPositions % kPass == 0, "a row a thread, whole passes");
  if (!job.pair)
    return; // uniform: final rows, or a partial for the reduce
  int *const state = reinterpret_cast<int *>(scratch);
  float *const weights = scratch + 4;                   // [row][2]
  float *const scales = weights + 2 * kHeadsPerBlock;   // [row]
  fence_device(); // this thread's partial rows before the block's arrival
  sync();         // (and every writer is done with the shared memory)
  if (tid == 0) {
    const int first = output.merge[2 * job.batch];
    int *const counter = output.arrivals + job.batch * kRowBlocks + job.row0 / kHeadsPerBlock;
    const int second = atomic_add_device(counter, 1) == 1;
    if (second)
      *counter = 0; // ready for the next step, or a graph's replay
    state[0] = second;
    state[1] = first;
  }
  sync();
  if (!state[0])
    return; // the partner merges
  fence_device(); // the partner's partial, after its arrival
  const int first = state[1];
  Output final_rows = output;
  final_rows.slot = -1;

  // A row's weights, scale and LSE.
  if (tid < kHeadsPerBlock) {
    const int g = job.row0 + tid;
    const float *lse_of = output.partial_lse + (long long)first * kRows + g;
    const bool real = is_real_row(g);
    const float l0 = real ? load_l2_f32(lse_of) : kNegInf, l1 = real ? load_l2_f32(lse_of + kRows) : kNegInf;
    pair_row_weights(final_rows, g, real, l0, l1, weights, scales, tid);
  }
  sync();

  // O = (w_0 O_0 + w_1 O_1) times the scale (pair_value); kPass positions
  // a thread at once, both slots' loads in flight together.
  const float *part = output.partial_out + (long long)first * kRows * kHeadDimV;
#pragma unroll 1
  for (int p0 = 0; p0 < kPositions; p0 += kPass) {
    Float4 v[2][kPass];
#pragma unroll
    for (int j = 0; j < kPass; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int g = job.row0 + at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        v[i][j] = Float4{0.0f, 0.0f, 0.0f, 0.0f};
        if (is_real_row(g))
          load_l2_f32x4(part + ((long long)i * kRows + g) * kHeadDimV + col, v[i][j].x, v[i][j].y, v[i][j].z,
                        v[i][j].w);
      }
    }
#pragma unroll
    for (int j = 0; j < kPass; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int r = at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
      if (!is_real_row(job.row0 + r))
        continue;
      const float w0 = weights[2 * r], w1 = weights[2 * r + 1], scale = scales[r];
      const Float4 &a = v[0][j], &b = v[1][j];
      auto add = [&](float x0, float x1) { return pair_value(w0, x0, w1, x1, scale); };
      final_rows.row(job.row0 + r).store4(col, add(a.x, b.x), add(a.y, b.y), add(a.z, b.z), add(a.w, b.w));
    }
  }
}

// Online-softmax state of one row: running max (log2 units) and this lane's
// share of the running sum. Every warp keeps the state of every row of the
// block; they all apply the same updates, so they agree bit for bit.
struct RowState {
  float max;
  float sum;

  // A constructor, not default member initializers: CUDA 13.0's compilers
  // (NVRTC and nvcc alike) initialise only the first inner array of a 2-D
  // array of a struct with default member initializers and zero the rest
  // (RowState rows[4][2] began with max 0 in rows[1..3], so rows whose
  // logits were all negative took exp2 against 0 and their fp16 P underflowed).
  MLAGEN_DEVICE RowState() : max(kNegInf), sum(0.0f) {}

  // Takes the tile's row max (log2 units); returns the factor rescaling what
  // was accumulated and sets `base`, subtracted before exp2. A row that has
  // seen only masked keys keeps max -inf and base 0, so its p are 0, not NaN.
  MLAGEN_DEVICE float update(float tile_max, float &base) {
    const float new_max = max_float(max, tile_max);
    base = new_max == kNegInf ? 0.0f : new_max;
    const float alpha = exp2_approx(max - base);
    max = new_max;
    sum *= alpha;
    return alpha;
  }
  MLAGEN_DEVICE static float output_scale(float total) { return total > 0.0f ? 1.0f / total : 0.0f; }
  // Natural log; a row that saw no key gets -inf.
  MLAGEN_DEVICE float lse(float total) const {
    return total > 0.0f ? (max + log2_approx(total)) * kLn2 : kNegInf;
  }
};

// The split of a [kHeadsPerBlock x kTileK] score tile over warps: a warp
// takes the row tiles wm, wm + kQKWarpsM, ... and the key granules wn,
// wn + kQKWarpsN, ... (granule: kGranule keys). The split of the
// [kHeadsPerBlock x 512] output: warp w owns every row and the columns
// [w * kColsPerWarp, (w + 1) * kColsPerWarp), so each V fragment it loads
// serves all its row tiles.
template <int kGranule>
struct Split {
  static constexpr int kGranules = kTileK / kGranule;
  static constexpr int kQKWarpsM = min_int(kRowTiles, kNumWarps);
  static constexpr int kQKWarpsN = kNumWarps / kQKWarpsM;
  static constexpr int kQKRowTiles = kRowTiles / kQKWarpsM;
  static constexpr int kQKGranules = ceil_div(kGranules, kQKWarpsN);
  static constexpr int kColsPerWarp = kHeadDimV / kNumWarps;
  static_assert(kTileK % kGranule == 0, "kTileK is a multiple of the key granule");
  // (A 12-warp block is the wgmma kernel's: Split then goes unused.)
  static_assert(kWarpgroupDecode || (kRowTiles % kQKWarpsM == 0 && kNumWarps % kQKWarpsM == 0),
                "row tiles and warps divide evenly (powers of two)");
  static_assert(kWarpgroupDecode || kColsPerWarp % 16 == 0,
                "each warp owns a multiple of 16 V columns (kNumWarps <= 32)");
  // Warps past the last granule (kGranules < kQKWarpsN) idle in S = Q K^T.
  MLAGEN_DEVICE static bool has_granule(int wn, int j) {
    return kGranules % kQKWarpsN == 0 || wn + j * kQKWarpsN < kGranules;
  }
};

#if MLAGEN_TARGET_NVIDIA
// NVIDIA, mma.sync m16n8k16. Q and each KV tile live in shared memory
// (cp.async, kStages deep); S = Q K^T per (row tile, 8-key granule) in C
// fragments; tile row maxima meet in shared memory; P goes to shared memory
// as 16-bit and comes back as A fragments of O += P V, whose B fragments are
// ldmatrix.trans of the first 512 columns of the same KV tile.
namespace warp_mma {

static_assert(kWaveSize == 32, "NVIDIA warps are 32 lanes");
typedef Split<8> S;

// Rows padded by 8 elements: the 8 rows an ldmatrix reads start 16 bytes
// apart modulo 128, so they hit distinct banks.
constexpr int kStrideK = kHeadDimQK + 8;
constexpr int kStrideP = kTileK + 8;
constexpr int kQTileElems = kHeadsPerBlock * kStrideK;
constexpr int kKVTileElems = kTileK * kStrideK;
constexpr int kPTileElems = kHeadsPerBlock * kStrideP;
constexpr int kSharedBytesUsed = 2 * (kQTileElems + kStages * kKVTileElems + 2 * kPTileElems) +
                                 4 * kHeadsPerBlock * (S::kGranules + kNumWarps);
static_assert(kWarpgroupDecode || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKPairs = kHeadDimQK / 32;    // two k-steps of S per ldmatrix of K
// With few S fragments per warp (and one or two warps per scheduler) the
// QK loop is latency-bound: the two k-steps of a pair then accumulate into
// separate fragments, and the next pair's operands load before this pair's
// MMAs. Large row blocks have enough independent MMAs and no spare registers.
constexpr bool kQKSplitPairs = S::kQKRowTiles * S::kQKGranules < 4;
constexpr bool kQKPrefetch = kRowTiles * S::kColsPerWarp / 2 <= 64; // O registers <= 64
constexpr int kPVSteps = kTileK / 16;        // k-steps of O += P V
constexpr int kOTiles = S::kColsPerWarp / 8; // n8 tiles of O per warp
static_assert(kWarpgroupDecode || kRowTiles * kOTiles * 4 <= 128,
              "NVIDIA: O takes 16 * kHeadsPerBlock / kNumWarps registers; keep it <= 128");

// Issues the copy of kRows_ x 576 rows into shared memory (row stride
// kStrideK); `src_of(r)` gives row r's address or null (zero-fill).
template <int kRows_, class RowSource>
MLAGEN_DEVICE void copy_rows_async(u16 *dst, const u16 *safe, int tid, const RowSource &src_of) {
  const int col = tid % kCopyThreadsPerRow * kChunkElems;
#pragma unroll
  for (int pass = 0; pass < ceil_div(kRows_, kCopyRowsPerPass); ++pass) {
    const int r = tid / kCopyThreadsPerRow + pass * kCopyRowsPerPass;
    if (kRows_ % kCopyRowsPerPass != 0 && r >= kRows_)
      break;
    const u16 *src = src_of(r, pass);
    const bool valid = src != nullptr;
    // A skipped row reads nothing; its addresses stay inside row 0 of `safe`.
    src = (valid ? src : safe) + col;
    const u32 at = nv::shared_address(dst + r * kStrideK + col);
#pragma unroll
    for (int cb = 0; cb < kCopyColumnBlocks; ++cb)
      nv::cp_async_16_l2_128(at + 2 * cb * kCopyBlockCols, src + cb * kCopyBlockCols, valid);
  }
}

MLAGEN_DEVICE void attend(const Job &job, const PagedCache &cache, const void *q,
                          long long q_token_stride, long long q_head_stride, const Output &output,
                          u16 *smem) {
  u16 *const q_tile = smem;
  u16 *const kv_tiles = q_tile + kQTileElems;
  u16 *const p_tile = kv_tiles + kStages * kKVTileElems;
  u16 *const p_residue = p_tile + kPTileElems;
  float *const red_max = reinterpret_cast<float *>(p_residue + kPTileElems); // [granule][row]
  float *const red_sum = red_max + S::kGranules * kHeadsPerBlock;            // [warp][row]

  const int tid = thread_index();
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int group = lane / 4; // fragment row (and row + 8)
  const int quad = lane % 4;  // fragment column pair
  const int qk_m = warp % S::kQKWarpsM;
  const int qk_n = warp / S::kQKWarpsM;

  const int num_tiles = ceil_div(job.block_end - job.key_begin, kTileK);
  // One tile of keys: each p is a large weight, and its 16-bit rounding
  // (2^-9 relative) would show in the output at the level of the output's
  // own rounding. Such items also multiply P's rounding residue.
  const bool few_keys = num_tiles == 1;

  // ldmatrix lane offsets (elements): lane i addresses row i % 8 of matrix i / 8.
  const int a_lane = (lane % 8 + 8 * (lane / 8 % 2)) * kStrideK + 8 * (lane / 16); // Q: A fragment
  const int k_lane = lane % 8 * kStrideK + 8 * (lane / 8);                         // K: B of 2 k-steps
  const int v_lane = (lane % 8 + 8 * (lane / 8 % 2)) * kStrideK + 8 * (lane / 16); // V: B (trans), 2 n8 tiles
  const int p_lane = (lane % 8 + 8 * (lane / 8 % 2)) * kStrideP + 8 * (lane / 16); // P: A fragment
  const int col0 = warp * S::kColsPerWarp;

  KVRows next = {};
  auto issue_kv = [&](int tile) {
    const int k0 = job.key_begin + tile * kTileK;
    copy_rows_async<kTileK>(kv_tiles + tile % kStages * kKVTileElems, cache.base, tid,
                            [&](int r, int pass) -> const u16 * {
                              return next.page[pass] >= 0 ? cache.row(next.page[pass], k0 + r) : nullptr;
                            });
  };
  auto lookup_kv = [&](int tile) { next.lookup(cache, job, job.key_begin + tile * kTileK, tid); };
  // fp8 cache: tiles stream global -> registers -> (bf16) shared memory, the
  // next tile's loads in flight during this tile's math (as on CDNA).
  StagedFP8<kStrideK> staged;

  float o[kRowTiles][kOTiles][4] = {};
  RowState rows[kRowTiles][2]; // rows 16 rt + group and 16 rt + group + 8

  if (num_tiles > 0) {
    // Q joins the first committed group.
    if (!kCacheFP8)
      copy_rows_async<kHeadsPerBlock>(q_tile, static_cast<const u16 *>(q), tid, [&](int r, int) -> const u16 * {
        const int g = job.row0 + r;
        return is_real_row(g) ? reinterpret_cast<const u16 *>(q_row(q, g, q_token_stride, q_head_stride)) : nullptr;
      });
    if (kCacheFP8) {
      lookup_kv(0);
      staged.fetch(cache, next, job.key_begin, tid);
      if (num_tiles > 1)
        lookup_kv(1);
    }
    for (int s = 0; !kCacheFP8 && s + 1 < kStages; ++s) {
      if (s < num_tiles) {
        lookup_kv(s);
        issue_kv(s);
      }
      nv::cp_async_commit();
    }
    if (!kCacheFP8 && kStages - 1 < num_tiles)
      lookup_kv(kStages - 1);
  }
  if (num_tiles > 0 && kCacheFP8) {
    // Q as fp16 (the operand type of an fp8 cache), through registers (after the
    // first tile's loads are issued); the first tile's barrier makes it visible.
    const int col = tid % kCopyThreadsPerRow * kChunkElems;
#pragma unroll
    for (int pass = 0; pass < ceil_div(kHeadsPerBlock, kCopyRowsPerPass); ++pass) {
      const int r = tid / kCopyThreadsPerRow + pass * kCopyRowsPerPass;
      if (kHeadsPerBlock % kCopyRowsPerPass != 0 && r >= kHeadsPerBlock)
        break;
      const int g = job.row0 + r;
      const u8 *src = q_row(q, g, q_token_stride, q_head_stride);
#pragma unroll
      for (int cb = 0; cb < kCopyColumnBlocks; ++cb) {
        const Raw16 zero = {{0u, 0u, 0u, 0u}};
        const Raw16 v = is_real_row(g) ? q_chunk_as_fp16(src, col + cb * kCopyBlockCols) : zero;
        *reinterpret_cast<Raw16 *>(q_tile + r * kStrideK + col + cb * kCopyBlockCols) = v;
      }
    }
  }

  for (int it = 0; it < num_tiles; ++it) {
    if (kCacheFP8) {
      if (kStages == 1 && it > 0)
        block_barrier(); // everyone is done with the single buffer
      // With kStages >= 2 the barriers of iteration it - 1 already ordered
      // this store after the last reads of the buffer.
      staged.store(kv_tiles + it % kStages * kKVTileElems, tid);
      block_barrier(); // the tile (and Q) visible to every warp
      if (it + 1 < num_tiles) {
        staged.fetch(cache, next, job.key_begin + (it + 1) * kTileK, tid);
        if (it + 2 < num_tiles)
          lookup_kv(it + 2);
      }
    } else if (kStages == 1) {
      if (it > 0)
        block_barrier(); // everyone is done with the single buffer
      issue_kv(it);
      if (it + 1 < num_tiles)
        lookup_kv(it + 1);
      nv::cp_async_commit();
    }
    if (!kCacheFP8) {
      nv::cp_async_wait<kStages == 1 ? 0 : kStages - 2>();
      // Makes tile `it` visible and frees the buffer read in iteration it - 1.
      block_barrier();
    }
    if (!kCacheFP8 && kStages > 1) {
      if (it + kStages - 1 < num_tiles) {
        issue_kv(it + kStages - 1);
        if (it + kStages < num_tiles)
          lookup_kv(it + kStages);
      }
      nv::cp_async_commit();
    }
    const int k0 = job.key_begin + it * kTileK;
    const u16 *const kv = kv_tiles + it % kStages * kKVTileElems;

    // S = Q K^T over this warp's (row tile, granule) pairs; element e of
    // s[i][j] is row 16 rt + group + 8 (e / 2), key 8 g + 2 quad + e % 2.
    float s[S::kQKRowTiles][S::kQKGranules][4] = {};
    float s_odd[kQKSplitPairs ? S::kQKRowTiles : 1][S::kQKGranules][4] = {}; // odd k-steps
    const u32 q_base = nv::shared_address(q_tile + a_lane + qk_m * 16 * kStrideK);
    const u32 k_base = nv::shared_address(kv + k_lane + qk_n * 8 * kStrideK);
    // Operands of one pair of k-steps: a[i][0..1] (Q, k-steps 2kp and
    // 2kp + 1), b[j] (K: b0, b1 of k-step 2kp, then of 2kp + 1).
    struct PairOperands {
      u32 a[S::kQKRowTiles][2][4];
      u32 b[S::kQKGranules][4];
    };
    auto load_pair = [&](PairOperands &ops, int kp) {
#pragma unroll
      for (int i = 0; i < S::kQKRowTiles; ++i) {
        nv::ldmatrix_x4(ops.a[i][0], q_base + 2 * (i * S::kQKWarpsM * 16 * kStrideK + kp * 32));
        nv::ldmatrix_x4(ops.a[i][1], q_base + 2 * (i * S::kQKWarpsM * 16 * kStrideK + kp * 32 + 16));
      }
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (S::has_granule(qk_n, j))
          nv::ldmatrix_x4(ops.b[j], k_base + 2 * (j * S::kQKWarpsN * 8 * kStrideK + kp * 32));
      }
    };
    PairOperands ops[kQKPrefetch ? 2 : 1];
    if (kQKPrefetch)
      load_pair(ops[0], 0);
#pragma unroll
    for (int kp = 0; kp < kQKPairs; ++kp) {
      PairOperands &cur = ops[kQKPrefetch ? kp % 2 : 0];
      if (!kQKPrefetch)
        load_pair(cur, kp);
      else if (kp + 1 < kQKPairs)
        load_pair(ops[(kp + 1) % 2], kp + 1);
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
#pragma unroll
        for (int i = 0; i < S::kQKRowTiles; ++i) {
          nv::mma_16x8x16<MmaElem>(s[i][j], cur.a[i][0], cur.b[j][0], cur.b[j][1]);
          nv::mma_16x8x16<MmaElem>(kQKSplitPairs ? s_odd[kQKSplitPairs ? i : 0][j] : s[i][j], cur.a[i][1],
                                cur.b[j][2], cur.b[j][3]);
        }
      }
    }
    if (kQKSplitPairs) {
#pragma unroll
      for (int i = 0; i < S::kQKRowTiles; ++i) {
#pragma unroll
        for (int j = 0; j < S::kQKGranules; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e)
            s[i][j][e] += s_odd[kQKSplitPairs ? i : 0][j][e];
        }
      }
    }

    // Causal mask and the per-granule row maxima of the raw scores.
    const bool masked = k0 + kTileK > job.mask_from;
#pragma unroll
    for (int i = 0; i < S::kQKRowTiles; ++i) {
      const int rt = qk_m + i * S::kQKWarpsM;
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
        const int g = qk_n + j * S::kQKWarpsN;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = rt * 16 + group + 8 * h;
          if (masked) {
            const int end = job.row_end(job.row0 + r);
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (k0 + g * 8 + 2 * quad + e >= end)
                s[i][j][2 * h + e] = kNegInf;
          }
          float m = max_float(s[i][j][2 * h], s[i][j][2 * h + 1]);
          m = max_float(m, shfl_xor(m, 1));
          m = max_float(m, shfl_xor(m, 2));
          if (quad == 0)
            red_max[g * kHeadsPerBlock + r] = m;
        }
      }
    }
    block_barrier(); // maxima visible

    float alpha[kRowTiles][2], base[kRowTiles][2];
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = rt * 16 + group + 8 * h;
        float m = kNegInf;
#pragma unroll
        for (int g = 0; g < S::kGranules; ++g)
          m = max_float(m, red_max[g * kHeadsPerBlock + r]);
        alpha[rt][h] = rows[rt][h].update(m * job.unit, base[rt][h]);
      }
    }
    // P of this warp's pairs into shared memory (and its rounding residue
    // when one tile is all there is). Row tiles run at compile time so that
    // rows[] and base[] stay in registers.
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      if (rt % S::kQKWarpsM != qk_m)
        continue;
      const int i = rt / S::kQKWarpsM;
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
        const int g = qk_n + j * S::kQKWarpsN;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float p0 = exp2_approx(s[i][j][2 * h] * job.unit - base[rt][h]);
          const float p1 = exp2_approx(s[i][j][2 * h + 1] * job.unit - base[rt][h]);
          rows[rt][h].sum += p0 + p1;
          const int at = (rt * 16 + group + 8 * h) * kStrideP + g * 8 + 2 * quad;
          const u32 packed = pack2<MmaElem>(p0, p1);
          *reinterpret_cast<u32 *>(p_tile + at) = packed;
          if (few_keys)
            *reinterpret_cast<u32 *>(p_residue + at) = rounding_residue<MmaElem>(p0, p1, packed);
        }
      }
    }
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
#pragma unroll
      for (int ot = 0; ot < kOTiles; ++ot) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          o[rt][ot][e] *= alpha[rt][e / 2];
      }
    }
    block_barrier(); // P visible

    // O += P V over this warp's columns; V is the KV tile's first 512 columns.
    const u32 v_base = nv::shared_address(kv + v_lane + col0);
    // The residue pass (one-tile items only) runs apart so that its
    // fragments do not occupy registers in the main pass.
    for (int pass = 0; pass < (few_keys ? 2 : 1); ++pass) {
      const u16 *const p_src = pass == 0 ? p_tile : p_residue;
#pragma unroll
      for (int ps = 0; ps < kPVSteps; ++ps) {
        u32 pa[kRowTiles][4];
#pragma unroll
        for (int rt = 0; rt < kRowTiles; ++rt)
          nv::ldmatrix_x4(pa[rt], nv::shared_address(p_src + p_lane + rt * 16 * kStrideP + ps * 16));
#pragma unroll
        for (int ot = 0; ot < kOTiles; ot += 2) {
          u32 b[4]; // b0, b1 of n8 tiles ot and ot + 1
          nv::ldmatrix_x4_trans(b, v_base + 2 * (ps * 16 * kStrideK + ot * 8));
#pragma unroll
          for (int rt = 0; rt < kRowTiles; ++rt) {
            nv::mma_16x8x16<MmaElem>(o[rt][ot], pa[rt], b[0], b[1]);
            nv::mma_16x8x16<MmaElem>(o[rt][ot + 1], pa[rt], b[2], b[3]);
          }
        }
      }
    }
  }

  // Row sums: this lane's share, then the quad's, then every warp's in
  // warp order (a fixed order: the result does not depend on timing).
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = rows[rt][h].sum;
      sum += shfl_xor(sum, 1);
      sum += shfl_xor(sum, 2);
      if (quad == 0)
        red_sum[warp * kHeadsPerBlock + rt * 16 + group + 8 * h] = sum;
    }
  }
  block_barrier();
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = rt * 16 + group + 8 * h;
      const int g = job.row0 + r;
      if (!is_real_row(g))
        continue;
      float total = 0.0f;
#pragma unroll
      for (int w = 0; w < kNumWarps; ++w)
        total += red_sum[w * kHeadsPerBlock + r];
      const float scale = RowState::output_scale(total) * job.v_scale;
      const RowOutput row = output.row(g);
#pragma unroll
      for (int ot = 0; ot < kOTiles; ++ot)
        row.store2(col0 + ot * 8 + 2 * quad, o[rt][ot][2 * h] * scale, o[rt][ot][2 * h + 1] * scale);
      if (warp == 0 && quad == 0)
        output.store_lse(g, rows[rt][h].lse(total));
    }
  }
}

} // namespace warp_mma
#endif // MLAGEN_TARGET_NVIDIA

#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
// sm_90a (kWarpgroupDecode). The last warpgroup produces: Q once, then
// 64-key tiles into kStages buffers of 128-byte-swizzled 64-column slabs
// (cp.async, completion on mbarriers). 16 or 32 q rows: one consumer
// warpgroup with the keys as M, so no q row is padding (`consume`):
//   S^T [64 keys x N] = K Q^T        (A: K slabs, K-major; B: Q slabs)
//   row maxima over keys: lanes, then the 4 warps through shared memory
//   P [N x 64 keys] as 16-bit into a swizzled slab
//   O^T [512 x N] += V^T P^T         (A: the first 8 slabs, MN-major; B: P)
// and release the buffer once O^T is updated, so the next-but-one tile
// streams in while this one is multiplied. Every matrix operand is read
// from shared memory by the tensor cores: no ldmatrix, and Q is never
// reloaded per warp. 64 rows fill wgmma's M: two consumers with Q as M,
// taking tiles in turn (`consume_rows`). fp8 q on an fp8 cache multiplies
// e4m3 with keys as M (`consume_fp8`), on one consumer or, with 12 warps,
// two taking tiles in turn.
namespace warpgroup_mma {

using sm90::u64;

constexpr int kRowsN = kHeadsPerBlock;
// fp8 operands on 12 warps: two consume_fp8 consumers over alternate tiles
// (consumer c takes tiles c, c + 2, ...; its own P slab, row floats and
// named barrier), merged by their row maxima at the end: one consumer's
// products then run under the other's softmax.
constexpr bool kPairedTiles = kRowsN <= 32 && kNumWarps == 12;
constexpr int kConsumers = kRowsN == 64 || kPairedTiles ? 2 : 1;
constexpr int kConsumerThreads = 128 * kConsumers;
constexpr int kSlabs = kHeadDimQK / 64;      // 9 slabs of 64 columns; V is the first 8
constexpr int kVSlabs = kHeadDimV / 64;
constexpr int kSlabBytes = kTileK * 128;     // [64 keys][128 bytes]
// fp8 q with an fp8 cache (consume_fp8): the tensor cores multiply e4m3 as
// it is stored (wgmma k32), so Q and the tiles land raw, a slab holding 128
// columns (576 = 4.5 slabs, the last half used); P goes as e4m3 too.
// bf16 q on an fp8 cache, 16 rows on 12 warps (kSplitQuery), takes the same
// kernel: the consumers split each q row, scaled by a power of two, into
// e4m3 `hi` plus the e4m3 of its rounding residue `lo` (about 8 significant
// bits together, as bf16 has), stack Q_lo's rows under Q_hi's in each slab
// so that one N = 32 product a k-step gives both (K read once), and undo
// the row's scale on S^T. (Otherwise the producer widens the tiles to fp16:
// `produce_fp8`. At 32 rows hi and lo would share S^T's accumulators, which
// lost too much where logits are large: bench/notes/decode-fp8.md.) 64-row
// blocks (two consumers, Q as M) multiply fp16 whatever q is: the producer
// widens the tiles in place (`produce_fp8_halves`).
constexpr bool kFP8Operands = kCacheFP8 && kRowsN != 64 && (kQueryFP8 || kNumWarps == 12);
constexpr bool kSplitQuery = kFP8Operands && !kQueryFP8;
static_assert(!kSplitQuery || kRowsN == 16, "bf16 q is split into e4m3 at 16 rows");
constexpr int kQSlabRows = kSplitQuery ? 2 * kRowsN : kRowsN; // split q: hi rows, then lo rows
constexpr int kQSlabBytes = kQSlabRows * 128;                   // [rows][128 bytes]
static_assert(!kPairedTiles || kFP8Operands, "paired consumers multiply fp8 operands");
constexpr int kStageSlabs = kFP8Operands ? ceil_div(kHeadDimQK, 128) : kSlabs;
constexpr int kStageBytes = kStageSlabs * kSlabBytes;
constexpr int kQBytes = kStageSlabs * kQSlabBytes;
constexpr int kPBytes = kRowsN * 128; // [rows][64 keys]
constexpr int kPSlabs = kPairedTiles ? 2 : 1; // one P slab per consumer of its own tiles
constexpr int kOutStride = kHeadDimV + 4; // fp32 staging of O, conflict-free writes
constexpr int kPackedWords = kHeadDimV / 2 + 4; // 16-bit staging of O (words), conflict-free likewise
constexpr int kStagedLse = kRowsN * kOutStride; // a grid pair's row LSEs, after its staged fp32 rows
// 64 rows (consume_rows) release a stage in two halves: slabs 0..3 (V's
// columns 0..255, consumer 0's) and 4..8 (V's columns 256..511 and K's
// last 64).
constexpr bool kSplitStages = kRowsN == 64;
// q_full, then per stage its full barriers (one per slab for split stages,
// so that S starts on the first slabs while the rest stream in) and its
// empty barriers (one per half for split stages).
constexpr int kFullPerStage = kSplitStages ? kSlabs : 1;
constexpr int kEmptyPerStage = kSplitStages ? 2 : 1;
constexpr int kNumBarriers = 1 + (kFullPerStage + kEmptyPerStage) * kStages;
// Six floats a row: one consumer's per-warp row maxima (at the end, row
// sums), row maxima and row totals (paired consumers: each its own);
// consume_rows's maxima, rescale factors and sums.
// kSplitQuery: then each q row's unscale (2^-e of its split).
constexpr int kConsumerRowFloats = 6 * kRowsN;
constexpr int kRowFloats = kConsumerRowFloats * kPSlabs + (kSplitQuery ? kRowsN : 0);
// 1024 bytes of alignment slack (the dynamic shared base is only 16-byte
// aligned), Q, the stages, P, row floats, barriers. DecodeSupport.cpp's
// getDecodeSharedBytes has the same sum.
// Merging in the cluster (kClusterParts 2; DECODE_CONTRACT.md): both blocks
// of a request's pair stage their normalised O and row LSEs (a part) in
// their stage buffers; each copies the half of its part that the other
// writes into the other's receive area, a region of its own so that the
// copy need not wait for the other's products, in st.async stores that
// count their bytes on the other's merge_recv.
constexpr int kPartBytes = kRowsN * kOutStride * 4 + kRowsN * 4;
static_assert(kClusterParts == 1 || (kClusterParts == 2 && kWarpgroupDecode && kRowsN == 16 && !kSplitStages &&
                                     (kFP8Operands || !kCacheFP8)),
              "cluster merging: pairs, on the 16-row wgmma kernels whose tiles bypass L1");
static_assert(kPartBytes <= kStages * kStageBytes, "a part is staged in the stage buffers");
constexpr int kMergeBytes = kClusterParts > 1 ? kPartBytes + 8 : 0; // receive area, merge_recv
constexpr u32 kReceivedBytes = (kRowsN * kHeadDimV / 2 + kRowsN) * 4; // half the partner's rows, its LSEs
static_assert(kReceivedBytes <= kPartBytes, "the partner's half lands in the receive area");
constexpr int kSharedBytesUsed =
    1024 + kQBytes + kStages * kStageBytes + kPSlabs * kPBytes + 4 * kRowFloats + 8 * kNumBarriers + kMergeBytes;
static_assert(!kWarpgroupDecode || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");
static_assert(!kWarpgroupDecode || kRowsN * kOutStride * 4 <= kStages * kStageBytes,
              "O staging fits the stage buffers");
// merge_staged_pair's: the rows, their LSEs, a state word (and padding) and
// the merge's weights and scales.
static_assert(!kWarpgroupDecode || (kStagedLse + kRowsN + 4 + 3 * kRowsN) * 4 <= kStages * kStageBytes,
              "a pair's staged rows and merge state fit the stage buffers");
static_assert(kHeadDimQK % 64 == 0 && kHeadDimV % 64 == 0, "whole 64-column slabs");
typedef sm90::Wgmma<MmaElem, kRowsN> WgmmaS;
typedef sm90::Wgmma<MmaElem, kRowsN> WgmmaO;

// Named barriers (0 is the block's): 1 for one consumer's warps; with 64
// rows, kBarOut (both consumers' products done, row sums written) and the
// hand-overs of consume_rows.
// Paired consumers: 1 + c for consumer c's warps, kBarPair (both
// consumers' row maxima and totals published) and kBarHanded (consumer 1's
// share of O staged).
// kBarQuery: both consumers' split of q (kSplitQuery) stored.
enum {
  kBarPair = 3,
  kBarHanded = 4,
  kBarOut = 6,
  kBarScale0 = 7,
  kBarScale1 = 8,
  kBarPa = 9,
  kBarPb = 10,
  kBarQuery = 11,
};

struct Layout {
  u32 q, kv, p;
  float *red;   // one consumer: [warp][kRowsN] row maxima per tile, row sums at the end,
                // then [kRowsN] row maxima (paired) and totals; paired consumers: one such
                // block of kConsumerRowFloats each; consume_rows: its row maxima, rescale
                // factors and row sums
  float *total; // [kRowsN]: row sums at the end (`consume`, consume_fp8's consumer 0)
  float *q_unscale; // [kRowsN] (kSplitQuery): what undoes each q row's scale on S^T
  u32 bars;
  MLAGEN_DEVICE u32 q_full() const { return bars; }
  MLAGEN_DEVICE u32 full(int stage, int slab = 0) const { return bars + 8 * (1 + stage * kFullPerStage + slab); }
  MLAGEN_DEVICE u32 empty(int stage, int half = 0) const {
    return bars + 8 * (1 + kStages * kFullPerStage + stage * kEmptyPerStage + half);
  }
  MLAGEN_DEVICE u32 merge_recv() const { return bars + 8 * kNumBarriers; }
  MLAGEN_DEVICE u32 received() const { return bars - kPartBytes; } // the partner's part
  // A merge pair's row LSEs, in the place of warp 0's row sums (read by
  // the same threads just before).
  MLAGEN_DEVICE float *part_lse() const { return red; }
  MLAGEN_DEVICE u32 stage(int it) const { return kv + (it % kStages) * kStageBytes; }
};

MLAGEN_DEVICE void store_shared_u16(u32 addr, u32 v) {
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(addr), "h"((unsigned short)v) : "memory");
}
MLAGEN_DEVICE void store_shared_u32x2(u32 addr, u32 x, u32 y) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(x), "r"(y) : "memory");
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled slab.
MLAGEN_DEVICE u32 swizzled(int row, int chunk) { return row * 128 + ((chunk ^ (row % 8)) * 16); }

// The half of tile it's stage freed first: an even tile's owner (consumer
// 0) frees slabs 0..3 right after its own product, while consumer 1 reads
// slabs 4..8 last; an odd tile's are freed the other way round.
MLAGEN_DEVICE int first_half(int it) { return kSplitStages ? it % 2 : 0; }

// The producer: Q, then every tile of the item. Thread t copies 16-byte
// chunk t % 8 of rows t / 8 + 16 i of every slab; the row's page is looked
// up one tile ahead, so the block table's latency hides behind the wait for
// a free buffer.

MLAGEN_DEVICE void produce(const Job &job, const PagedCache &cache, const Layout &lay, int num_tiles, int ptid) {
  const int row = ptid / 8;
  const int chunk = ptid % 8;
  constexpr int kPasses = kTileK / 16;
  int page[kPasses];
  auto lookup = [&](int it) {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int key = job.key_begin + it * kTileK + row + 16 * i;
      page[i] = key < job.block_end ? cache.page_of(key) : -1;
    }
  };
  lookup(0);
  // One consumer: a chunk with a partial slot (the reduce merges it) streams
  // evict-first from L2 (H200, bf16 H16 B1 S32768 26.7 -> 25.5 us, B4-B8
  // 37.2-37.3 -> 34.1-34.6, B32 55.7 -> 53.8); chunks merged in a cluster
  // (B64: 89.5 -> 91.8) and whole requests keep plain copies.
  const nv::L2Stream stream = nv::l2_stream(!kSplitStages && job.slot >= 0);
  for (int it = 0; it < num_tiles; ++it) {
    const u32 dst = lay.stage(it);
    const int k0 = job.key_begin + it * kTileK;
    // Two consumers free the halves of a stage at different times; each
    // half refills as soon as it is free, in the order they free up.
#pragma unroll
    for (int h = 0; h < (kSplitStages ? 2 : 1); ++h) {
      const int half = first_half(it) ^ h;
      const int s_begin = kSplitStages && half == 1 ? 4 : 0;
      const int s_end = kSplitStages && half == 0 ? 4 : kSlabs;
      if (it >= kStages)
        sm90::mbarrier_wait(lay.empty(it % kStages, half), (it / kStages - 1) & 1);
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const int r = row + 16 * i;
        const bool valid = page[i] >= 0;
        // A row past the keys reads nothing and is zero-filled.
        const u16 *src = (valid ? cache.row(page[i], k0 + r) : cache.base) + chunk * 8;
        for (int s = s_begin; s < s_end; ++s)
          nv::cp_async_16_l2_128(dst + s * kSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid,
                                 stream);
      }
      // The half's first slab barrier stands for the half.
      sm90::cp_async_arrive(lay.full(it % kStages, s_begin));
    }
    if (it + 1 < num_tiles)
      lookup(it + 1);
  }
}

// Whole pages by bulk tensor copies (TMA): 64-row blocks whose pages are
// one tile each, from a 16-bit cache, when the host passes a tensor map of
// the cache (DecodeParams::kv_map; without one, `produce`).
constexpr bool kBulkTiles = kSplitStages && kPageSize == kTileK && !kCacheFP8;

// Whether tile it of the item is a whole page (one box per slab); else it
// ends inside its page and goes by cp.async, zero-filled past the keys.
MLAGEN_DEVICE bool fills_page(const Job &job, int it) {
  const int k0 = job.key_begin + it * kTileK;
  return k0 % kTileK == 0 && k0 + kTileK <= job.block_end;
}

// Producer warps for each half of a stage (`copiers` of them; this is
// number `copier`): lane 0 of the first copies the first kStages tiles'
// halves as one 64 x 64 box per slab, completing on the slab's own full
// barrier. Later whole tiles are copied by the consumer that frees the half
// (consume_rows's `free_half`), which saves the hand-over to this warp. A
// tile that does not fill its page (an item's last) is copied by the warps
// with cp.async, which zero-fills the rows past the keys, and announced on
// the slab barriers (one arrival a warp) once all of it has landed; so is
// every tile of a launch without a tensor map (kv_map null: two warps a
// half), which keeps one consumer path for both (a second doubled the
// entry's compile time). The consumers arrive on a half's empty barrier
// only for such tiles, so its phases count them: the warps wait for each in
// turn, and none can complete twice before they wait (the consumers need
// the tile first).
MLAGEN_DEVICE void produce_bulk(const Job &job, const PagedCache &cache, const void *kv_map, const Layout &lay,
                                int num_tiles, int half, int copier, int copiers, int lane) {
  const int s_begin = half == 0 ? 0 : 4;
  const int s_end = half == 0 ? 4 : kSlabs;
  // The tile's page, looked up a tile ahead (lane 0).
  int page = lane == 0 && num_tiles > 0 ? cache.page_of(job.key_begin) : 0;
  if (lane == 0 && kv_map != nullptr)
    sm90::prefetch_tensor_map(kv_map);
  u32 parity = 0; // bit st: the parity of stage st's next empty phase
  for (int it = 0; it < num_tiles; ++it) {
    const u32 dst = lay.stage(it);
    const int k0 = job.key_begin + it * kTileK;
    const bool whole = kv_map != nullptr && fills_page(job, it);
    if (it >= kStages) {
      if (whole)
        continue;
      const int st = it % kStages;
      sm90::mbarrier_wait(lay.empty(st, half), (parity >> st) & 1);
      parity ^= 1u << st;
    }
    if (whole) {
      if (lane == 0) {
        const unsigned long long policy = nv::l2_evict_first_policy();
        for (int s = s_begin; s < s_end; ++s) {
          sm90::mbarrier_arrive_expect_tx(lay.full(it % kStages, s), kSlabBytes);
          sm90::tma_load_3d(dst + s * kSlabBytes, kv_map, 64 * s, 0, page, lay.full(it % kStages, s), policy);
        }
      }
    } else {
      // A tile spans at most two pages: both looked up once (a lookup a row
      // kept the copies waiting on one table load after another).
      const int first_page = cache.page_of(k0);
      const int last_page = cache.page_of(min_int(k0 + kTileK, job.block_end) - 1);
      const int chunk = lane % 8;
      for (int r = lane / 8 + 4 * copier; r < kTileK; r += 4 * copiers) {
        const int key = k0 + r;
        const bool valid = key < job.block_end;
        const int pg = (unsigned)key / kPageSize == (unsigned)k0 / kPageSize ? first_page : last_page;
        const u16 *src = (valid ? cache.row(pg, key) : cache.base) + chunk * 8;
        for (int s = s_begin; s < s_end; ++s)
          nv::cp_async_16(dst + s * kSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid);
      }
      sm90::cp_async_wait_all();
      sm90::fence_proxy_async(); // for wgmma: the consumers do not fence in bulk mode
      __syncwarp();
      if (lane == 0)
        for (int s = s_begin; s < s_end; ++s)
          sm90::mbarrier_arrive(lay.full(it % kStages, s));
    }
    const int next = k0 + kTileK;
    if (lane == 0 && it + 1 < min_int(num_tiles, kStages))
      page = cache.page_of(next);
  }
}

// Q, by all four producer warps.
MLAGEN_DEVICE void produce_q(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                             long long q_head_stride, const Layout &lay, int ptid) {
  const int row = ptid / 8;
  const int chunk = ptid % 8;
#pragma unroll
  for (int r = row; r < kRowsN; r += 16) {
    const int g = job.row0 + r;
    const bool valid = is_real_row(g);
    const u16 *src =
        valid ? reinterpret_cast<const u16 *>(q_row(q, g, q_token_stride, q_head_stride)) + chunk * 8 : cache.base;
#pragma unroll
    for (int s = 0; s < kSlabs; ++s)
      nv::cp_async_16(lay.q + s * kQSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid);
  }
  sm90::cp_async_arrive(lay.q_full());
}

MLAGEN_DEVICE void store_shared_16(u32 addr, const Raw16 &v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
               "r"(v.w[3])
               : "memory");
}

// An fp8 cache (one consumer): Q and the tiles go through registers,
// converted exactly to fp16 (the operand type, see MmaElem) on their way
// into the slabs. Thread t holds 16-byte chunks t % 4 + 4 s (slab s) of rows
// t / 4 and t / 4 + 32; each chunk becomes two swizzled 16-byte fp16
// chunks. Two tiles are in registers at a time: one is stored while the
// next one's loads fly.
struct FP8Tile {
  Raw16 chunk[2][kSlabs];
  int page[2]; // -1: past the keys (zeros, nothing read)
};

MLAGEN_DEVICE Raw16 load_shared_16(u32 addr) {
  Raw16 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "r"(addr)
               : "memory");
  return v;
}

// 16 fp8 of a raw chunk as 16 fp16 operands: 16-byte chunks `chunk` and
// chunk + 1 of row r of the fp16 slab at `slab`.
MLAGEN_DEVICE void store_widened(u32 slab, int r, int chunk, const Raw16 &raw) {
  Raw16 lo, hi;
  fp8x4_to_operands(raw.w[0], lo.w[0], lo.w[1]);
  fp8x4_to_operands(raw.w[1], lo.w[2], lo.w[3]);
  fp8x4_to_operands(raw.w[2], hi.w[0], hi.w[1]);
  fp8x4_to_operands(raw.w[3], hi.w[2], hi.w[3]);
  store_shared_16(slab + swizzled(r, chunk), lo);
  store_shared_16(slab + swizzled(r, chunk + 1), hi);
}
// Raw chunk c (16 columns) of a half's rows widened into the stage at `stage`.
MLAGEN_DEVICE void widen_raw_chunk(u32 stage, int half, int r, int c, const Raw16 &raw) {
  const int col = 256 * half + 16 * c;
  store_widened(stage + col / 64 * kSlabBytes, r, col % 64 / 8, raw);
}

// Q as fp16 operands through registers (fp8 q converted exactly, bf16 q
// rounded), by the four producer warps.
MLAGEN_DEVICE void produce_q_fp16(const Job &job, const void *q, long long q_token_stride, long long q_head_stride,
                                  const Layout &lay, int ptid) {
  const int chunk = ptid % 8;
  for (int row = ptid / 8; row < kRowsN; row += 16) {
    const int g = job.row0 + row;
    const u8 *src = q_row(q, g, q_token_stride, q_head_stride);
#pragma unroll
    for (int sl = 0; sl < kSlabs; ++sl) {
      const Raw16 zero = {{0u, 0u, 0u, 0u}};
      const Raw16 v = is_real_row(g) ? q_chunk_as_fp16(src, sl * 64 + chunk * 8) : zero;
      store_shared_16(lay.q + sl * kQSlabBytes + swizzled(row, chunk), v);
    }
  }
  sm90::fence_proxy_async(); // read by wgmma (the async proxy)
  sm90::mbarrier_arrive(lay.q_full());
}

MLAGEN_DEVICE void produce_fp8(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                               long long q_head_stride, const Layout &lay, int num_tiles, int ptid) {
  if (num_tiles > 0)
    produce_q_fp16(job, q, q_token_stride, q_head_stride, lay, ptid);
  const int row0 = ptid / 4;
  const int quarter = ptid % 4;
  auto lookup = [&](FP8Tile &t, int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int key = job.key_begin + it * kTileK + row0 + 32 * pass;
      t.page[pass] = key < job.block_end ? cache.page_of(key) : -1;
    }
  };
  // The cache is read once: evict-first in L2 (H200, fp8 B32 H16 46.1 ->
  // 44.1 us, B128 H128 579 -> 569; the bf16 cp.async stream measured slower
  // with it at B64 and B128 and keeps the default).
  const unsigned long long stream = nv::l2_evict_first_policy();
  auto fetch = [&](FP8Tile &t, int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int page = t.page[pass];
      const u8 *src = cache.row8(page < 0 ? 0 : page, job.key_begin + it * kTileK + row0 + 32 * pass) + quarter * 16;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl) {
        if (page >= 0)
          nv::load_global_16(t.chunk[pass][sl].w, src + sl * 64, stream);
        else
          t.chunk[pass][sl] = Raw16{{0u, 0u, 0u, 0u}};
      }
    }
  };
  auto put = [&](const FP8Tile &t, int it) {
    if (it >= kStages)
      sm90::mbarrier_wait(lay.empty(it % kStages), (it / kStages - 1) & 1);
    const u32 dst = lay.stage(it);
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int r = row0 + 32 * pass;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
        store_widened(dst + sl * kSlabBytes, r, 2 * quarter, t.chunk[pass][sl]);
    }
    sm90::fence_proxy_async();
    sm90::mbarrier_arrive(lay.full(it % kStages));
  };
  // Two tiles by two, so that each buffer is a named variable (registers).
  FP8Tile even, odd;
  if (num_tiles > 0) {
    lookup(even, 0);
    fetch(even, 0);
  }
  if (num_tiles > 1) {
    lookup(odd, 1);
    fetch(odd, 1);
  }
  for (int it = 0; it < num_tiles; it += 2) {
    put(even, it);
    if (it + 2 < num_tiles) {
      lookup(even, it + 2);
      fetch(even, it + 2);
    }
    if (it + 1 < num_tiles) {
      put(odd, it + 1);
      if (it + 3 < num_tiles) {
        lookup(odd, it + 3);
        fetch(odd, it + 3);
      }
    }
  }
}

// 64-row blocks on an fp8 cache: the stage halves hold fp16 operands, as
// for a 16-bit cache, widened by the producer warps in place. A half's raw
// fp8 rows (columns 0..255 or 256..575) land in the top of the half's own
// region, in 128-byte swizzled slabs of 64 rows (TMA boxes of the cache
// read as 16-bit pairs; the last box of the second half is zero past
// column 575). Raw chunks 0..7 of a row widen below the raw slabs (the
// half's first two fp16 slabs) and go first; the rest are read into
// registers and, once every producer thread has read its own, written over
// the raw bytes. With a tensor map of a cache of 64-key pages, a whole
// tile's raw halves come by TMA, issued by the consumer that frees the
// half (as for a 16-bit cache) on the half's raw barrier (full barriers 1
// and 5, unused by halves that complete as one); other tiles, and every
// tile without a map, by the producer's cp.async.
constexpr int kBarWiden = 12;
MLAGEN_DEVICE int raw_boxes(int half) { return half == 0 ? 2 : 3; }
MLAGEN_DEVICE u32 raw_slabs(u32 stage, int half) { return stage + (half == 0 ? 2 : 6) * kSlabBytes; }
MLAGEN_DEVICE u32 raw_barrier(const Layout &lay, int it, int half) { return lay.full(it % kStages, 4 * half + 1); }
// 16-byte chunk c of row r of a half's raw bytes.
MLAGEN_DEVICE u32 raw_chunk(u32 raw, int r, int c) { return raw + (c / 8) * kSlabBytes + swizzled(r, c % 8); }

// The producer asks L2 for tile it + 2's raw bytes as it starts tile it,
// so that the copy issued when tile it's halves are freed (free_half) finds
// them there: the raw copy is on each half's path from free to ready (B128
// H128 380.9-383.5 -> 371.5-374.2 us; 3 and 5 tiles ahead gained less).
// The 16-bit kernel lost with L2 prefetches (decode-wgmma.md): it is
// power-bound, this one latency-bound.
constexpr int kRawPrefetchTiles = 2;
MLAGEN_DEVICE void issue_raw_half(const Layout &lay, const void *kv_map, int it, int half, int page) {
  const u32 raw = raw_slabs(lay.stage(it), half), bar = raw_barrier(lay, it, half);
  sm90::mbarrier_arrive_expect_tx(bar, raw_boxes(half) * kSlabBytes);
  for (int j = 0; j < raw_boxes(half); ++j)
    sm90::tma_load_3d(raw + j * kSlabBytes, kv_map, 128 * half + 64 * j, 0, page, bar);
}

MLAGEN_DEVICE void produce_fp8_halves(const Job &job, const PagedCache &cache, const void *q,
                                      long long q_token_stride, long long q_head_stride, const void *kv_map,
                                      const Layout &lay, int num_tiles, int ptid) {
  if (num_tiles == 0)
    return;
  const bool tma = kv_map != nullptr;
  if (tma && ptid == 0)
    for (int it = 0; it < min_int(num_tiles, kStages); ++it)
      if (fills_page(job, it)) {
        const int page = cache.page_of(job.key_begin + it * kTileK);
        issue_raw_half(lay, kv_map, it, first_half(it), page);
        issue_raw_half(lay, kv_map, it, first_half(it) ^ 1, page);
      }
  produce_q_fp16(job, q, q_token_stride, q_head_stride, lay, ptid);
  // Bit 2 (it % kStages) + half: the parity of that region's next raw or
  // empty phase. Each phase is one tile that uses the barrier (with TMA,
  // the consumers release a half only for a tile the producer copies).
  u32 raw_parity = 0, empty_parity = 0;
  for (int e = 0; e < 2 * num_tiles; ++e) {
    const int it = e / 2, half = first_half(it) ^ (e % 2);
    const int region = 2 * (it % kStages) + half;
    const u32 stage = lay.stage(it), raw = raw_slabs(stage, half);
    const int chunks = half == 0 ? 16 : 20; // raw 16-byte chunks of a row
    if (tma && ptid == 32 && e % 2 == 0 && it + kRawPrefetchTiles < num_tiles &&
        fills_page(job, it + kRawPrefetchTiles)) { // warp 1: warp 0's lane 0 issued the first tiles
      const int ahead = cache.page_of(job.key_begin + (it + kRawPrefetchTiles) * kTileK);
      for (int h = 0; h < 2; ++h)
        for (int j = 0; j < raw_boxes(h); ++j)
          sm90::tma_prefetch_3d(kv_map, 128 * h + 64 * j, 0, ahead);
    }
    if (tma && fills_page(job, it)) {
      sm90::mbarrier_wait(raw_barrier(lay, it, half), (raw_parity >> region) & 1);
      raw_parity ^= 1u << region;
    } else {
      if (it >= kStages) {
        sm90::mbarrier_wait(lay.empty(it % kStages, half), (empty_parity >> region) & 1);
        empty_parity ^= 1u << region;
      }
      const int k0 = job.key_begin + it * kTileK;
      for (int i = ptid; i < kTileK * chunks; i += 128) {
        const int r = i / chunks, c = i % chunks, key = k0 + r;
        const bool valid = key < job.block_end;
        // A row past the keys reads nothing and is zero-filled.
        const u8 *src = cache.row8(valid ? cache.page_of(key) : 0, valid ? key : 0) + 256 * half + 16 * c;
        nv::cp_async_16_l2_128(raw_chunk(raw, r, c), src, valid);
      }
      nv::cp_async_commit();
      nv::cp_async_wait<0>();
      sm90::named_barrier_sync(kBarWiden, 128); // every thread's copies landed
    }
    // Two threads a row: thread t widens chunks 4 (t % 2) .. + 3 of row
    // t / 2 first, then holds its share of the rest (chunks 8.., 4 or 6).
    const int r = ptid / 2, side = ptid % 2;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int c = 4 * side + k;
      widen_raw_chunk(stage, half, r, c, load_shared_16(raw_chunk(raw, r, c)));
    }
    const int held = (chunks - 8) / 2, c0 = 8 + held * side;
    Raw16 keep[6];
#pragma unroll
    for (int k = 0; k < 6; ++k)
      if (k < held)
        keep[k] = load_shared_16(raw_chunk(raw, r, c0 + k));
    sm90::named_barrier_sync(kBarWiden, 128); // the raw bytes are read
#pragma unroll
    for (int k = 0; k < 6; ++k)
      if (k < held)
        widen_raw_chunk(stage, half, r, c0 + k, keep[k]);
    sm90::fence_proxy_async(); // read by wgmma (the async proxy)
    // The half's first slab barrier stands for the half.
    sm90::mbarrier_arrive(lay.full(it % kStages, 4 * half));
  }
}

// fp8 operands (kFP8Operands): Q and the tiles are copied raw. 16-byte
// chunk c of a row lands in slab c / 8 at swizzled chunk c % 8.
MLAGEN_DEVICE u32 fp8_operand_at(u32 slabs, int slab_bytes, int row, int chunk) {
  return slabs + (chunk / 8) * slab_bytes + swizzled(row, chunk % 8);
}

// fp8 Q in 8-byte copies (fp8 q rows are only 8-byte aligned; bf16 q is
// split by the consumers, `split_q`), then the tiles: thread t copies
// 16-byte chunks t % 4 + 4 s of rows t / 4 and t / 4 + 32 (a warp reads 64
// contiguous bytes of 8 rows a copy, asking L2 for whole 128-byte lines as
// `produce` does); each row's page is looked up a tile ahead.
MLAGEN_DEVICE void produce_fp8_operands(const Job &job, const PagedCache &cache, const void *q,
                                        long long q_token_stride, long long q_head_stride, const Layout &lay,
                                        int num_tiles, int ptid) {
  if (num_tiles == 0)
    return;
  if (!kSplitQuery) {
    constexpr int kPieces = kHeadDimQK / 8; // 8-byte pieces of a q row
    for (int i = ptid; i < kRowsN * kPieces; i += 128) {
      const int row = i / kPieces, piece = i % kPieces;
      const int g = job.row0 + row;
      const bool valid = is_real_row(g);
      const u8 *src = valid ? q_row(q, g, q_token_stride, q_head_stride) + piece * 8 : cache.row8(0, 0);
      nv::cp_async_8(fp8_operand_at(lay.q, kQSlabBytes, row, piece / 2) + (piece % 2) * 8, src, valid);
    }
    sm90::cp_async_arrive(lay.q_full());
  }
  const int row0 = ptid / 4;
  const int quarter = ptid % 4;
  int page[2];
  auto lookup = [&](int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int key = job.key_begin + it * kTileK + row0 + 32 * pass;
      page[pass] = key < job.block_end ? cache.page_of(key) : -1;
    }
  };
  lookup(0);
  // A chunk of a split request streams evict-first from L2 (H200, fp8 B64
  // H16 58.7 -> 57.1 us, B32 43.2 -> 38.6-39.9, B16 32.0 -> 29.7: what
  // else is in L2 stays); a whole request keeps plain copies (B128 92.1
  // against 94 evict-first, 98 with an explicit evict_normal policy).
  // 32-row producers spilled with the policy register.
  const nv::L2Stream stream = nv::l2_stream(kRowsN == 16 && job.slot != -1);
  for (int it = 0; it < num_tiles; ++it) {
    if (it >= kStages)
      sm90::mbarrier_wait(lay.empty(it % kStages), (it / kStages - 1) & 1);
    const u32 dst = lay.stage(it);
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int r = row0 + 32 * pass;
      const bool valid = page[pass] >= 0;
      // A row past the keys reads nothing and is zero-filled.
      const u8 *src = cache.row8(valid ? page[pass] : 0, job.key_begin + it * kTileK + r) + quarter * 16;
#pragma unroll
      for (int s = 0; s < kHeadDimQK / 64; ++s)
        nv::cp_async_16_l2_128(fp8_operand_at(dst, kSlabBytes, r, quarter + 4 * s), src + s * 64, valid, stream);
    }
    sm90::cp_async_arrive(lay.full(it % kStages));
    if (it + 1 < num_tiles)
      lookup(it + 1);
  }
  sm90::cp_async_wait_all(); // no copy outlives the thread
}

// A consumer's warps. Accumulator element e of an 8-column group j of warp
// w, lane (g = lane / 4, quad = lane % 4), is row 16 w + g + 8 (e / 2),
// column 8 j + 2 quad + e % 2. In S^T rows are keys and columns q rows (of
// the consumer's); in O^T rows are output columns (within a 64-column
// chunk) and columns q rows (of the block). A thread thus sees q rows
// 2 quad + {0, 1} + 8 j: its `hd` = 2 j + e % 2.
MLAGEN_DEVICE int q_row_of(int hd, int quad) { return 8 * (hd / 2) + 2 * quad + hd % 2; }

// S^T of a tile (one consumer): causal mask (q_len > 1, or keys past the
// item), then this warp's maxima of its 16 keys per q row, then the
// consumer's 4 warps' through `red`; updates the rows' states and gives
// each row's rescale factor and exp2 base.
MLAGEN_DEVICE void mask_and_update(float (&s)[kRowsN / 2], const Job &job, int k0, float *red, int bar,
                                   RowState (&rows)[kRowsN / 4], float (&alpha)[kRowsN / 4],
                                   float (&base)[kRowsN / 4], int warp, int lane) {
  constexpr int kHd = kRowsN / 4;
  const int group = lane / 4;
  const int quad = lane % 4;
  if (k0 + kTileK > job.mask_from) {
#pragma unroll
    for (int e = 0; e < kRowsN / 2; ++e) {
      const int key = k0 + 16 * warp + group + 8 * (e % 4 / 2);
      // One query token: every row ends where the first does.
      const int end = kQLen == 1 ? job.mask_from : job.row_end(job.row0 + q_row_of(2 * (e / 4) + e % 2, quad));
      if (key >= end)
        s[e] = kNegInf;
    }
  }
  float m[kHd];
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int e = 4 * (hd / 2) + hd % 2;
    m[hd] = max_float(s[e], s[e + 2]);
    m[hd] = max_float(m[hd], shfl_xor(m[hd], 4));
    m[hd] = max_float(m[hd], shfl_xor(m[hd], 8));
    m[hd] = max_float(m[hd], shfl_xor(m[hd], 16));
    if (group == 0)
      red[warp * kRowsN + q_row_of(hd, quad)] = m[hd];
  }
  sm90::named_barrier_sync(bar, 128); // maxima visible
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float tile_max = max_float(max_float(red[r], red[kRowsN + r]),
                                     max_float(red[2 * kRowsN + r], red[3 * kRowsN + r]));
    alpha[hd] = rows[hd].update(tile_max * job.unit, base[hd]);
  }
}

// One consumer's row sums: this thread's keys, the warp's, then the 4 warps
// in warp order (the result does not depend on timing), into total (for
// warp 0's group 0). Every warp read the last tile's maxima before the last
// P barrier, so their slots in red are free.
MLAGEN_DEVICE void row_totals(float *red, float *total, int bar, const RowState (&rows)[kRowsN / 4], int warp,
                              int lane) {
  constexpr int kHd = kRowsN / 4;
  const int group = lane / 4;
  const int quad = lane % 4;
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    float sum = rows[hd].sum;
    sum += shfl_xor(sum, 4);
    sum += shfl_xor(sum, 8);
    sum += shfl_xor(sum, 16);
    if (group == 0)
      red[warp * kRowsN + q_row_of(hd, quad)] = sum;
  }
  sm90::named_barrier_sync(bar, 128);
  if (warp == 0 && group == 0) {
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd) {
      const int r = q_row_of(hd, quad);
      total[r] = red[r] + red[kRowsN + r] + red[2 * kRowsN + r] + red[3 * kRowsN + r];
    }
  }
}

// One consumer's row totals into lay.total, the LSE out. Returns once the
// totals are visible and every warp's products are done (the stage buffers
// are free).
MLAGEN_DEVICE void finish_rows(const Job &job, const Output &output, const Layout &lay, const RowState (&rows)[kRowsN / 4],
                               int warp, int lane) {
  const int group = lane / 4;
  const int quad = lane % 4;
  row_totals(lay.red, lay.total, 1, rows, warp, lane);
  if (warp == 0 && group == 0) {
#pragma unroll
    for (int hd = 0; hd < kRowsN / 4; ++hd) {
      const int r = q_row_of(hd, quad);
      if (kClusterParts > 1 && merge_parts(job) > 1)
        lay.part_lse()[r] = rows[hd].lse(lay.total[r]); // merge_in_cluster adds it
      else if (is_real_row(job.row0 + r))
        output.store_lse(job.row0 + r, rows[hd].lse(lay.total[r]));
    }
  }
  sm90::named_barrier_sync(1, 128);
}

// One consumer's normalised O rows, staged in shared memory (fp32, rows of
// kOutStride), written in 16-byte pieces (8-byte for 16-bit out).
MLAGEN_DEVICE void write_staged(const Job &job, const Output &output, const float *staged, int warp, int lane) {
  constexpr int kPieces = kRowsN * kHeadDimV / 4 / 128;
  static_assert(kPieces == kRowsN, "a thread writes one piece of each row");
  sm90::named_barrier_sync(1, 128);
  const int col = 4 * (warp * 32 + lane);
  if (output.slot < 0) {
    // Final rows: every load, then every store. A load, a store and the
    // branches around them in turn put each load's latency on the block's
    // end (H200, B128 H16 fp8: 0.7 us a step).
    Float4 v[kPieces];
#pragma unroll
    for (int r = 0; r < kPieces; ++r)
      v[r] = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
#pragma unroll
    for (int r = 0; r < kPieces; ++r)
      if (is_real_row(job.row0 + r))
        output.row(job.row0 + r).store4(col, v[r].x, v[r].y, v[r].z, v[r].w);
    return;
  }
  // Partials in turn: loaded all first they cost B32 H16 fp8 (the steps
  // that write partials) 1 us.
#pragma unroll
  for (int r = 0; r < kPieces; ++r) {
    if (!is_real_row(job.row0 + r))
      continue;
    const Float4 v = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
    output.row(job.row0 + r).store4(col, v.x, v.y, v.z, v.w);
  }
}

// A merge pair's block with its part staged (O rows normalised, fp32,
// then the row LSEs). Each block writes half of the columns: it copies the
// other half of its part, with its LSEs, into the partner's receive area
// (st.async: the bytes complete the partner's merge_recv, with no release
// fence or arrival to wait for), waits for the partner's copy, adds the
// two by LSE as mlagen_decode_reduce would (the leader's part first) and
// writes its half. Halving the copy and the writes of the block that
// finishes last shortens the pair's end (B64 H16 bf16: see
// bench/notes/decode-wgmma.md).
// A block leaves only after its partner's copy has arrived, so no copy
// lands in a block that has gone.
MLAGEN_DEVICE void merge_in_cluster(const Job &job, const Output &output, const Layout &lay, const float *own,
                                    int warp, int lane) {
  constexpr int kHalfQuads = kHeadDimV / 8; // column quads in half a row
  static_assert(128 % kHalfQuads == 0 && kRowsN % (128 / kHalfQuads) == 0, "whole rows a pass");
  constexpr int kRowsPerPass = 128 / kHalfQuads;
  const int tid = warp * 32 + lane;
  const int rank = merge_rank(job);
  const float *own_lse = lay.part_lse();
  sm90::named_barrier_sync(1, 128); // this block's part is staged
  const u32 partner = sm90::cluster_rank() + (rank == 0 ? 1 : -1);
  const u32 to = sm90::cluster_address(lay.received(), partner);
  sm90::cluster_wait(); // the partner has started: its merge_recv exists
  const u32 to_bar = sm90::cluster_address(lay.merge_recv(), partner);
  const int col = 4 * (tid % kHalfQuads);
  const int send_col = col + (rank == 0 ? kHeadDimV / 2 : 0);
  constexpr int kPasses = kRowsN / kRowsPerPass;
  auto row_of = [&](int pass) { return kRowsPerPass * pass + tid / kHalfQuads; }; // this thread's row
  Float4 sent[kPasses];
#pragma unroll
  for (int i = 0; i < kPasses; ++i)
    sent[i] = *reinterpret_cast<const Float4 *>(own + row_of(i) * kOutStride + send_col);
#pragma unroll
  for (int i = 0; i < kPasses; ++i)
    sm90::store_async_f32x4(to + (row_of(i) * kOutStride + send_col) * 4, sent[i].x, sent[i].y, sent[i].z,
                            sent[i].w, to_bar);
  if (tid < kRowsN / 4) {
    const Float4 v = *reinterpret_cast<const Float4 *>(own_lse + 4 * tid);
    sm90::store_async_f32x4(to + (kRowsN * kOutStride + 4 * tid) * 4, v.x, v.y, v.z, v.w, to_bar);
  }
  sm90::mbarrier_wait<true>(lay.merge_recv(), 0);
  const float *received = own + (lay.received() - lay.kv) / 4; // own is lay.kv's part
  const float *leader = rank == 0 ? own : received, *second = rank == 0 ? received : own;
  const float *leader_lse = rank == 0 ? own_lse : received + kRowsN * kOutStride;
  const float *second_lse = rank == 0 ? received + kRowsN * kOutStride : own_lse;
  const int own_col = col + (rank == 0 ? 0 : kHeadDimV / 2);
  // The rows' weights, then every load, then the stores (as write_staged).
  float w0[kPasses], w1[kPasses], scale[kPasses];
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    const int r = row_of(i);
    const int g = job.row0 + r;
    const float lse0 = leader_lse[r], lse1 = second_lse[r];
    const float max_lse = max_float(lse0, lse1);
    // Both parts empty (no key visible): weights 0, output 0, lse -inf.
    const float shift = max_lse == kNegInf ? 0.0f : max_lse * kLog2e;
    w0[i] = exp2_approx(lse0 * kLog2e - shift);
    w1[i] = exp2_approx(lse1 * kLog2e - shift);
    const float weight = w0[i] + w1[i];
    scale[i] = weight > 0.0f ? 1.0f / weight : 0.0f;
    if (rank == 0 && tid % kHalfQuads == 0 && is_real_row(g))
      output.store_lse(g, weight > 0.0f ? max_lse + log2_approx(weight) * kLn2 : kNegInf);
  }
  Float4 a[kPasses], b[kPasses];
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    a[i] = *reinterpret_cast<const Float4 *>(leader + row_of(i) * kOutStride + own_col);
    b[i] = *reinterpret_cast<const Float4 *>(second + row_of(i) * kOutStride + own_col);
  }
#pragma unroll
  for (int i = 0; i < kPasses; ++i) {
    const int g = job.row0 + row_of(i);
    if (is_real_row(g))
      output.row(g).store4(own_col, fma_float(w0[i], a[i].x, w1[i] * b[i].x) * scale[i],
                           fma_float(w0[i], a[i].y, w1[i] * b[i].y) * scale[i],
                           fma_float(w0[i], a[i].z, w1[i] * b[i].z) * scale[i],
                           fma_float(w0[i], a[i].w, w1[i] * b[i].w) * scale[i]);
  }
}

// One consumer's staged rows (consumer 0's with paired consumers) out, or
// into the pair's merge.
MLAGEN_DEVICE void write_or_merge(const Job &job, const Output &output, const Layout &lay, const float *staged,
                                  int warp, int lane) {
  if (kClusterParts > 1 && merge_parts(job) > 1)
    merge_in_cluster(job, output, lay, staged, warp, lane);
  else
    write_staged(job, output, staged, warp, lane);
}

// S^T's k-steps go round kSChains accumulators. The tensor cores add e4m3
// products to an accumulator with fewer bits than fp32, so fp8 operands
// spread them (H200: largest LSE error 7.0e-3 with one, 2.7e-3 with 2 at
// 32 rows and 3 at 16; the same speed); 16-bit products keep one chain.
// Split q's accumulators are twice as wide: two chains (three spilled).
constexpr int kSChains = kFP8Operands ? (kRowsN == 16 && !kSplitQuery ? 3 : 2) : 1;
// Split q (N = 32): element i + 8 of an accumulator is the lo row of
// element i's q row (column + 16), in the same thread.
template <int kAcc>
MLAGEN_DEVICE void add_chains(float (&s)[kRowsN / 2], const float (&chains)[kSChains][kAcc]) {
#pragma unroll
  for (int i = 0; i < kRowsN / 2; ++i) {
    s[i] = chains[0][i];
#pragma unroll
    for (int c = 1; c < kSChains; ++c)
      s[i] += chains[c][i];
#pragma unroll
    for (int c = 0; kAcc > kRowsN / 2 && c < kSChains; ++c)
      s[i] += chains[c][i + kRowsN / 2];
  }
}

// One consumer (16 or 32 rows); 64 rows take consume_rows. P is rounded to
// 16 bits once, as FlashMLA and the prefill do: items of one tile (a few
// large weights) carry that rounding in their output too.
MLAGEN_DEVICE void consume(const Job &job, const Output &output, const Layout &lay, int num_tiles, int warp,
                           int lane, float *staged) {
  constexpr int kHd = kRowsN / 4; // q rows a thread sees
  const int group = lane / 4;
  const int quad = lane % 4;
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(lay.p, 16);

  float o[kVSlabs][kRowsN / 2];
#pragma unroll
  for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
    for (int i = 0; i < kRowsN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[kHd];

  if (num_tiles > 0)
    sm90::mbarrier_wait(lay.q_full(), 0);
  for (int it = 0; it < num_tiles; ++it) {
    const int k0 = job.key_begin + it * kTileK;
    const u32 stage = lay.stage(it);
    const u64 kv_desc = sm90::smem_desc_sw128(stage, kSlabBytes);
    sm90::mbarrier_wait(lay.full(it % kStages), (it / kStages) & 1);
    sm90::fence_proxy_async(); // cp.async wrote through the generic proxy

    float chains[kSChains][kRowsN / 2] = {};
    sm90::wgmma_fence();
#pragma unroll
    for (int i = 0; i < kSlabs * 4; ++i) {
      const int sl = i / 4, ks = i % 4;
      WgmmaS::ss<0>(chains[i % kSChains], kv_desc + (sl * kSlabBytes + ks * 32) / 16,
                    q_desc + (sl * kQSlabBytes + ks * 32) / 16, i >= kSChains);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(chains);
    float s[kRowsN / 2];
    add_chains(s, chains);

    float alpha[kHd], base[kHd];
    mask_and_update(s, job, k0, lay.red, 1, rows, alpha, base, warp, lane);
    // P into its slab: element (q row r, key k) at row r, chunk k / 8,
    // 2-byte lane k % 8. Rows r and r + 1 (e and e + 1) share a key.
#pragma unroll
    for (int j = 0; j < kRowsN / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = 4 * j + 2 * h;
        const float p0 = exp2_approx(s[e] * job.unit - base[2 * j]);
        const float p1 = exp2_approx(s[e + 1] * job.unit - base[2 * j + 1]);
        rows[2 * j].sum += p0;
        rows[2 * j + 1].sum += p1;
        const int r = 8 * j + 2 * quad;
        const int key = 16 * warp + group + 8 * h;
        const u32 at = swizzled(r, key / 8) + (key % 8) * 2;
        const u32 at1 = swizzled(r + 1, key / 8) + (key % 8) * 2;
        const u32 packed = pack2<MmaElem>(p0, p1);
        store_shared_u16(lay.p + at, packed & 0xffffu);
        store_shared_u16(lay.p + at1, packed >> 16);
      }
    }
    sm90::fence_proxy_async();           // P is read by wgmma (the async proxy)
    sm90::named_barrier_sync(1, 128);    // P visible

    bool settled = true;
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd)
      settled = settled && alpha[hd] == 1.0f;
    // Once the maxima settle, alpha is exactly 1 for the whole warp.
    if (!all_lanes(settled)) {
#pragma unroll
      for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
        for (int e = 0; e < kRowsN / 2; ++e)
          o[c][e] *= alpha[2 * (e / 4) + e % 2];
    }

    sm90::fence_array(o); // O settles in its registers before the products
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kTileK / 16; ++ks)
#pragma unroll
      for (int c = 0; c < kVSlabs; ++c)
        WgmmaO::ss<0, 1>(o[c], kv_desc + (c * kSlabBytes + ks * 16 * 128) / 16, p_desc + (ks * 32) / 16, 1);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(o);
    if (lane == 0)
      sm90::mbarrier_arrive(lay.empty(it % kStages)); // the buffer may refill
  }

  finish_rows(job, output, lay, rows, warp, lane);
  // O^T, normalised, through shared memory.
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float scale = RowState::output_scale(lay.total[r]) * job.v_scale;
    const int e0 = 4 * (hd / 2) + hd % 2;
#pragma unroll
    for (int c = 0; c < kVSlabs; ++c) {
      const int col = 64 * c + 16 * warp + group;
      staged[r * kOutStride + col] = o[c][e0] * scale;
      staged[r * kOutStride + col + 8] = o[c][e0 + 2] * scale;
    }
  }
  write_or_merge(job, output, lay, staged, warp, lane);
}

// fp8 operands (kFP8Operands), each consumer. Per tile:
//   S^T [64 keys x N] = K Q^T: e4m3 wgmma from the raw slabs (18 k-steps
//     over kSChains accumulators);
//   softmax as `consume`; P (times 256, so that no p of interest is an e4m3
//     subnormal) as e4m3 plus the e4m3 of its rounding residue (~8 bits
//     together), in the key order below, into one swizzled slab: hi in
//     bytes 0..63 of a row, residue in 64..127;
//   O^T += V^T P_hi^T + V^T P_lo^T: 32 wgmma RS (e4m3 has no transposed
//     shared operand, so V^T comes from registers). Warp w's A rows of
//     64-column chunk c are columns 64 c + 16 w..+15; ldmatrix.x4.trans of
//     32 key rows gives a thread keys 2 t, 2 t + 1 (+ 8 j) of columns 2 g
//     and 2 g + 1, and byte permutes make rows g and g + 8 of the fragment
//     columns 2 g and 2 g + 1, with the 16 keys of each half of a k-step in
//     the order 2 t, 2 t + 1, 2 t + 8, 2 t + 9 (so key k of a 16-key group
//     is P's byte 4 (k % 8 / 2) + k % 2 + 2 (k / 8)); the stage is free once
//     the last fragments are loaded, the products waited for before the
//     next tile.
// Paired (kPairedTiles): `consumer` takes tiles consumer, consumer + 2, ...
// and `merge_pair` joins the two at the end.
constexpr float kPScale = 256.0f;
typedef sm90::WgmmaFP8<kRowsN> WgmmaE4M3;
typedef sm90::WgmmaFP8<kQSlabRows> WgmmaS8; // S^T's products (N = 32 with split q)

// A consume_fp8 consumer's O^T times each row's scale into the fp32
// staging (added to what is staged there with kAdd): o[c][4 j + e] is q row
// 8 j + 2 quad + e % 2, column 64 c + 16 w + 2 g + e / 2.
template <bool kAdd>
MLAGEN_DEVICE void stage_fp8_rows(const float (&o)[kVSlabs][kRowsN / 2], const float (&scale)[kRowsN / 4],
                                  float *staged, int warp, int lane) {
  const int group = lane / 4;
  const int quad = lane % 4;
#pragma unroll
  for (int hd = 0; hd < kRowsN / 4; ++hd) {
    const int r = q_row_of(hd, quad);
    const int e0 = 4 * (hd / 2) + hd % 2;
#pragma unroll
    for (int c = 0; c < kVSlabs; ++c) {
      Float2 *const at = reinterpret_cast<Float2 *>(staged + r * kOutStride + 64 * c + 16 * warp + 2 * group);
      Float2 pair = {o[c][e0] * scale[hd], o[c][e0 + 2] * scale[hd]};
      if (kAdd) {
        const Float2 staged_pair = *at;
        pair.x += staged_pair.x;
        pair.y += staged_pair.y;
      }
      *at = pair;
    }
  }
}

// Paired consumers' O: both publish their row maxima and totals, rescale
// their O^T to the larger maximum over the joint total; consumer 1 stages
// its share, consumer 0 adds its own (mine + theirs: the sum does not
// depend on timing), writes the LSE and the rows.
MLAGEN_DEVICE void merge_pair(int consumer, const Job &job, const Output &output, const Layout &lay,
                              RowState (&rows)[kRowsN / 4], const float (&o)[kVSlabs][kRowsN / 2], int warp,
                              int lane, float *staged) {
  constexpr int kHd = kRowsN / 4;
  const int group = lane / 4;
  const int quad = lane % 4;
  float *const red = lay.red + consumer * kConsumerRowFloats;
  float *const total = red + 5 * kRowsN, *const maxima = red + 4 * kRowsN;
  row_totals(red, total, 1 + consumer, rows, warp, lane);
  if (warp == 0 && group == 0)
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd)
      maxima[q_row_of(hd, quad)] = rows[hd].max;
  // Both consumers' rows published, every product of both done: the stage
  // buffers are free for the staging of O.
  sm90::split_barrier_sync(kBarPair, 256);
  float scale[kHd];
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float m0 = lay.red[4 * kRowsN + r], m1 = lay.red[kConsumerRowFloats + 4 * kRowsN + r];
    const float t0 = lay.red[5 * kRowsN + r], t1 = lay.red[kConsumerRowFloats + 5 * kRowsN + r];
    const float joint = max_float(m0, m1);
    const float shift = joint == kNegInf ? 0.0f : joint;
    const float f0 = exp2_approx(m0 - shift), f1 = exp2_approx(m1 - shift);
    const float sum = t0 * f0 + t1 * f1;
    scale[hd] = RowState::output_scale(sum) * (consumer == 0 ? f0 : f1) * (job.v_scale / kPScale);
    rows[hd].max = joint;
    if (consumer == 0 && warp == 0 && group == 0) {
      if (kClusterParts > 1 && merge_parts(job) > 1)
        lay.part_lse()[r] = rows[hd].lse(sum); // merge_in_cluster adds it
      else if (is_real_row(job.row0 + r))
        output.store_lse(job.row0 + r, rows[hd].lse(sum));
    }
  }
  if (consumer == 1) {
    stage_fp8_rows<false>(o, scale, staged, warp, lane);
    sm90::split_barrier_arrive(kBarHanded, 256);
    return;
  }
  sm90::split_barrier_sync(kBarHanded, 256);
  stage_fp8_rows<true>(o, scale, staged, warp, lane);
  write_or_merge(job, output, lay, staged, warp, lane);
}

// kSplitQuery: both consumers (which wait for the first tile anyway) split
// bf16 q into e4m3 hi + lo while the producer's first copies fly. kG
// threads a row, thread t taking 8-element chunks t % kG + kG i: the row's
// largest |q| sets a power of two 2^e that brings it into [128, 256) (e4m3
// reaches 448), then each pair of elements times 2^e becomes hi and the
// e4m3 of what hi rounded away (split_fp8_pair), stored raw like fp8 q
// (element k of a row at byte k; lo kRowsN rows down). The row's 2^-e goes
// to lay.q_unscale.
MLAGEN_DEVICE void split_q(const Job &job, const void *q, long long q_token_stride, long long q_head_stride,
                           const Layout &lay, int ctid) {
  constexpr int kG = kConsumerThreads / kRowsN; // 16 threads a row
  constexpr int kRowChunks = kHeadDimQK / 8;
  constexpr int kChunks = ceil_div(kRowChunks, kG);
  static_assert(kG <= 32 && 32 % kG == 0, "a row's threads sit in one warp");
  const int row = ctid / kG, sub = ctid % kG;
  const int g = job.row0 + row;
  const bool real = is_real_row(g);
  const u8 *src = real ? q_row(q, g, q_token_stride, q_head_stride) : nullptr;
  Raw16 v[kChunks];
  int top = 0; // largest |q| (bf16 magnitudes compare as integers)
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = sub + kG * i;
    v[i] = Raw16{{0u, 0u, 0u, 0u}};
    if (real && c < kRowChunks)
      v[i] = *reinterpret_cast<const Raw16 *>(src + c * 16);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      top = max_int(top, max_int(v[i].w[w] & 0x7fff, (v[i].w[w] >> 16) & 0x7fff));
  }
#pragma unroll
  for (int m = 1; m < kG; m *= 2)
    top = max_int(top, __shfl_xor_sync(0xffffffffu, top, m));
  // bf16 exponent field E: |q| < 2^(E - 126), so 2^(134 - E) brings it
  // under 256 (and to 128 or more); kept within normal floats.
  const int e = top == 0 ? 0 : min_int(max_int(134 - (top >> 7), -120), 120);
  const float up = __int_as_float((127 + e) << 23);
  if (sub == 0)
    lay.q_unscale[row] = __int_as_float((127 - e) << 23);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = sub + kG * i;
    if (c >= kRowChunks)
      continue;
    u32 hi[4], lo[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      float a, b;
      unpack2<bf16>(v[i].w[w], a, b);
      sm90::split_fp8_pair(a * up, b * up, hi[w], lo[w]);
    }
    const u32 at = fp8_operand_at(lay.q, kQSlabBytes, row, c / 2) + (c % 2) * 8;
    store_shared_u32x2(at, hi[0] | hi[1] << 16, hi[2] | hi[3] << 16);
    store_shared_u32x2(at + kRowsN * 128, lo[0] | lo[1] << 16, lo[2] | lo[3] << 16);
  }
  sm90::fence_proxy_async(); // read by wgmma (the async proxy)
  // Both consumers (every warp converged here).
  sm90::split_barrier_sync(kBarQuery, kConsumerThreads);
}

// `consumer`: 0, or 1 for the second of paired consumers. Inlined, a
// constant argument gives a body per consumer, a run-time one a shared body.
MLAGEN_DEVICE void consume_fp8(int consumer, const Job &job, const void *q, long long q_token_stride,
                               long long q_head_stride, const Output &output, const Layout &lay, int num_tiles,
                               int warp, int lane, float *staged) {
  constexpr int kHd = kRowsN / 4; // q rows a thread sees
  constexpr int kGroups = kRowsN / 8; // 8-column groups of an accumulator
  constexpr int kStep = kPairedTiles ? 2 : 1;
  const int bar = 1 + consumer;
  const int group = lane / 4;
  const int quad = lane % 4;
  const u32 p_slab = lay.p + consumer * kPBytes;
  float *const red = lay.red + consumer * kConsumerRowFloats;
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(p_slab, 16);
  float o[kVSlabs][kRowsN / 2];
#pragma unroll
  for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
    for (int i = 0; i < kRowsN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[kHd];
  // V^T fragments of a part of the 64-column chunks (chunk % kVChunks),
  // k-step: halves, or quarters for paired consumers of 32 rows (whose O^T
  // is 128 registers of the 224 they hold).
  constexpr int kVParts = kPairedTiles && kRowsN == 32 ? 4 : 2;
  constexpr int kVChunks = kVSlabs / kVParts;
  u32 v[kVChunks][2][4] = {};

  if (kSplitQuery)
    split_q(job, q, q_token_stride, q_head_stride, lay, consumer * 128 + warp * 32 + lane);
  else if (num_tiles > 0)
    sm90::mbarrier_wait(lay.q_full(), 0);
  // Paired, tile it - kStages may be the other consumer's: waiting on the
  // parity of it's phase is sound because the producer completes the full
  // barriers in tile order and this consumer has waited on tile it - 2.
  for (int it = consumer; it < num_tiles; it += kStep) {
    const int k0 = job.key_begin + it * kTileK;
    const u32 stage = lay.stage(it);
    const u64 k_desc = sm90::smem_desc_sw128(stage, kSlabBytes);
    sm90::mbarrier_wait(lay.full(it % kStages), (it / kStages) & 1);
    sm90::fence_proxy_async(); // cp.async wrote through the generic proxy

    float chains[kSChains][kQSlabRows / 2] = {};
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kHeadDimQK / 32; ++ks)
      WgmmaS8::ss(chains[ks % kSChains], k_desc + ((ks / 4) * kSlabBytes + (ks % 4) * 32) / 16,
                  q_desc + ((ks / 4) * kQSlabBytes + (ks % 4) * 32) / 16, ks >= kSChains);
    sm90::wgmma_commit();
    auto load_chunk = [&](int c) {
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) {
        u32 r[4];
        nv::ldmatrix_x4_trans(r, fp8_operand_at(stage, kSlabBytes, 32 * ks + lane, 4 * c + warp));
        u32(&f)[4] = v[c % kVChunks][ks];
        f[0] = __byte_perm(r[0], r[1], 0x6420);
        f[1] = __byte_perm(r[0], r[1], 0x7531);
        f[2] = __byte_perm(r[2], r[3], 0x6420);
        f[3] = __byte_perm(r[2], r[3], 0x7531);
      }
    };
    sm90::wgmma_wait<0>();
    sm90::fence_array(chains);
    float s[kRowsN / 2];
    add_chains(s, chains);
    if (kSplitQuery) // undo each q row's scale
#pragma unroll
      for (int e = 0; e < kRowsN / 2; ++e)
        s[e] *= lay.q_unscale[q_row_of(2 * (e / 4) + e % 2, quad)];

    float alpha[kHd], base[kHd];
    mask_and_update(s, job, k0, red, bar, rows, alpha, base, warp, lane);
    // P: this thread's keys 16 w + g (+ 8) sit at slots 16 w + 4 (g / 2) +
    // g % 2 (+ 2) of rows 8 j + 2 quad + {0, 1}. Lanes g and g ^ 1 swap
    // halves so that each stores whole words: even g the rows 8 j + 2 quad,
    // odd g the rows 8 j + 2 quad + 1.
    const int mine = group % 2;
    u32 keep_hi[kGroups / 2] = {}, give_hi[kGroups / 2] = {}, keep_lo[kGroups / 2] = {}, give_lo[kGroups / 2] = {};
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = 4 * j + h;
        const float p0 = exp2_approx(s[e] * job.unit - base[2 * j + h]);
        const float p1 = exp2_approx(s[e + 2] * job.unit - base[2 * j + h]);
        rows[2 * j + h].sum += p0 + p1;
        u32 hi, lo;
        sm90::split_fp8_pair(p0 * kPScale, p1 * kPScale, hi, lo);
        const int shift = 16 * (j % 2);
        if (h == mine) {
          keep_hi[j / 2] |= hi << shift;
          keep_lo[j / 2] |= lo << shift;
        } else {
          give_hi[j / 2] |= hi << shift;
          give_lo[j / 2] |= lo << shift;
        }
      }
    const u32 at = 16 * warp + 4 * (group / 2);
#pragma unroll
    for (int w = 0; w < kGroups / 2; ++w) {
      const u32 got_hi = __shfl_xor_sync(0xffffffffu, give_hi[w], 4);
      const u32 got_lo = __shfl_xor_sync(0xffffffffu, give_lo[w], 4);
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        // Bytes: even g's key, odd g's key, even g's key + 8, odd g's.
        const u32 sel = mine == 0 ? (jj == 0 ? 0x5140 : 0x7362) : (jj == 0 ? 0x1504 : 0x3726);
        const int row = 8 * (2 * w + jj) + 2 * quad + mine;
        nv::store_shared_u32(p_slab + swizzled(row, at / 16) + at % 16, __byte_perm(keep_hi[w], got_hi, sel));
        nv::store_shared_u32(p_slab + swizzled(row, 4 + at / 16) + at % 16, __byte_perm(keep_lo[w], got_lo, sel));
      }
    }
    sm90::fence_proxy_async();          // P is read by wgmma (the async proxy)
    sm90::named_barrier_sync(bar, 128); // P visible

    bool settled = true;
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd)
      settled = settled && alpha[hd] == 1.0f;
    if (!all_lanes(settled)) {
#pragma unroll
      for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
        for (int e = 0; e < kRowsN / 2; ++e)
          o[c][e] *= alpha[2 * (e / 4) + e % 2];
    }
    sm90::fence_array(o);
    // V^T after the softmax (loading it under S^T ran slower on the H200,
    // B128 104 against 98 us), a part of the chunks at a time into the same
    // registers, each part's products done before the next part's
    // fragments overwrite them.
#pragma unroll
    for (int half = 0; half < kVParts; ++half) {
      if (half > 0) {
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        sm90::fence_array(v);
      }
#pragma unroll
      for (int c = kVChunks * half; c < kVChunks * (half + 1); ++c)
        load_chunk(c);
      if (half == kVParts - 1 && lane == 0)
        sm90::mbarrier_arrive(lay.empty(it % kStages)); // K and V read: the buffer may refill
      sm90::fence_array(v);
      sm90::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) // hi, then the residue, of k-step ks
#pragma unroll
        for (int c = kVChunks * half; c < kVChunks * (half + 1); ++c) {
          WgmmaE4M3::rs(o[c], v[c % kVChunks][ks], p_desc + (ks * 32) / 16, 1);
          WgmmaE4M3::rs(o[c], v[c % kVChunks][ks], p_desc + (64 + ks * 32) / 16, 1);
        }
    }
    sm90::wgmma_commit();
    // Every product done before the next tile touches o or v: with products
    // left in flight past here ptxas serialises them all (C7514, C7515).
    sm90::wgmma_wait<0>();
    sm90::fence_array(o);
    sm90::fence_array(v);
  }

  if (kPairedTiles) {
    merge_pair(consumer, job, output, lay, rows, o, warp, lane, staged);
    return;
  }
  finish_rows(job, output, lay, rows, warp, lane);
  // O^T, normalised (P carried kPScale).
  float scale[kHd];
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd)
    scale[hd] = RowState::output_scale(lay.total[q_row_of(hd, quad)]) * (job.v_scale / kPScale);
  stage_fp8_rows<false>(o, scale, staged, warp, lane);
  write_or_merge(job, output, lay, staged, warp, lane);
}

// 64 q rows (two consumers): Q is the M of both products, as in FlashMLA.
// Tile t's S = Q K^T belongs to consumer t % 2 (its owner); consumer c
// holds O's columns [256 c, 256 c + 256) of all 64 rows. A pair of tiles
// (a even, b odd) runs as
//   consumer 0: softmax of a (from the max after the previous pair) ->
//     publishes m_a, alpha_a; O_L = O_L alpha_a + P_a V_a[L] (P from
//     registers); once consumer 1 has published alpha_b, stores P_a alpha_b
//     into slab 8 of a's stage (K's last 64 columns, free once S_a is
//     done); O_L = O_L alpha_b + P_b V_b[L] (P_b from shared memory);
//     issues S of a + 2.
//   consumer 1: softmax of b (from m_a) -> alpha_b; stores P_b into the P
//     buffer; O_R = O_R alpha_a alpha_b + P_b V_b[R] + (P_a alpha_b) V_a[R];
//     issues S of b + 2.
// (That is the order for 16-bit caches; an fp8 cache's is below,
// kUnscaledPa.)
// One consumer's softmax runs while the other's products keep the tensor
// cores busy, half the products take P from registers, and a row's 64 keys
// sit in one quad of lanes (no cross-warp maxima). Consumer 0 frees the
// first half of each stage (slabs 0..3: V_L), consumer 1 the second (V_R,
// and slab 8 holding P_a), each as soon as its products are done.
// Accumulators (S and O): element 4 j + e of a thread is row 16 warp +
// group + 8 (e / 2), column 8 j + 2 quad + e % 2.
// With an fp8 cache a stage half is ready only after the producer has
// widened it, so consumer 1 takes P_a unscaled and multiplies P_a V_a[R]
// first: tile a's second half refills one product earlier (B128 H128
// 421 -> 402 us; 16-bit caches lose 6% with it, bench/notes/decode-wgmma.md).
constexpr bool kUnscaledPa = kCacheFP8;
typedef sm90::Wgmma<MmaElem, 64> WgmmaRowS;
typedef sm90::Wgmma<MmaElem, 128> WgmmaRowO;

// P (this thread's two rows of a 64-key tile) times its rows' factors, as
// 16-bit into a swizzled [64 rows][64 keys] slab: the A operand of the
// other consumer's product.
MLAGEN_DEVICE void store_rows_p(u32 slab, const float (&s)[32], const float (&scale)[2], int row0, int quad) {
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const int r = k % 2;
    const float v0 = s[2 * k] * scale[r], v1 = s[2 * k + 1] * scale[r];
    const u32 packed = pack2<MmaElem>(v0, v1);
    const u32 at = swizzled(row0 + 8 * r, k / 2) + quad * 4;
    nv::store_shared_u32(slab + at, packed);
  }
}

// S (probabilities) as A fragments: accumulator groups 2 ps and 2 ps + 1
// (keys 16 ps..16 ps + 15) are the A fragment of k-step ps.
MLAGEN_DEVICE void pack_rows_p(u32 (&p)[4][4], const float (&s)[32]) {
#pragma unroll
  for (int ps = 0; ps < 4; ++ps)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      p[ps][j] = pack2<MmaElem>(s[8 * ps + 2 * j], s[8 * ps + 2 * j + 1]);
}

// Staged fp32 rows (kOutStride apart) out by kWriters threads, 16 bytes a
// store: the 64-row kernel's partials.
template <int kWriters>
MLAGEN_DEVICE void write_staged_rows(const Job &job, const Output &output, const float *staged, int tid) {
#pragma unroll 4
  for (int i = 0; i < kRowsN * kHeadDimV / 4 / kWriters; ++i) {
    const int idx = tid + kWriters * i;
    const int r = idx / (kHeadDimV / 4);
    const int col = idx % (kHeadDimV / 4) * 4;
    const int g = job.row0 + r;
    if (!is_real_row(g))
      continue;
    const Float4 v = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
    output.row(g).store4(col, v.x, v.y, v.z, v.w);
  }
}

// A pair's block (merged in the grid) with its rows staged in shared
// memory: fp32 rows of kOutStride, then the rows' LSEs. Unlike
// merge_pair_if_second, a block arrives before it writes anything. The
// first to arrive writes its partial and publishes it (+2 on the counter);
// the second waits for that and merges the partner's partial with its own
// staged rows, so it neither writes its partial nor reads it back. The
// arithmetic and its slot order are merge_pair_if_second's (the reduce's
// bits). The second only waits for a block that has arrived and waits for
// nothing, so co-residency is not needed.
template <int kWriters, class Sync>
MLAGEN_DEVICE void merge_staged_pair(const Job &job, const Output &output, float *staged, int tid, Sync sync) {
  constexpr int kPositions = kRowsN * (kHeadDimV / 4) / kWriters; // a thread's
  static_assert(kWriters >= kRowsN && kPositions % 8 == 0, "a row a thread, whole passes");
  const float *const own_lse = staged + kStagedLse;
  int *const state = reinterpret_cast<int *>(staged + kStagedLse + kRowsN);
  float *const weights = staged + kStagedLse + kRowsN + 4; // [row][2]
  float *const scales = weights + 2 * kRowsN;                       // [row]
  int *const counter = output.arrivals + job.batch * kRowBlocks + job.row0 / kHeadsPerBlock;
  if (tid == 0)
    state[0] = atomic_add_device(counter, 1);
  sync();
  if (state[0] == 0) { // first: the partial, then published
    write_staged_rows<kWriters>(job, output, staged, tid);
    if (tid < kRowsN && is_real_row(job.row0 + tid))
      output.store_lse(job.row0 + tid, own_lse[tid]);
    fence_device();
    sync();
    if (tid == 0) {
      fence_device(); // (the textbook order too: barrier, fence, signal)
      atomic_add_device(counter, 2);
    }
    return;
  }
  if (tid == 0) {
    // Both arrivals and the publication. A counter that did not start at 0
    // (a launch aborted mid-merge) may never read 4 here: after 10 ms the
    // block stops waiting rather than hang. Its rows may then be wrong, and
    // so may the next steps' until the plan is copied again (every copy
    // zeroes the counters); merge_pair_if_second fares no better there.
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      if (atomic_add_device(counter, 0) >= 4)
        break;
      __nanosleep(32);
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 10000000ull);
    *counter = 0; // ready for the next step, or a graph's replay
  }
  sync();
  fence_device(); // the partner's partial, after its publication
  const int first = output.merge[2 * job.batch];
  const int mine = output.slot - first; // this block's slot of the two
  const long long theirs = first + 1 - mine;
  Output final_rows = output;
  final_rows.slot = -1;
  if (tid < kRowsN) {
    const int g = job.row0 + tid;
    const bool real = is_real_row(g);
    const float own = real ? own_lse[tid] : kNegInf;
    const float other = real ? load_l2_f32(output.partial_lse + theirs * kRows + g) : kNegInf;
    pair_row_weights(final_rows, g, real, mine == 0 ? own : other, mine == 0 ? other : own, weights, scales, tid);
  }
  sync();
  const float *part = output.partial_out + theirs * kRows * kHeadDimV;
#pragma unroll 1
  for (int p0 = 0; p0 < kPositions; p0 += 8) {
    Float4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int g = job.row0 + at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
      v[j] = Float4{0.0f, 0.0f, 0.0f, 0.0f};
      if (is_real_row(g))
        load_l2_f32x4(part + (long long)g * kHeadDimV + col, v[j].x, v[j].y, v[j].z, v[j].w);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int r = at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
      if (!is_real_row(job.row0 + r))
        continue;
      const Float4 own = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
      const Float4 a = mine == 0 ? own : v[j], b = mine == 0 ? v[j] : own;
      const float w0 = weights[2 * r], w1 = weights[2 * r + 1], scale = scales[r];
      auto add = [&](float x0, float x1) { return pair_value(w0, x0, w1, x1, scale); };
      final_rows.row(job.row0 + r).store4(col, add(a.x, b.x), add(a.y, b.y), add(a.z, b.z), add(a.w, b.w));
    }
  }
}

// An fp8 cache read with bf16 q keeps the pair merge out of line: inlined
// beside the widening producer it made ptxas spill 76 / 268 bytes (out of
// line 16 / 52; the 16-bit kernels spill less inlined).
template <int kWriters>
__attribute__((device)) __attribute__((noinline)) void merge_staged_pair_outlined(const Job &job, const Output &output,
                                                                                   float *staged, int tid) {
  merge_staged_pair<kWriters>(job, output, staged, tid, [] { sm90::split_barrier_sync(kBarOut, kWriters); });
}

// Bulk-tile kernels (kBulkTiles) wait for each slab, also in launches
// without a tensor map (produce_bulk). One body serves all items (one body
// per case doubled the entry's compile time). Products in a branch made
// ptxas serialise every product (C7520) or inject warpgroup arrivals
// (C7519); a wait in one serialises them too (C7515).
template <int consumer>
MLAGEN_DEVICE void consume_rows(const Job &job, const PagedCache &cache, const void *kv_map, const Output &output,
                                const Layout &lay, int num_tiles, int warp, int lane, float *staged) {
  const int group = lane / 4;
  const int quad = lane % 4;
  const int row0 = 16 * warp + group; // this thread's rows: row0 and row0 + 8
  float *const s_max = lay.red;       // [64] running row maxima (log2 units)
  float *const s_alpha0 = lay.red + 64;  // [64] consumer 0's tile's rescale factors
  float *const s_alpha1 = lay.red + 128; // [64] consumer 1's
  float *const s_sum = lay.red + 192;    // [2][64] row sums at the end
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(lay.p, 16);
  int row_end[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    row_end[r] = job.row_end(job.row0 + row0 + 8 * r);

  float o[2][64]; // two 128-column chunks of this consumer's half of O
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int i = 0; i < 64; ++i)
      o[c][i] = 0.0f;
  float s[32];
  u32 p[4][4];
  float sum[2] = {0.0f, 0.0f};

  // S of tile it, in two commit groups: one per half of the stage, in the
  // order they are refilled (first_half: this consumer's tiles are
  // those with it % 2 == consumer). `between` runs once the first group is
  // issued, before waiting for the second half's copy.
  auto issue_s = [&](int it, auto between) {
    const u32 stage = lay.stage(it);
    const u64 k_desc = sm90::smem_desc_sw128(stage, 16);
    const u32 parity = (it / kStages) & 1;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int half = consumer ^ h;
#pragma unroll
      for (int sl = half == 0 ? 0 : 4; sl < (half == 0 ? 4 : kSlabs); ++sl) {
        // Bulk copies complete slab by slab, in the async proxy that wgmma
        // reads through (no proxy fence: one here would wait for the
        // products in flight); cp.async copies half by half. The wgmma fence
        // after each wait is ours: one ptxas inserts after the wait's loop
        // serialises the products (C7520).
        if (kBulkTiles || sl == 4 * half) {
          sm90::mbarrier_wait(lay.full(it % kStages, sl), parity);
          if (!kBulkTiles && !kCacheFP8) // fp8: the producer fenced its stores
            sm90::fence_proxy_async(); // cp.async wrote through the generic proxy
          sm90::wgmma_fence();
        }
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          WgmmaRowS::ss<0>(s, q_desc + (sl * kQSlabBytes + ks * 32) / 16, k_desc + (sl * kSlabBytes + ks * 32) / 16,
                           h > 0 || sl != 4 * half || ks > 0);
      }
      sm90::wgmma_commit();
      if (h == 0)
        between();
    }
  };
  auto nothing = [] {};
  // O += P V over this consumer's 256 columns of tile it: P from registers.
  auto pv_registers = [&](const u32(&a_frag)[4][4], int it) {
    const u64 v_desc = sm90::smem_desc_sw128(lay.stage(it), kSlabBytes); // LBO: next 64 columns
#pragma unroll
    for (int ps = 0; ps < 4; ++ps)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        WgmmaRowO::rs<1>(o[c], a_frag[ps], v_desc + ((consumer * 4 + 2 * c) * kSlabBytes + ps * 16 * 128) / 16, 1);
  };
  // The same with P from a shared slab.
  auto pv_shared = [&](int it, u64 a_desc) {
    const u64 v_desc = sm90::smem_desc_sw128(lay.stage(it), kSlabBytes);
#pragma unroll
    for (int ps = 0; ps < 4; ++ps)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        WgmmaRowO::ss<1>(o[c], a_desc + (ps * 32) / 16,
                         v_desc + ((consumer * 4 + 2 * c) * kSlabBytes + ps * 16 * 128) / 16, 1);
  };
  auto rescale = [&](const float (&alpha)[2]) {
    // Once the row maxima settle, alpha is exactly 1 for the whole warp.
    if (all_lanes(alpha[0] == 1.0f && alpha[1] == 1.0f))
      return;
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int i = 0; i < 64; ++i)
        o[c][i] *= alpha[(i % 4) / 2];
  };
  // Mask, row maxima and probabilities of S (tile it) against the running
  // maxima `max_prev`: sets the new maxima, the rescale factors and the
  // tile's row sums (this thread's keys).
  auto softmax = [&](int it, const float (&max_prev)[2], float (&max_new)[2], float (&alpha)[2],
                     float (&tile_sum)[2]) {
    const int k0 = job.key_begin + it * kTileK;
    if (k0 + kTileK > job.mask_from) {
#pragma unroll
      for (int i = 0; i < 32; ++i)
        if (k0 + 8 * (i / 4) + 2 * quad + i % 2 >= row_end[(i % 4) / 2])
          s[i] = kNegInf;
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m = kNegInf;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        m = max_float(m, max_float(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
      m = max_float(m, shfl_xor(m, 1));
      m = max_float(m, shfl_xor(m, 2));
      max_new[r] = max_float(max_prev[r], m * job.unit);
      // A row that has seen only masked keys keeps max -inf and base 0.
      base[r] = max_new[r] == kNegInf ? 0.0f : max_new[r];
      alpha[r] = exp2_approx(max_prev[r] - base[r]);
      tile_sum[r] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      s[i] = exp2_approx(s[i] * job.unit - base[(i % 4) / 2]);
      tile_sum[(i % 4) / 2] += s[i];
    }
  };
  // One arrival per warp on a stage half's empty barrier.
  auto release = [&](u32 bar) {
    if (lane == 0)
      sm90::mbarrier_arrive(bar);
  };
  // Tile `done`'s stage half is free (this consumer's last product on it
  // is complete). With bulk copies, when tile done + 2 fills its page the
  // consumer copies it in right away (B128 H128: 6% faster than handing it
  // to a producer warp); a wgmma group completes for the whole warpgroup,
  // so warp 0's wait covers the other warps' reads. Otherwise the producer
  // copies it, once every warp has arrived. `page`: tile done + 2's, loaded
  // at the top of the pair (pages). An fp8 cache's raw halves come the same
  // way when the launch has a tensor map (produce_fp8_halves).
  static_assert(!(kBulkTiles || (kCacheFP8 && kSplitStages)) || kStages == 2,
                "tile done + 2 goes into tile done's stage");
  const bool refills = (kBulkTiles || kCacheFP8) && kv_map != nullptr;
  int pages[2] = {0, 0};
  auto free_half = [&](int done, int half, int page) {
    const int it = done + 2;
    if (!refills || it >= num_tiles || !fills_page(job, it)) {
      release(lay.empty(done % kStages, half));
      return;
    }
    if (warp != 0 || lane != 0)
      return;
    if (kCacheFP8) { // raw bytes, widened by the producer
      issue_raw_half(lay, kv_map, it, half, page);
      return;
    }
    const u32 dst = lay.stage(it);
    const unsigned long long policy = nv::l2_evict_first_policy();
    for (int sl = half == 0 ? 0 : 4; sl < (half == 0 ? 4 : kSlabs); ++sl) {
      sm90::mbarrier_arrive_expect_tx(lay.full(it % kStages, sl), kSlabBytes);
      sm90::tma_load_3d(dst + sl * kSlabBytes, kv_map, 64 * sl, 0, page, lay.full(it % kStages, sl), policy);
    }
  };

  // Consumer 0: P_a (times `scale`) into slab 8 of a's stage, for
  // consumer 1.
  auto store_pa = [&](int a, const float (&scale)[2]) {
    store_rows_p(lay.stage(a) + 8 * kSlabBytes, s, scale, row0, quad);
    sm90::fence_proxy_async(); // P_a is read by wgmma (the async proxy)
    sm90::split_barrier_arrive(kBarPa, kConsumerThreads);
  };
  // Consumer 1, once S_b is done: consumer 0's row maxima and rescale
  // factors of tile a.
  auto take_alpha_a = [&](float (&max_a)[2], float (&alpha_a)[2]) {
    sm90::split_barrier_sync(kBarScale0, kConsumerThreads);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      max_a[r] = s_max[row0 + 8 * r];
      alpha_a[r] = s_alpha0[row0 + 8 * r];
    }
  };
  // Consumer 1: softmax of tile b, its maxima and rescale factors
  // published, P_b (unscaled) stored for consumer 0.
  auto publish_b = [&](int b, const float (&max_a)[2], float (&alpha_b)[2], float (&tile_sum)[2]) {
    float max_b[2];
    softmax(b, max_a, max_b, alpha_b, tile_sum);
    if (quad == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        s_max[row0 + 8 * r] = max_b[r];
        s_alpha1[row0 + 8 * r] = alpha_b[r];
      }
    }
    sm90::split_barrier_arrive(kBarScale1, kConsumerThreads);
    const float one[2] = {1.0f, 1.0f};
    store_rows_p(lay.p, s, one, row0, quad);
    sm90::fence_proxy_async();
    sm90::split_barrier_arrive(kBarPb, kConsumerThreads);
  };

  if (num_tiles > 0) {
    sm90::mbarrier_wait(lay.q_full(), 0);
    if (consumer < num_tiles)
      issue_s(consumer, nothing);
  }
  for (int a = 0; a < num_tiles; a += 2) {
    const int b = a + 1;
    const bool has_b = b < num_tiles;
    if (refills && warp == 0 && lane == 0)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        pages[i] = a + 2 + i < num_tiles ? cache.page_of(job.key_begin + (a + 2 + i) * kTileK) : 0;
    if (consumer == 0) {
      sm90::wgmma_wait<0>(); // S_a, and the last pair's products
      sm90::fence_array(s);
      sm90::fence_array(o);
      float max_prev[2], max_a[2], alpha_a[2], tile_sum[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        max_prev[r] = a == 0 ? kNegInf : s_max[row0 + 8 * r];
      softmax(a, max_prev, max_a, alpha_a, tile_sum);
      __syncwarp(); // every lane of the quad has read s_max
      if (quad == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          s_max[row0 + 8 * r] = max_a[r];
          s_alpha0[row0 + 8 * r] = alpha_a[r];
        }
      }
      sm90::split_barrier_arrive(kBarScale0, kConsumerThreads);
#pragma unroll
      for (int r = 0; r < 2; ++r)
        sum[r] = sum[r] * alpha_a[r] + tile_sum[r];
      rescale(alpha_a);
      pack_rows_p(p, s);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_registers(p, a);
      sm90::wgmma_commit();
      if (kUnscaledPa) {
        const float one[2] = {1.0f, 1.0f};
        store_pa(a, one);
      }
      float alpha_b[2] = {1.0f, 1.0f};
      // Tile a's low half is free once P_a V_a[L] is done: free it before
      // waiting for consumer 1's rescale factors (B32 H128: 1.5% faster than after).
      sm90::wgmma_wait<0>();
      sm90::fence_array(o);
      sm90::fence_array(p);
      free_half(a, 0, pages[0]);
      if (has_b) {
        sm90::split_barrier_sync(kBarScale1, kConsumerThreads);
#pragma unroll
        for (int r = 0; r < 2; ++r)
          alpha_b[r] = s_alpha1[row0 + 8 * r];
      }
      if (!kUnscaledPa)
        store_pa(a, alpha_b);
      if (has_b) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] *= alpha_b[r];
        rescale(alpha_b);
        sm90::split_barrier_sync(kBarPb, kConsumerThreads);
        sm90::fence_array(o);
        sm90::wgmma_fence();
        pv_shared(b, p_desc);
        sm90::wgmma_commit();
      }
      // b's first half is free once P_b V_b is done: release it before
      // waiting on the second half of tile a + 2, which consumer 1 frees.
      auto release_b = [&] {
        sm90::wgmma_wait<1>(); // P_b V_b done; S of a + 2's first half may run on
        sm90::fence_array(o);
        if (has_b)
          free_half(b, 0, pages[1]);
      };
      if (a + 2 < num_tiles) {
        issue_s(a + 2, release_b);
      } else {
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        if (has_b)
          free_half(b, 0, pages[1]);
      }
    } else if (kUnscaledPa) {
      // O_R = (O_R alpha_a + P_a V_a[R]) alpha_b + P_b V_b[R]. Both products
      // stay outside any branch on has_b (without b, P is zero): a wait
      // inside one made ptxas serialise every product (C7515).
      float max_a[2], alpha_a[2];
      sm90::wgmma_wait<0>(); // S_b (none pending without b)
      sm90::fence_array(s);
      take_alpha_a(max_a, alpha_a);
      float alpha_b[2] = {1.0f, 1.0f}, tile_sum[2] = {0.0f, 0.0f};
      if (has_b) {
        publish_b(b, max_a, alpha_b, tile_sum);
        pack_rows_p(p, s);
      } else {
#pragma unroll
        for (int ps = 0; ps < 4; ++ps)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            p[ps][j] = 0u;
      }
#pragma unroll
      for (int r = 0; r < 2; ++r)
        sum[r] *= alpha_a[r];
      rescale(alpha_a);
      sm90::split_barrier_sync(kBarPa, kConsumerThreads);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_shared(a, sm90::smem_desc_sw128(lay.stage(a) + 8 * kSlabBytes, 16));
      sm90::wgmma_commit();
      sm90::wgmma_wait<0>(); // P_a V_a[R] done
      sm90::fence_array(o);
      if (has_b)
        free_half(a, 1, pages[0]);
      {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] = sum[r] * alpha_b[r] + tile_sum[r];
        rescale(alpha_b);
        sm90::fence_array(o);
        sm90::fence_array(p);
        sm90::wgmma_fence();
        pv_registers(p, has_b ? b : a); // without b, P is zero: adds nothing
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        sm90::fence_array(p);
        if (has_b)
          free_half(b, 1, pages[1]);
        else
          free_half(a, 1, pages[0]);
      }
      if (b + 2 < num_tiles)
        issue_s(b + 2, nothing);
    } else {
      float max_a[2], alpha_a[2];
      sm90::wgmma_wait<0>(); // S_b (none pending without b)
      sm90::fence_array(s);
      take_alpha_a(max_a, alpha_a);
      if (has_b) {
        float alpha_b[2], tile_sum[2];
        publish_b(b, max_a, alpha_b, tile_sum);
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          alpha[r] = alpha_a[r] * alpha_b[r];
          sum[r] = sum[r] * alpha[r] + tile_sum[r];
        }
        rescale(alpha);
        pack_rows_p(p, s);
        sm90::fence_array(o);
        sm90::wgmma_fence();
        pv_registers(p, b);
        sm90::wgmma_commit();
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] *= alpha_a[r];
        rescale(alpha_a);
      }
      sm90::split_barrier_sync(kBarPa, kConsumerThreads);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_shared(a, sm90::smem_desc_sw128(lay.stage(a) + 8 * kSlabBytes, 16));
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>(); // P_b V_b (from registers) done
      sm90::fence_array(p);
      if (has_b)
        free_half(b, 1, pages[1]);
      sm90::wgmma_wait<0>();
      sm90::fence_array(o);
      free_half(a, 1, pages[0]);
      if (b + 2 < num_tiles)
        issue_s(b + 2, nothing);
    }
  }
  sm90::wgmma_wait<0>(); // (nothing pending: for ptxas, which cannot tell)

  // Row sums: this thread's keys, the quad's, then both consumers'.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sum[r] += shfl_xor(sum[r], 1);
    sum[r] += shfl_xor(sum[r], 2);
    if (quad == 0)
      s_sum[consumer * 64 + row0 + 8 * r] = sum[r];
  }
  // Row sums visible, and every product done: the stage buffers are free.
  sm90::split_barrier_sync(kBarOut, kConsumerThreads);
  float scale[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    const float total = s_sum[row] + s_sum[64 + row];
    scale[r] = RowState::output_scale(total) * job.v_scale;
    if (consumer == 0 && quad == 0 && is_real_row(job.row0 + row)) {
      const float lse = total > 0.0f ? (s_max[row] + log2_approx(total)) * kLn2 : kNegInf;
      if (job.pair)
        staged[kStagedLse + row] = lse; // merge_staged_pair's
      else
        output.store_lse(job.row0 + row, lse);
    }
  }
  const int tid = consumer * 128 + warp * 32 + lane;
  if (output.wide_rows()) {
    // Final rows: O packed to 16-bit in shared memory (half the bytes of
    // fp32), then 16-byte stores. 64-row steps end 1-2% sooner than with
    // fp32 staging (bench/notes/decode-wgmma.md, "The end of a 64-row block").
    u32 *const packed = reinterpret_cast<u32 *>(staged);
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int i = 0; i < 64; i += 2) {
        const int row = row0 + 8 * ((i % 4) / 2);
        const int col = 256 * consumer + 128 * c + 8 * (i / 4) + 2 * quad;
        packed[row * kPackedWords + col / 2] =
            pack2<Elem>(o[c][i] * scale[(i % 4) / 2], o[c][i + 1] * scale[(i % 4) / 2]);
      }
    sm90::split_barrier_sync(kBarOut, kConsumerThreads);
#pragma unroll 4
    for (int i = 0; i < kRowsN * kHeadDimV / 8 / kConsumerThreads; ++i) {
      const int idx = tid + kConsumerThreads * i;
      const int r = idx / (kHeadDimV / 8);
      const int chunk = idx % (kHeadDimV / 8);
      const int g = job.row0 + r;
      if (is_real_row(g))
        nv::copy_shared_to_global_16(output.row(g).out + 8 * chunk,
                                     nv::shared_address(packed + r * kPackedWords + 4 * chunk));
    }
    return;
  }
  // Partial rows (fp32): through shared memory so that each row is written
  // in 16-byte pieces.
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      const int row = row0 + 8 * ((i % 4) / 2);
      const int col = 256 * consumer + 128 * c + 8 * (i / 4) + 2 * quad;
      const Float2 v = {o[c][i] * scale[(i % 4) / 2], o[c][i + 1] * scale[(i % 4) / 2]};
      *reinterpret_cast<Float2 *>(staged + row * kOutStride + col) = v;
    }
  sm90::split_barrier_sync(kBarOut, kConsumerThreads);
  if (job.pair) {
    if (kCacheFP8 && !kFP8Operands)
      merge_staged_pair_outlined<kConsumerThreads>(job, output, staged, tid);
    else
      merge_staged_pair<kConsumerThreads>(job, output, staged, tid,
                                          [] { sm90::split_barrier_sync(kBarOut, kConsumerThreads); });
    return;
  }
  write_staged_rows<kConsumerThreads>(job, output, staged, tid);
}

MLAGEN_DEVICE void attend(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                          long long q_head_stride, const void *kv_map, const Output &output, u16 *smem) {
  const u32 raw = nv::shared_address(smem);
  const u32 base = (raw + 1023u) & ~1023u;
  u16 *const aligned = smem + (base - raw) / 2;
  Layout lay;
  lay.q = base;
  lay.kv = lay.q + kQBytes;
  lay.p = lay.kv + kStages * kStageBytes;
  lay.red = reinterpret_cast<float *>(aligned + (lay.p + kPSlabs * kPBytes - base) / 2);
  lay.total = lay.red + 5 * kRowsN;
  lay.q_unscale = lay.red + kConsumerRowFloats * kPSlabs;
  lay.bars = lay.p + kPSlabs * kPBytes + 4 * kRowFloats + (kClusterParts > 1 ? kPartBytes : 0);
  float *const staged = reinterpret_cast<float *>(aligned + (lay.kv - base) / 2);

  const int tid = thread_index();
  if (tid == 0) {
    sm90::mbarrier_init(lay.q_full(), 128);
    // Bulk tiles: one arrival a copier warp (produce_bulk); else a thread's.
    const int arrivals = kBulkTiles ? (kv_map != nullptr ? 1 : 2) : 128;
    for (int st = 0; st < kStages; ++st) {
      for (int sl = 0; sl < kFullPerStage; ++sl)
        sm90::mbarrier_init(lay.full(st, sl), kCacheFP8 && kSplitStages && sl % 4 == 1 ? 1 : arrivals);
      // One arrival per consumer warp; split stages: consumer 0's warps free
      // the first half, consumer 1's the second.
      sm90::mbarrier_init(lay.empty(st), 4);
      if (kSplitStages)
        sm90::mbarrier_init(lay.empty(st, 1), 4);
    }
    if (kClusterParts > 1) { // the other block's copy lands (merge_in_cluster)
      sm90::mbarrier_init(lay.merge_recv(), 1);
      sm90::mbarrier_arrive_expect_tx(lay.merge_recv(), kReceivedBytes);
    }
    sm90::mbarrier_init_fence();
  }
  block_barrier();
  if (kClusterParts > 1)
    sm90::cluster_arrive(); // the group's barriers exist
  const int num_tiles = ceil_div(job.block_end - job.key_begin, kTileK);
  // Two consumers: the producer hands registers to them (64 rows: O^T is
  // 128 a thread; paired fp8 consumers of 32 rows too). The block holds 168
  // a thread (65536 / 384, rounded down to 8): 56 + 2 x 224 <= 3 x 168,
  // else setmaxnreg.inc waits forever.
  if (tid >= kConsumerThreads) {
    if (kConsumers > 1)
      sm90::setmaxnreg_dec<56>();
    const int ptid = tid - kConsumerThreads;
    if constexpr (kFP8Operands) {
      produce_fp8_operands(job, cache, q, q_token_stride, q_head_stride, lay, num_tiles, ptid);
    } else if constexpr (kCacheFP8) {
      if constexpr (kSplitStages)
        produce_fp8_halves(job, cache, q, q_token_stride, q_head_stride, kv_map, lay, num_tiles, ptid);
      else
        produce_fp8(job, cache, q, q_token_stride, q_head_stride, lay, num_tiles, ptid);
    } else {
      if (num_tiles > 0)
        produce_q(job, cache, q, q_token_stride, q_head_stride, lay, ptid);
      if constexpr (kBulkTiles) {
        const int copiers = kv_map != nullptr ? 1 : 2; // warps a half
        if (ptid < 64 * copiers)
          produce_bulk(job, cache, kv_map, lay, num_tiles, ptid / 32 % 2, ptid / 64, copiers, ptid % 32);
      } else {
        produce(job, cache, lay, num_tiles, ptid);
      }
      sm90::cp_async_wait_all(); // no copy outlives the thread
    }
    return;
  }
  if (kConsumers > 1)
    sm90::setmaxnreg_inc<224>();
  const int warp = tid / 32 % 4, lane = tid % 32;
  if constexpr (kSplitStages) {
    if (tid >= 128) // the second consumer
      consume_rows<1>(job, cache, kv_map, output, lay, num_tiles, warp, lane, staged);
    else
      consume_rows<0>(job, cache, kv_map, output, lay, num_tiles, warp, lane, staged);
  } else if constexpr (kFP8Operands) {
    // Paired 16-row consumers run one body: an instance each compiled the
    // same schedule twice (16-head fp8 cold JIT 1.4-2.3 -> 1.2-1.4 s on an
    // H200 machine, speed unchanged). Paired 32-row consumers keep an
    // instance each: one body made B128 H128 2% slower
    // (bench/notes/decode-fp8.md). tid / 128 comes from lane 0 so that
    // ptxas knows it is the same in every lane.
    if constexpr (kPairedTiles && kRowsN == 32) {
      if (tid >= 128)
        consume_fp8(1, job, q, q_token_stride, q_head_stride, output, lay, num_tiles, warp, lane, staged);
      else
        consume_fp8(0, job, q, q_token_stride, q_head_stride, output, lay, num_tiles, warp, lane, staged);
    } else {
      consume_fp8(kPairedTiles ? __shfl_sync(~0u, tid / 128, 0) : 0, job, q, q_token_stride, q_head_stride, output,
                  lay, num_tiles, warp, lane, staged);
    }
  } else {
    consume(job, output, lay, num_tiles, warp, lane, staged);
  }
  // The threads that wrote the rows: consumer 0 (paired fp8 consumers hand
  // theirs to it). 64-row blocks merge their pairs in consume_rows.
  if (!kSplitStages && tid < 128)
    merge_pair_if_second<128, 8>(job, output, tid, staged, [] { sm90::named_barrier_sync(1, 128); });
}

} // namespace warpgroup_mma
#endif // MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A

#if MLAGEN_TARGET_CDNA
// AMD CDNA, wave64 MFMA 16x16. S^T = K Q^T per (row tile, 16-key granule):
// the K operand comes from the LDS tile, Q^T stays in registers, and lane l
// ends up with query l % 16 and keys 4 (l / 16) + i. P goes to LDS; O^T +=
// V^T P^T then keeps one query per lane (its own rescale and normalisation)
// and four adjacent output columns. V^T's operand gathers 16-bit elements
// from the first 512 columns of the row-major KV tile, so V is never stored
// twice. Tiles stream global -> registers -> LDS, the next tile's loads in
// flight during this tile's math.
namespace wave_mfma {

using cdna::kLaneK;
using cdna::kMfmaK;
using cdna::mfma_operand;

static_assert(kWaveSize == 64, "CDNA waves are 64 lanes");
static_assert(kTileK % kMfmaK == 0, "CDNA: kTileK is a multiple of the MFMA depth (32 on gfx950)");
typedef Split<16> S;

// Padding so that the 16 rows a quarter wave reads (kLaneK elements each)
// hit distinct banks.
constexpr int kStrideK = kHeadDimQK + kLaneK;
constexpr int kStrideP = kTileK + kLaneK;
constexpr int kKVTileElems = kTileK * kStrideK;
constexpr int kPTileElems = kHeadsPerBlock * kStrideP;
constexpr int kSharedBytesUsed = 2 * (kStages * kKVTileElems + 2 * kPTileElems) +
                                 4 * kHeadsPerBlock * (S::kGranules + kNumWarps);
static_assert(kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKSteps = kHeadDimQK / kMfmaK;
constexpr int kPVSteps = kTileK / kMfmaK;
constexpr int kOBlocks = S::kColsPerWarp / 16;
static_assert(kRowTiles * kOBlocks * 4 <= 128,
              "CDNA: O takes 8 * kHeadsPerBlock / kNumWarps registers; keep it <= 128");

// One thread's share of a KV tile in registers: 16-byte chunks of its rows.
struct StagedKV {
  u32x4 chunk[kKVPasses][kCopyColumnBlocks];

  MLAGEN_DEVICE void fetch(const PagedCache &cache, const KVRows &rows, int k0, int tid) {
    const int col = tid % kKVThreadsPerRow * kKVChunkElems;
    const u32x4 zero = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int pass = 0; pass < kKVPasses; ++pass) {
      const int r = tid / kKVThreadsPerRow + pass * kKVRowsPerPass;
      const int page = rows.page[pass];
      const u16 *src = cache.row(page < 0 ? 0 : page, k0 + r) + col;
#pragma unroll
      for (int cb = 0; cb < kCopyColumnBlocks; ++cb)
        chunk[pass][cb] = page >= 0 ? *reinterpret_cast<const u32x4 *>(src + cb * kCopyBlockCols) : zero;
    }
  }
  MLAGEN_DEVICE void store(u16 *tile, int tid) const {
    const int col = tid % kCopyThreadsPerRow * kChunkElems;
#pragma unroll
    for (int pass = 0; pass < kKVPasses; ++pass) {
      const int r = tid / kCopyThreadsPerRow + pass * kCopyRowsPerPass;
      if (kTileK % kCopyRowsPerPass != 0 && r >= kTileK)
        break;
#pragma unroll
      for (int cb = 0; cb < kCopyColumnBlocks; ++cb) {
        u16 *dst = tile + r * kStrideK + col + cb * kCopyBlockCols;
        if (kStrideK % 8 == 0) {
          *reinterpret_cast<u32x4 *>(dst) = chunk[pass][cb];
        } else { // rows are only 8-byte aligned
          *reinterpret_cast<u32x2 *>(dst) = chunk[pass][cb].xy;
          *reinterpret_cast<u32x2 *>(dst + 4) = chunk[pass][cb].zw;
        }
      }
    }
  }
};

MLAGEN_DEVICE void attend(const Job &job, const PagedCache &cache, const void *q,
                          long long q_token_stride, long long q_head_stride, const Output &output,
                          u16 *smem) {
  u16 *const kv_tiles = smem;
  u16 *const p_tile = kv_tiles + kStages * kKVTileElems;
  u16 *const p_residue = p_tile + kPTileElems;
  float *const red_max = reinterpret_cast<float *>(p_residue + kPTileElems); // [granule][row]
  float *const red_sum = red_max + S::kGranules * kHeadsPerBlock;            // [wave][row]

  const int tid = thread_index();
  const int wave = wave_uniform(tid / 64);
  const int lane = lane_index();
  const int column = lane % 16; // query (or key, as the K operand's row)
  const int slice = lane / 16;  // which quarter of the contraction it holds
  const int qk_m = wave % S::kQKWarpsM;
  const int qk_n = wave / S::kQKWarpsM;
  const int col0 = wave * S::kColsPerWarp;

  const int num_tiles = ceil_div(job.block_end - job.key_begin, kTileK);
  const bool few_keys = num_tiles == 1; // see the NVIDIA path

  // B operand of S^T = K Q^T: lane holds Q[row][kMfmaK ks + kLaneK slice + i].
  mfma_operand q_frag[S::kQKRowTiles][kQKSteps];
#pragma unroll
  for (int i = 0; i < S::kQKRowTiles; ++i) {
    const int g = job.row0 + (qk_m + i * S::kQKWarpsM) * 16 + column;
    const u8 *src = q_row(q, g, q_token_stride, q_head_stride) + kLaneK * slice * kQElemBytes;
#pragma unroll
    for (int ks = 0; ks < kQKSteps; ++ks) {
      mfma_operand frag = {};
      if (is_real_row(g) && num_tiles > 0 && kQueryFP8) {
        // kLaneK fp8 bytes -> kLaneK bf16, four bytes to two operand words.
#pragma unroll
        for (int w = 0; w < kLaneK / 4; ++w) {
          u32 lo, hi;
          fp8x4_to_operands(*reinterpret_cast<const u32 *>(src + ks * kMfmaK + 4 * w), lo, hi);
          frag[2 * w] = lo;
          frag[2 * w + 1] = hi;
        }
      } else if (is_real_row(g) && num_tiles > 0) {
        frag = *reinterpret_cast<const mfma_operand *>(src + ks * kMfmaK * 2);
      }
      q_frag[i][ks] = frag;
    }
  }

  f32x4 o[kRowTiles][kOBlocks] = {};
  RowState rows[kRowTiles]; // this lane's query of each row tile

  KVRows next = {};
  typename select_type<kCacheFP8, StagedFP8<kStrideK>, StagedKV>::type staged;
  if (num_tiles > 0) {
    next.lookup(cache, job, job.key_begin, tid);
    staged.fetch(cache, next, job.key_begin, tid);
    if (num_tiles > 1)
      next.lookup(cache, job, job.key_begin + kTileK, tid);
  }

  for (int it = 0; it < num_tiles; ++it) {
    const int k0 = job.key_begin + it * kTileK;
    u16 *const kv = kv_tiles + it % kStages * kKVTileElems;
    if (kStages == 1 && it > 0)
      block_barrier(); // everyone is done with the single buffer
    // With kStages >= 2 the barriers of iteration it - 1 already ordered
    // this store after the last reads of the buffer.
    staged.store(kv, tid);
    block_barrier(); // the tile is visible to every wave
    if (it + 1 < num_tiles) {
      staged.fetch(cache, next, k0 + kTileK, tid);
      if (it + 2 < num_tiles)
        next.lookup(cache, job, k0 + 2 * kTileK, tid);
    }

    // s[i][j][e] = S[row 16 rt + column][key 16 g + 4 slice + e]
    f32x4 s[S::kQKRowTiles][S::kQKGranules] = {};
    const u16 *const k_lane = kv + column * kStrideK + kLaneK * slice;
#pragma unroll
    for (int ks = 0; ks < kQKSteps; ++ks) {
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
        const int g = qk_n + j * S::kQKWarpsN;
        const mfma_operand a = *reinterpret_cast<const mfma_operand *>(k_lane + g * 16 * kStrideK + ks * kMfmaK);
#pragma unroll
        for (int i = 0; i < S::kQKRowTiles; ++i)
          s[i][j] = cdna::mfma_16x16<Elem>(a, q_frag[i][ks], s[i][j]);
      }
    }

    const bool masked = k0 + kTileK > job.mask_from;
#pragma unroll
    for (int i = 0; i < S::kQKRowTiles; ++i) {
      const int r = (qk_m + i * S::kQKWarpsM) * 16 + column;
      const int end = job.row_end(job.row0 + r);
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
        const int g = qk_n + j * S::kQKWarpsN;
        float m = kNegInf;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (masked && k0 + g * 16 + 4 * slice + e >= end)
            s[i][j][e] = kNegInf;
          m = max_float(m, s[i][j][e]);
        }
        m = max_float(m, shfl_xor(m, 16));
        m = max_float(m, shfl_xor(m, 32));
        if (slice == 0)
          red_max[g * kHeadsPerBlock + r] = m;
      }
    }
    block_barrier(); // maxima visible

    float alpha[kRowTiles], base[kRowTiles];
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
      float m = kNegInf;
#pragma unroll
      for (int g = 0; g < S::kGranules; ++g)
        m = max_float(m, red_max[g * kHeadsPerBlock + rt * 16 + column]);
      alpha[rt] = rows[rt].update(m * job.unit, base[rt]);
    }
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) { // compile-time rt: rows[] and base[] stay in registers
      if (rt % S::kQKWarpsM != qk_m)
        continue;
      const int i = rt / S::kQKWarpsM;
#pragma unroll
      for (int j = 0; j < S::kQKGranules; ++j) {
        if (!S::has_granule(qk_n, j))
          continue;
        const int g = qk_n + j * S::kQKWarpsN;
        float p[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          p[e] = exp2_approx(s[i][j][e] * job.unit - base[rt]);
          rows[rt].sum += p[e];
        }
        const int at = (rt * 16 + column) * kStrideP + g * 16 + 4 * slice;
        const u32x2 packed = {pack2<Elem>(p[0], p[1]), pack2<Elem>(p[2], p[3])};
        *reinterpret_cast<u32x2 *>(p_tile + at) = packed;
        if (few_keys) {
          const u32x2 residue = {rounding_residue<Elem>(p[0], p[1], packed.x),
                                 rounding_residue<Elem>(p[2], p[3], packed.y)};
          *reinterpret_cast<u32x2 *>(p_residue + at) = residue;
        }
      }
    }
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) {
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob)
        o[rt][ob] *= alpha[rt];
    }
    block_barrier(); // P visible

    // O^T += V^T P^T: o[rt][ob][i] = O[row 16 rt + column][col0 + 16 ob + 4 slice + i].
    const u16 *const v_lane = kv + kLaneK * slice * kStrideK + col0 + column;
    // The residue pass (one-tile items only) runs apart so that its
    // operands do not occupy registers in the main pass.
    for (int pass = 0; pass < (few_keys ? 2 : 1); ++pass) {
      const u16 *const p_src = pass == 0 ? p_tile : p_residue;
#pragma unroll
      for (int ps = 0; ps < kPVSteps; ++ps) {
        mfma_operand pb[kRowTiles];
#pragma unroll
        for (int rt = 0; rt < kRowTiles; ++rt)
          pb[rt] = *reinterpret_cast<const mfma_operand *>(p_src + (rt * 16 + column) * kStrideP + ps * kMfmaK +
                                                           kLaneK * slice);
#pragma unroll
        for (int ob = 0; ob < kOBlocks; ++ob) {
          // Lane holds V[kMfmaK ps + kLaneK slice + i][col0 + 16 ob + column]:
          // one column down kLaneK rows of the row-major tile.
          const u16 *src = v_lane + ps * kMfmaK * kStrideK + ob * 16;
          mfma_operand a;
#pragma unroll
          for (int i = 0; i < kLaneK / 2; ++i)
            a[i] = (u32)src[2 * i * kStrideK] | ((u32)src[(2 * i + 1) * kStrideK] << 16);
#pragma unroll
          for (int rt = 0; rt < kRowTiles; ++rt)
            o[rt][ob] = cdna::mfma_16x16<Elem>(a, pb[rt], o[rt][ob]);
        }
      }
    }
  }

  // Row sums: over the lane's slices, then over waves in wave order.
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt) {
    float sum = rows[rt].sum;
    sum += shfl_xor(sum, 16);
    sum += shfl_xor(sum, 32);
    if (slice == 0)
      red_sum[wave * kHeadsPerBlock + rt * 16 + column] = sum;
  }
  block_barrier();
#pragma unroll
  for (int rt = 0; rt < kRowTiles; ++rt) {
    const int r = rt * 16 + column;
    const int g = job.row0 + r;
    if (!is_real_row(g))
      continue;
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < kNumWarps; ++w)
      total += red_sum[w * kHeadsPerBlock + r];
    const float scale = RowState::output_scale(total) * job.v_scale;
    const RowOutput row = output.row(g);
#pragma unroll
    for (int ob = 0; ob < kOBlocks; ++ob) {
      const f32x4 v = o[rt][ob] * scale;
      row.store4(col0 + ob * 16 + 4 * slice, v.x, v.y, v.z, v.w);
    }
    if (wave == 0 && slice == 0)
      output.store_lse(g, rows[rt].lse(total));
  }
}

} // namespace wave_mfma
#endif // MLAGEN_TARGET_CDNA

} // namespace decode
} // namespace mlagen

#if MLAGEN_TARGET_NVIDIA
namespace mlagen {
namespace decode {
// Blocks per SM that shared memory allows (228 KB per SM on sm_90, 164 KB
// on sm_80, 1 KB reserved per block), at most what leaves a thread ~168
// registers. ptxas then budgets registers for that many blocks; without a
// minimum it may cap at 128 registers and spill.
#if defined(MLAGEN_ARCH_SM80)
constexpr int kSMSharedBytes = 167936;
#else
constexpr int kSMSharedBytes = 233472;
#endif
constexpr int kMinBlocksPerSM =
    max_int(1, min_int(kSMSharedBytes / (kSharedBytes + 1024), 65536 / (kThreads * 168)));
} // namespace decode
} // namespace mlagen
#define MLAGEN_DECODE_LAUNCH_BOUNDS __launch_bounds__(mlagen_config::kThreads, mlagen::decode::kMinBlocksPerSM)
#else
#define MLAGEN_DECODE_LAUNCH_BOUNDS __launch_bounds__(mlagen_config::kThreads)
#endif

// Grid: x = max_work (blocks past num_work[0] exit), y = ceil(kQLen *
// kNumHeads / kHeadsPerBlock). Block: kThreads; dynamic shared memory kSharedBytes.
// __grid_constant__: the tensor map is read in place, in parameter space.
extern "C" __global__ void MLAGEN_DECODE_LAUNCH_BOUNDS mlagen_decode(MLAGEN_GRID_CONSTANT mlagen_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::decode;
  extern __shared__ __attribute__((aligned(16))) u16 mlagen_smem[];

  // Launched early (DECODE_CONTRACT.md): the previous kernel may still be
  // writing q, the cache or the plan. The reduce may be scheduled now: it
  // waits for this grid to finish.
  grid_dependency_wait();
  allow_next_kernel();
  Job job;
  if (!load_job(p, job)) {
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
    if (kClusterParts > 1)
      sm90::cluster_arrive(); // the cluster's barrier counts every thread
#endif
    return;
  }
  const PagedCache cache = {static_cast<const u16 *>(p.kv_cache), p.block_table + (long long)job.batch * p.block_table_stride,
                            p.kv_block_stride, p.kv_token_stride};
  const Output output = {job.slot,
                         static_cast<u16 *>(p.out) + job.batch * p.out_batch_stride,
                         p.out_token_stride,
                         p.out_head_stride,
                         p.lse ? p.lse + (long long)job.batch * kQLen * kNumQHeads : nullptr,
                         p.partial_out,
                         p.partial_lse,
                         p.merge,
                         p.merge_arrivals};
  const void *q = static_cast<const u8 *>(p.q) + job.batch * p.q_batch_stride * kQElemBytes;
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
  if constexpr (kWarpgroupDecode)
    warpgroup_mma::attend(job, cache, q, p.q_token_stride, p.q_head_stride, p.kv_map_ready ? p.kv_map : nullptr,
                          output, mlagen_smem);
  else
    warp_mma::attend(job, cache, q, p.q_token_stride, p.q_head_stride, output, mlagen_smem);
#elif MLAGEN_TARGET_NVIDIA
  warp_mma::attend(job, cache, q, p.q_token_stride, p.q_head_stride, output, mlagen_smem);
#else
  wave_mfma::attend(job, cache, q, p.q_token_stride, p.q_head_stride, output, mlagen_smem);
#endif
  // Every thread of these blocks writes rows (the wgmma kernels merge in
  // their consumers' epilogues; the template argument only has to be valid
  // for them).
  if constexpr (!kWarpgroupDecode)
    merge_pair_if_second<kWarpgroupDecode ? 128 : kThreads, 8>(job, output, thread_index(),
                                                         reinterpret_cast<float *>(mlagen_smem),
                                                         [] { block_barrier(); });
}

// Merges the partials of request b: out = sum_i w_i O_i / sum_i w_i with
// w_i = exp(lse_i - max lse). The sum is the same whatever the grid: slot i
// belongs to accumulator i % kMergeSums, which adds w_i O_i in slot order
// (fma), and the accumulators are then added in order 0, 1, ... (batch-
// invariant kernels keep their bits). Grid: x = batch, y = ceil(kQLen *
// kNumHeads / (kThreads / 128)), z = kSplit in {1, 2, 4, 8}; block kThreads,
// no dynamic shared memory. A row takes 128 threads: 128 / kSplit column
// quads (the block's share of the 512 columns, z-th of kSplit) times kSplit
// threads per quad, each holding every kSplit-th accumulator. The host
// raises kSplit when batch x row blocks is small, so that a few requests of
// many slots spread their partials over more SMs with more loads in flight.
namespace mlagen {
namespace decode {
constexpr int kMergeSums = 8;
constexpr int kReduceRowsPerBlock = kThreads / 128;

template <int kSplit>
MLAGEN_DEVICE void merge_row(const mlagen_decode_params &p, int b, int first_slot, int num_slots, int g, int row_local,
                             Float4 *parked, float *parked_total, float *row_max) {
  constexpr int kSums = kMergeSums / kSplit;          // accumulators a thread holds
  constexpr int kQuads = 128 / kSplit;                 // column quads of a block
  constexpr int kRounds = kSums >= 4 ? 1 : 4 / kSums;  // 8-slot groups loaded at once (4+ loads)
  const int j = thread_index() % 128;
  const int part = j / kQuads, quad = j % kQuads;
  const int col = (block_index_z() * kQuads + quad) * 4;
  const bool real = is_real_row(g);

  // The largest lse over the row's slots: each part over its own slots,
  // eight loads in flight, then over the parts.
  const float *lse_of = p.partial_lse + (long long)first_slot * kRows + g;
  float max_lse = kNegInf;
  for (int base = part; real && base < num_slots; base += kSplit * 8) {
    float l[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int i = base + kSplit * u;
      l[u] = i < num_slots ? lse_of[(long long)i * kRows] : kNegInf;
    }
#pragma unroll
    for (int u = 0; u < 8; ++u)
      max_lse = max_float(max_lse, l[u]);
  }
  if (kSplit > 1) {
    if (quad == 0)
      row_max[row_local * kSplit + part] = max_lse;
    block_barrier();
    max_lse = kNegInf;
#pragma unroll
    for (int q = 0; q < kSplit; ++q)
      max_lse = max_float(max_lse, row_max[row_local * kSplit + q]);
  }
  // Every slot empty (no key visible): weights 0, output 0, lse -inf.
  const float shift = max_lse == kNegInf ? 0.0f : max_lse * kLog2e;

  Float4 acc[kSums];
  float total[kSums];
#pragma unroll
  for (int a = 0; a < kSums; ++a) {
    acc[a] = Float4{0.0f, 0.0f, 0.0f, 0.0f};
    total[a] = 0.0f;
  }
  const float *out_of = p.partial_out + ((long long)first_slot * kRows + g) * kHeadDimV + col;
  for (int base = 0; real && base < num_slots; base += kMergeSums * kRounds) {
    // Issue every load of the round before the first fma needs one.
    Float4 v[kRounds][kSums];
    float l[kRounds][kSums];
#pragma unroll
    for (int r = 0; r < kRounds; ++r)
#pragma unroll
      for (int a = 0; a < kSums; ++a) {
        const int i = base + r * kMergeSums + part + kSplit * a;
        if (i < num_slots) {
          v[r][a] = *reinterpret_cast<const Float4 *>(out_of + (long long)i * kRows * kHeadDimV);
          l[r][a] = lse_of[(long long)i * kRows];
        }
      }
#pragma unroll
    for (int r = 0; r < kRounds; ++r)
#pragma unroll
      for (int a = 0; a < kSums; ++a) {
        const int i = base + r * kMergeSums + part + kSplit * a;
        if (i < num_slots) {
          const float w = exp2_approx(l[r][a] * kLog2e - shift);
          total[a] += w;
          acc[a].x = fma_float(w, v[r][a].x, acc[a].x);
          acc[a].y = fma_float(w, v[r][a].y, acc[a].y);
          acc[a].z = fma_float(w, v[r][a].z, acc[a].z);
          acc[a].w = fma_float(w, v[r][a].w, acc[a].w);
        }
      }
  }

  // Accumulator k lives with part k % kSplit (its k / kSplit-th): the other
  // parts park theirs, part 0 adds all of them in order 0..kMergeSums-1.
  if (kSplit > 1) {
    const int parked_index = (row_local * (kSplit - 1) + part - 1) * kQuads + quad;
    if (part > 0)
#pragma unroll
      for (int a = 0; a < kSums; ++a) {
        parked[parked_index * kSums + a] = acc[a];
        parked_total[parked_index * kSums + a] = total[a];
      }
    block_barrier();
  }
  if (part != 0 || !real)
    return;
  Float4 sum = acc[0];
  float weight = total[0];
#pragma unroll
  for (int k = 1; k < kMergeSums; ++k) {
    const int holder = k % kSplit, a = k / kSplit;
    Float4 x;
    float t;
    if (holder == 0) {
      x = acc[a];
      t = total[a];
    } else {
      const int at = ((row_local * (kSplit - 1) + holder - 1) * kQuads + quad) * kSums + a;
      x = parked[at];
      t = parked_total[at];
    }
    sum.x += x.x;
    sum.y += x.y;
    sum.z += x.z;
    sum.w += x.w;
    weight += t;
  }
  const float scale = weight > 0.0f ? 1.0f / weight : 0.0f;
  const Output output = {-1,
                         static_cast<u16 *>(p.out) + b * p.out_batch_stride,
                         p.out_token_stride,
                         p.out_head_stride,
                         p.lse ? p.lse + (long long)b * kQLen * kNumQHeads : nullptr,
                         p.partial_out,
                         p.partial_lse};
  output.row(g).store4(col, sum.x * scale, sum.y * scale, sum.z * scale, sum.w * scale);
  if (col == 0)
    output.store_lse(g, weight > 0.0f ? max_lse + log2_approx(weight) * kLn2 : kNegInf);
}
} // namespace decode
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_decode_reduce(mlagen_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::decode;
  // Sized for kSplit 2, the largest of the splits (128 / kSplit quads x
  // (kSplit - 1) parts x 8 / kSplit sums per row).
  __shared__ Float4 parked[kReduceRowsPerBlock * 64 * 4];
  __shared__ float parked_total[kReduceRowsPerBlock * 64 * 4];
  __shared__ float row_max[kReduceRowsPerBlock * 8];
  grid_dependency_wait(); // launched early: mlagen_decode may still run
  allow_next_kernel();
  const int b = block_index_x();
  const int first_slot = p.merge[2 * b];
  const int num_slots = p.merge[2 * b + 1];
  if (num_slots <= 0)
    return; // one chunk (its block wrote the output), or merged in the decode grid (uniform)
  const int row_local = thread_index() / 128;
  const int g = block_index_y() * kReduceRowsPerBlock + row_local;
  switch (grid_size_z()) {
  case 1: merge_row<1>(p, b, first_slot, num_slots, g, row_local, parked, parked_total, row_max); break;
  case 2: merge_row<2>(p, b, first_slot, num_slots, g, row_local, parked, parked_total, row_max); break;
  case 4: merge_row<4>(p, b, first_slot, num_slots, g, row_local, parked, parked_total, row_max); break;
  default: merge_row<8>(p, b, first_slot, num_slots, g, row_local, parked, parked_total, row_max); break;
  }
}
