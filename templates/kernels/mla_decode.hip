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
// one warpgroup's registers; or an fp8 cache multiplied as e4m3, 16, 32 or 64
// rows of fp8 q or 16 of bf16 q, the consumers taking tiles in turn).
// DecodeSupport.cpp's
// isWarpgroupDecode mirrors this rule; any other tiling selects mma.sync
// (warp_mma).
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
constexpr bool kWarpgroupDecode = kTileK == 64 && kStages >= 2 &&
                                  ((kHeadsPerBlock <= 32 && kNumWarps == 8) ||
                                   (kHeadsPerBlock == 64 && kNumWarps == 12) ||
                                   (kNumWarps == 12 && kCacheFP8 && (kQueryFP8 ? kHeadsPerBlock <= 64 : kHeadsPerBlock == 16)));
#else
constexpr bool kWarpgroupDecode = false;
#endif
static_assert(kNumWarps != 12 || kWarpgroupDecode, "12 warps: sm_90a's two-consumer wgmma kernel only");

// A work item's slot + kGridPair: its request is a pair merged in the grid.
constexpr int kGridPair = 1 << 30;

// A request's q rows split into kRowBlocks blocks (grid y).
constexpr int kRowBlocks = ceil_div(kRows, kHeadsPerBlock);

// Whether pairs merge in the grid here (merge_pair_if_second). The 16-row
// e4m3 kernels that merge pairs in clusters leave it out, a sixth of their
// cold compile: their planner merges every pair in its cluster, and with
// clusters off leaves pairs to the reduce (DecodePlanner::create,
// DECODE_CONTRACT.md).
constexpr bool kGridPairs = !(kCacheFP8 && kClusterParts > 1 && kRowBlocks == 1);

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
  // Pages of tile 0's first and last keys (kFirstPagesRead; see load_job).
  int first_pages[2];

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

// Pages hold whole tiles, so tile 0 spans at most two pages. Their block-
// table entries are read beside seq_len, not after it: the first copies
// then wait for the item and one load, not three in a row (at the start of
// a step each goes to DRAM). A valid plan stays inside the row; the index is
// kept there anyway (checked mode's max_pages, else the row stride), since
// checked mode reads these before it has looked at seq_len. Rows past the
// keys never use what was read, and kernels that do not use it at all
// (tile_page) lose the loads to dead-code elimination.
constexpr bool kFirstPagesRead = kPageSize >= kTileK;

MLAGEN_DEVICE void read_first_pages(const mlagen_decode_params &p, Job &job) {
  job.first_pages[0] = job.first_pages[1] = 0;
  if (!kFirstPagesRead || job.key_begin >= job.key_end)
    return;
  // A row's entries (the launcher keeps both at 1 or more).
  const int top = max_int(p.error_flags ? p.max_pages : p.block_table_stride, 1) - 1;
  const int *row = p.block_table + (long long)job.batch * p.block_table_stride;
  const int last = min_int(job.key_begin + kTileK, job.key_end) - 1;
  job.first_pages[0] = row[min_int((unsigned)job.key_begin / kPageSize, top)];
  job.first_pages[1] = row[min_int((unsigned)last / kPageSize, top)];
}

// Reads the block's work item; false if the block has none. The row
// blocks of an item are adjacent in launch order: they read the same keys,
// so all but the first find them in L2.
MLAGEN_DEVICE bool load_job(const mlagen_decode_params &p, Job &job) {
  const int linear = block_index_x() + block_index_y() * grid_size_x();
  const int index = linear / kRowBlocks;
  const int row_block = linear % kRowBlocks;
  // The item is read before num_work is known, so that the two loads
  // overlap: index < grid x <= the work list's capacity, so the read stays
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
  read_first_pages(p, job);
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
  if (!kGridPairs && job.pair) { // a plan made for another kernel: NaN rows too
    job.pair = false;
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
  if (!kGridPairs || !job.pair)
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

@@MLAGEN_PART_WARP_MMA@@

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

@@MLAGEN_PART_WARPGROUP_LAYOUT@@

@@MLAGEN_PART_WARPGROUP_PRODUCE@@

@@MLAGEN_PART_WARPGROUP_ROWS@@

@@MLAGEN_PART_WARPGROUP_CONSUME@@

@@MLAGEN_PART_WARPGROUP_CONSUME_FP8@@

@@MLAGEN_PART_WARPGROUP_CONSUME_ROWS@@

@@MLAGEN_PART_WARPGROUP_SEESAW_FP8@@

@@MLAGEN_PART_WARPGROUP_ATTEND@@

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

@@MLAGEN_PART_WAVE_MFMA@@

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

// Grid: x = max_work or fewer (blocks past num_work[0] exit), y = ceil(kQLen *
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
