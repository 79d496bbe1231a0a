// Paged GQA decode (vLLM's flash-attn / paged_attention decode for
// Llama-class models), split-KV with an LSE reduce (templates/
// PAGED_DECODE_CONTRACT.md).
//
// q [batch, kQLen, kNumQHeads, kHeadDim]; k_cache and v_cache [num_blocks,
// kPageSize, kNumKVHeads, kHeadDim] sharing one set of strides; q head h
// reads kv head h / (kNumQHeads / kNumKVHeads). Query token t of request b
// sees keys [lo, pos] with pos = seq_lens[b] - kQLen + t and lo = pos -
// kWindowLeft (0 without a window). Logits are softmax_scale * q.k, then
// kSoftCap * tanh(logit / kSoftCap) when the cap is on; with kAlibi,
// -alibi_slopes[h] * (pos - key) is added after the cap (prefill's
// FlashAttention convention, CONTRACT.md; keys past pos are masked, so the
// distance is never negative).
//
// mlagen_paged_decode: a 1-d grid of work capacity x kBlocksPerItem, one
// block per (work item, kv head, row block) handling kRowsPerBlock of the kv
// head's kQLen x group rows, so each K/V row of a chunk is read once per kv
// head (per row block). Two bodies:
// - decode_mma (NVIDIA, kMatrixCores: 16-bit caches, and fp8 ones on
//   sm_90a): mma.sync with cp.async stages, described where it is defined;
// - decode_simt, CUDA-core fp32 math, portable to wave32 and wave64:
//   load  K and V tiles (kTileK keys) global -> registers -> shared, 16-byte
//         vectors, one block-table lookup per key; keys outside the range
//         are zero-filled so that p = 0 never meets a NaN
//   QK    kThreadsPerKey threads per key, interleaved 8-column chunks
//         (conflict-free shared reads), partial dots joined by xor shuffles
//   soft  8 lanes per row: online softmax in the log2 domain
//   PV    a thread owns 8 columns of every row for the keys of its slice;
//         slices are summed once at the end (shuffles, then shared memory)
// fp8 caches are dequantised on the shared -> register read (exact; the
// scales multiply the logit scale and the final normalisation).

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/PagedDecodeParams.h (offsets pinned there).
struct mlagen_paged_decode_params {
  const void *q;
  const void *k_cache;
  const void *v_cache;
  void *out;
  float *lse;             // [batch, kQLen, kNumQHeads] or null
  const int *block_table; // [batch, block_table_stride]
  const int *seq_lens;    // [batch]
  const int *work;        // int4 (batch, key_begin, key_end, slot)
  const int *num_work;
  const int *merge;       // int2 (first_slot, num_slots) per request
  float *partial_out;     // [slots][kQLen * kNumQHeads][kHeadDim]
  float *partial_lse;     // [slots][kQLen * kNumQHeads]
  const float *k_scale;   // fp8 cache: [1]; else null
  const float *v_scale;
  const float *alibi_slopes; // [kNumQHeads] when kAlibi; else null
  long long q_batch_stride, q_token_stride, q_head_stride;       // elements
  long long out_batch_stride, out_token_stride, out_head_stride; // elements
  long long kv_block_stride, kv_token_stride, kv_head_stride;    // elements
  int block_table_stride;
  int batch;
  float softmax_scale;
  int reserved;
};

namespace mlagen {
namespace paged_decode {

using namespace mlagen_config;

typedef select_type<kInputBF16, bf16, fp16>::type Elem;

constexpr int kGroup = kNumQHeads / kNumKVHeads;
constexpr int kRowsPerHead = kQLen * kGroup;
constexpr int kRowBlocks = kRowsPerHead / kRowsPerBlock;
constexpr int kBlocksPerItem = kNumKVHeads * kRowBlocks; // blocks per work item
constexpr int kElemBytes = kCacheFP8 ? 1 : 2;
constexpr int kThreadsPerKey = kThreads / kTileK;
constexpr int kChunks = kHeadDimPad / 8;          // 8-column chunks of a row
constexpr int kSlices = kThreads / kChunks;       // PV key slices
constexpr int kRowPitch = kHeadDimPad * kElemBytes + 16; // bytes, conflict-free
constexpr int kLoadVectors = kHeadDim * kElemBytes / 16; // per cache row
constexpr int kScorePitch = kTileK + 4;
constexpr int kQPitch = kHeadDimPad + 4;

static_assert(kNumQHeads % kNumKVHeads == 0, "q heads are a multiple of kv heads");
static_assert(kRowsPerHead % kRowsPerBlock == 0 && kRowsPerBlock <= 16, "row blocks");
static_assert(kThreads == 128 && kThreads % kTileK == 0, "128 threads, kThreadsPerKey per key");
static_assert(kChunks % kThreadsPerKey == 0, "each key's threads share its chunks");
static_assert(kThreads % kChunks == 0 && kTileK % kSlices == 0, "PV slices");
static_assert(kHeadDim * kElemBytes % 16 == 0, "16-byte cache vectors");
static_assert((kPageSize & (kPageSize - 1)) == 0, "power-of-two pages");
#if MLAGEN_ARCH_GFX90A
static_assert(!kCacheFP8, "gfx90a has no fp8 conversion instructions");
#endif

constexpr int kKVBytes = kTileK * kRowPitch;
constexpr int kScoreOffset = 2 * kKVBytes;
constexpr int kQOffset = kScoreOffset + 4 * kRowsPerBlock * kScorePitch;
constexpr int kStatOffset = kQOffset + 4 * kRowsPerBlock * kQPitch;
constexpr int kSharedBytesUsed = kStatOffset + 4 * 2 * 16;
// The slice sums of a wave-wide PV reuse the K tile.
static_assert((kSlices > kWaveSize ? kSlices / kWaveSize : 0) * kRowsPerBlock * kHeadDimPad * 4 <= kKVBytes,
              "slice sums fit the K tile");
static_assert(kMatrixCores || kSharedBytesUsed <= kSharedBytes, "shared memory layout exceeds kSharedBytes");

struct alignas(16) Vec16 {
  u32 w[4];
};

// Eight cache elements at `p` (shared) -> eight floats, dequantised exactly.
MLAGEN_DEVICE void load8(const u8 *p, float (&x)[8]) {
  if (kCacheFP8) {
    const u32 *w = reinterpret_cast<const u32 *>(p);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      u32 lo, hi;
#if MLAGEN_TARGET_NVIDIA
      fp8e4m3x4_to_f16(w[i], lo, hi);
      unpack2<fp16>(lo, x[4 * i], x[4 * i + 1]);
      unpack2<fp16>(hi, x[4 * i + 2], x[4 * i + 3]);
#else
      fp8e4m3x4_to_bf16(w[i], lo, hi);
      unpack2<bf16>(lo, x[4 * i], x[4 * i + 1]);
      unpack2<bf16>(hi, x[4 * i + 2], x[4 * i + 3]);
#endif
    }
  } else {
    const Vec16 v = *reinterpret_cast<const Vec16 *>(p);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      unpack2<Elem>(v.w[i], x[2 * i], x[2 * i + 1]);
  }
}

// Sum over the `kLanes` consecutive lanes that share a value (xor shuffles;
// kLanes <= the wave size).
template <int kLanes>
MLAGEN_DEVICE float lane_sum(float v) {
#pragma unroll
  for (int m = 1; m < kLanes; m *= 2)
    v += shfl_xor(v, m);
  return v;
}
template <int kLanes>
MLAGEN_DEVICE float lane_max(float v) {
#pragma unroll
  for (int m = 1; m < kLanes; m *= 2)
    v = max_float(v, shfl_xor(v, m));
  return v;
}

constexpr int kTileVectors = kTileK * kLoadVectors;
constexpr int kPerThread = (kTileVectors + kThreads - 1) / kThreads;
// Decode is bound by HBM latency x bytes in flight: with kPrefetch the next
// tile's K/V loads are issued before this tile's math and land in registers
// while it runs. It costs 8 registers per vector pair, so it is on only
// where the buffer (<= 32 registers: bf16 d128 at tile_k 32, fp8 d128 at 64)
// and the accumulators (8 per row) leave room; a 64-register buffer spilled
// on sm_90a. Otherwise a tile is loaded and stored before its math.
constexpr bool kPrefetch = 8 * kPerThread <= 32 && kRowsPerBlock <= 8;

// One tile's K and V vectors of this thread, in registers.
struct TileRegs {
  Vec16 k[kPerThread], v[kPerThread];
};

// Keys [tile0, tile0 + kTileK) of kv head `head` of request b into this
// thread's registers; keys at or past `end` become zeros (never read from
// memory).
MLAGEN_DEVICE void fetch_tile(const mlagen_paged_decode_params &p, const int *table, int head,
                              int tile0, int end, TileRegs &regs) {
  constexpr int kVectors = kTileVectors;
  Vec16 *k = regs.k, *v = regs.v;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int index = thread_index() + i * kThreads;
    const int row = index / kLoadVectors, vec = index % kLoadVectors;
    const int key = tile0 + row;
    k[i] = Vec16{{0u, 0u, 0u, 0u}};
    v[i] = k[i];
    if ((kVectors % kThreads == 0 || index < kVectors) && key < end) {
      const long long page = table[key / kPageSize];
      const long long offset = page * p.kv_block_stride + (long long)(key % kPageSize) * p.kv_token_stride +
                               (long long)head * p.kv_head_stride;
      k[i] = reinterpret_cast<const Vec16 *>(static_cast<const u8 *>(p.k_cache) + offset * kElemBytes)[vec];
      v[i] = reinterpret_cast<const Vec16 *>(static_cast<const u8 *>(p.v_cache) + offset * kElemBytes)[vec];
    }
  }
}

// A fetched tile into the shared K and V rows.
MLAGEN_DEVICE void store_tile(const TileRegs &regs, u8 *k_smem, u8 *v_smem) {
  constexpr int kVectors = kTileVectors;
  const Vec16 *k = regs.k, *v = regs.v;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int index = thread_index() + i * kThreads;
    if (kVectors % kThreads == 0 || index < kVectors) {
      const int row = index / kLoadVectors, vec = index % kLoadVectors;
      *reinterpret_cast<Vec16 *>(k_smem + row * kRowPitch + vec * 16) = k[i];
      *reinterpret_cast<Vec16 *>(v_smem + row * kRowPitch + vec * 16) = v[i];
    }
  }
}

// The CUDA-core kernel (every target; the only one on CDNA).
MLAGEN_DEVICE void decode_simt(const mlagen_paged_decode_params &p, int item_index, int head_block) {
  extern __shared__ __attribute__((aligned(16))) u8 smem[];
  u8 *k_smem = smem;
  u8 *v_smem = smem + kKVBytes;
  float *scores = reinterpret_cast<float *>(smem + kScoreOffset); // [row][key]
  float *q_smem = reinterpret_cast<float *>(smem + kQOffset);     // [row][col]
  float *alpha_smem = reinterpret_cast<float *>(smem + kStatOffset);
  float *l_smem = alpha_smem + 16;

  const int tid = thread_index();
  const int *item = p.work + 4 * item_index;
  const int b = item[0], key_begin = item[1], key_end_item = item[2], slot = item[3];
  const int head = head_block / kRowBlocks;
  const int row_base = (head_block % kRowBlocks) * kRowsPerBlock;
  const int seq_len = p.seq_lens[b];
  const int *table = p.block_table + (long long)b * p.block_table_stride;

  // Keys any row of this block can see: token 0's window start to the last.
  int lo = key_begin;
  if (kWindowLeft >= 0)
    lo = max_int(lo, seq_len - kQLen - kWindowLeft);
  const int hi = min_int(key_end_item, seq_len);

  // q rows (zero past kHeadDim) as floats; the pad columns of the K/V tiles
  // are zeroed once here and never written again.
  for (int i = tid; i < kRowsPerBlock * kHeadDimPad; i += kThreads) {
    const int r = i / kHeadDimPad, c = i % kHeadDimPad;
    const int row = row_base + r, t = row / kGroup, h = head * kGroup + row % kGroup;
    float x = 0.0f;
    if (c < kHeadDim) {
      const u16 bits = static_cast<const u16 *>(p.q)[b * p.q_batch_stride + t * p.q_token_stride +
                                                     h * p.q_head_stride + c];
      float hi16;
      unpack2<Elem>(bits, x, hi16);
    }
    q_smem[r * kQPitch + c] = x;
  }
  // A row's ALiBi slope lives in its q row's pad floats (read per tile by
  // every thread; registers would cost kRowsPerBlock of them).
  if (kAlibi && tid < kRowsPerBlock) {
    const int row = row_base + tid;
    q_smem[tid * kQPitch + kHeadDimPad] = p.alibi_slopes[head * kGroup + row % kGroup];
  }
  if (kHeadDimPad > kHeadDim) {
    constexpr int kPadBytes = max_int(1, (kHeadDimPad - kHeadDim) * kElemBytes);
    for (int i = tid; i < kTileK * kPadBytes; i += kThreads) {
      const int row = i / kPadBytes, byte = kHeadDim * kElemBytes + i % kPadBytes;
      k_smem[row * kRowPitch + byte] = 0;
      v_smem[row * kRowPitch + byte] = 0;
    }
  }

  const float k_scale = kCacheFP8 ? *p.k_scale : 1.0f;
  const float v_scale = kCacheFP8 ? *p.v_scale : 1.0f;
  const float logit_scale = p.softmax_scale * k_scale;

  // Online softmax state of row `soft_row` (8 lanes per row), log2 domain.
  const int soft_row = tid / 8, soft_lane = tid % 8;
  float m_run = kNegInf, l_run = 0.0f;

  // PV: this thread's 8 columns of every row, over keys of its slice.
  const int pv_chunk = tid / kSlices, pv_slice = tid % kSlices;
  float o[kRowsPerBlock][8];
#pragma unroll
  for (int r = 0; r < kRowsPerBlock; ++r)
#pragma unroll
    for (int c = 0; c < 8; ++c)
      o[r][c] = 0.0f;

  const int qk_key = tid / kThreadsPerKey, qk_part = tid % kThreadsPerKey;
  TileRegs tile;
  if (kPrefetch && lo < hi)
    fetch_tile(p, table, head, lo, hi, tile);
  for (int tile0 = lo; tile0 < hi; tile0 += kTileK) {
    block_barrier(); // the previous tile's readers are done
    if (!kPrefetch)
      fetch_tile(p, table, head, tile0, hi, tile);
    store_tile(tile, k_smem, v_smem);
    block_barrier();
    // The next tile's loads fly during this tile's math.
    if (kPrefetch && tile0 + kTileK < hi)
      fetch_tile(p, table, head, tile0 + kTileK, hi, tile);

    // QK for key qk_key, chunks qk_part, qk_part + kThreadsPerKey, ...
    float s[kRowsPerBlock];
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r)
      s[r] = 0.0f;
#pragma unroll 2
    for (int c = qk_part; c < kChunks; c += kThreadsPerKey) {
      float k[8];
      load8(k_smem + qk_key * kRowPitch + c * 8 * kElemBytes, k);
#pragma unroll
      for (int r = 0; r < kRowsPerBlock; ++r) {
        const float *q = q_smem + r * kQPitch + c * 8;
#pragma unroll
        for (int e = 0; e < 8; ++e)
          s[r] += q[e] * k[e];
      }
    }
    const int key = tile0 + qk_key;
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r) {
      float x = lane_sum<kThreadsPerKey>(s[r]) * logit_scale;
      if (kSoftCap > 0.0f)
        x = kSoftCap * tanh_approx(x * (1.0f / kSoftCap));
      const int t = (row_base + r) / kGroup;
      const int pos = seq_len - kQLen + t;
      if (kAlibi)
        x -= q_smem[r * kQPitch + kHeadDimPad] * static_cast<float>(pos - key);
      const bool visible = key < hi && key <= pos && (kWindowLeft < 0 || key >= pos - kWindowLeft);
      if (qk_part == 0)
        scores[r * kScorePitch + qk_key] = visible ? x * kLog2e : kNegInf;
    }
    block_barrier();

    // Online softmax over the tile, 8 lanes per row. Every lane runs the
    // shuffles (NVIDIA's full-mask shuffles need the whole warp); lanes past
    // the block's rows compute on -inf and store nothing.
    {
      const bool valid = soft_row < kRowsPerBlock;
      float *row = scores + (valid ? soft_row : 0) * kScorePitch;
      float tile_max = kNegInf;
      if (valid)
        for (int j = soft_lane; j < kTileK; j += 8)
          tile_max = max_float(tile_max, row[j]);
      tile_max = lane_max<8>(tile_max);
      const float m_new = max_float(m_run, tile_max);
      // All keys masked so far: subtract 0, not -inf, so exp2 gives 0.
      const float m_use = m_new == kNegInf ? 0.0f : m_new;
      float sum = 0.0f;
      if (valid)
        for (int j = soft_lane; j < kTileK; j += 8) {
          const float e = exp2_approx(row[j] - m_use);
          row[j] = e;
          sum += e;
        }
      sum = lane_sum<8>(sum);
      const float alpha = exp2_approx(m_run - m_use);
      l_run = l_run * alpha + sum;
      m_run = m_new;
      if (valid && soft_lane == 0)
        alpha_smem[soft_row] = alpha;
    }
    block_barrier();

    // PV for keys j = pv_slice + k * kSlices.
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r) {
      const float a = alpha_smem[r];
#pragma unroll
      for (int c = 0; c < 8; ++c)
        o[r][c] *= a;
    }
#pragma unroll 2
    for (int j = pv_slice; j < kTileK; j += kSlices) {
      float v[8];
      load8(v_smem + j * kRowPitch + pv_chunk * 8 * kElemBytes, v);
#pragma unroll
      for (int r = 0; r < kRowsPerBlock; ++r) {
        const float pr = scores[r * kScorePitch + j];
#pragma unroll
        for (int c = 0; c < 8; ++c)
          o[r][c] += pr * v[c];
      }
    }
  }

  // Sum the slices: lanes first, then (slices wider than a wave) through
  // shared memory, reusing the K tile.
  constexpr int kLaneSlices = kSlices < kWaveSize ? kSlices : kWaveSize;
#pragma unroll
  for (int r = 0; r < kRowsPerBlock; ++r)
#pragma unroll
    for (int c = 0; c < 8; ++c)
      o[r][c] = lane_sum<kLaneSlices>(o[r][c]);
  if (soft_row < kRowsPerBlock && soft_lane == 0)
    l_smem[soft_row] = l_run;
  // m_run travels through alpha_smem (free now) for the LSE.
  block_barrier();
  if (soft_row < kRowsPerBlock && soft_lane == 0)
    alpha_smem[soft_row] = m_run;
  constexpr int kWaveGroups = kSlices / kLaneSlices;
  float *sums = reinterpret_cast<float *>(smem); // [group][row][col]
  if (kWaveGroups > 1) {
    if (pv_slice % kLaneSlices == 0)
#pragma unroll
      for (int r = 0; r < kRowsPerBlock; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c)
          sums[((pv_slice / kLaneSlices) * kRowsPerBlock + r) * kHeadDimPad + pv_chunk * 8 + c] = o[r][c];
  }
  block_barrier();
  if (kWaveGroups > 1 && pv_slice == 0) {
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        float x = 0.0f;
        for (int g = 0; g < kWaveGroups; ++g)
          x += sums[(g * kRowsPerBlock + r) * kHeadDimPad + pv_chunk * 8 + c];
        o[r][c] = x;
      }
  }

  // Write: rows of this block, 8 columns per thread (slice 0 of each chunk).
  if (pv_slice == 0 && pv_chunk * 8 < kHeadDim) {
#pragma unroll
    for (int r = 0; r < kRowsPerBlock; ++r) {
      const int row = row_base + r, t = row / kGroup, h = head * kGroup + row % kGroup;
      const float l = l_smem[r];
      const float norm = l > 0.0f ? v_scale / l : 0.0f;
      if (slot < 0) {
        Vec16 out;
#pragma unroll
        for (int i = 0; i < 4; ++i)
          out.w[i] = pack2<Elem>(o[r][2 * i] * norm, o[r][2 * i + 1] * norm);
        *reinterpret_cast<Vec16 *>(static_cast<u16 *>(p.out) + b * p.out_batch_stride + t * p.out_token_stride +
                                   h * p.out_head_stride + pv_chunk * 8) = out;
      } else {
        float *dst = p.partial_out + ((long long)slot * (kQLen * kNumQHeads) + t * kNumQHeads + h) * kHeadDim +
                     pv_chunk * 8;
#pragma unroll
        for (int c = 0; c < 8; ++c)
          dst[c] = o[r][c] * norm;
      }
    }
  }
  if (tid < kRowsPerBlock) {
    const int row = row_base + tid, t = row / kGroup, h = head * kGroup + row % kGroup;
    const float l = l_smem[tid];
    const float lse = l > 0.0f ? (alpha_smem[tid] + log2_approx(l)) * kLn2 : kNegInf;
    if (slot >= 0)
      p.partial_lse[(long long)slot * (kQLen * kNumQHeads) + t * kNumQHeads + h] = lse;
    else if (kReturnLSE && p.lse)
      p.lse[((long long)b * kQLen + t) * kNumQHeads + h] = lse;
  }
}

#if MLAGEN_TARGET_NVIDIA
// NVIDIA (kMatrixCores): QK and PV on mma.sync m16n8k16 with 16 keys as the
// mma's rows and the block's q rows as its n (8 a tile): S^T = K q^T and
// O^T += V^T P^T, P^T's fragments transposed from S^T's in registers
// (movmatrix). With 4 q rows a block (Llama-3's 32 / 8 heads) that is half
// the mmas, and half O's registers, of q as the rows padded to 16; the
// registers let an fp8 kernel up to d128 run four blocks an SM
// (kBlocksPerSM), which its latency-bound warps need. K/V tiles go
// global -> shared with cp.async, kStages deep. An fp8 cache (sm_90a)
// stays fp8 in the stages (half the bytes, so more stages fit); ldmatrix
// reads the raw bytes as 16-bit pairs and cvt.rn.f16x2.e4m3x2 widens the
// fragments in registers (exact), so QK and PV run in fp16, q rounded to
// fp16, and the scales multiply the logit scale and the final
// normalisation. The raw fragments hold other columns than fp16 ones
// would: q's columns are stored permuted to match K's (`fp8_q_column`),
// and O^T's rows come out permuted (`o_dim`, undone when the warps merge). Each warp owns a quarter of
// every tile's keys with its own online-softmax state (FlashDecoding's
// split within the block) and copies those keys itself, so the warps never
// wait for each other inside the key loop: a warp keeps (kStages - 1) of
// its slices in flight and re-issues as soon as it is done with one. The
// warps' partial rows are merged once at the end through shared memory.
namespace mma {

constexpr int kWarps = kThreads / 32;
constexpr int kWarpKeys = kTileK / kWarps;       // keys per warp per tile
constexpr int kKeySteps = kWarpKeys / 16;        // 16-key mma steps (the mma's rows)
// QK k-steps, PV m-tiles of O^T; at least 1 so that the body still compiles
// (unused) for heads under 16, which take the CUDA-core kernel.
constexpr int kDimSteps = kHeadDim >= 16 ? kHeadDim / 16 : 1;
constexpr int kNTiles = (kRowsPerBlock + 7) / 8; // the mma's n: 8 q rows a tile
constexpr int kPitch = kHeadDim * 2 + 16;        // bytes of a q row (16-bit): 8 ldmatrix rows hit 8 bank groups
// A staged cache row: rows of a multiple of 128 bytes stay unpadded, the
// 16-byte chunk c of row r stored at chunk c ^ (r % 8) of its 128 bytes
// (`chunk_at`), others take 16 bytes of padding; either way the 8 rows of
// an ldmatrix hit 8 bank groups. Unpadded, an fp8 d128 stage is 1/9
// smaller, so four blocks an SM hold 3 stages each.
constexpr bool kSwizzled = kHeadDim * kElemBytes % 128 == 0;
constexpr int kCachePitch = kHeadDim * kElemBytes + (kSwizzled ? 0 : 16);
constexpr int kTileBytes = kTileK * kCachePitch;
constexpr int kStageBytes = 2 * kTileBytes;      // K then V
constexpr int kRowVectors = kHeadDim * kElemBytes / 16; // 16-byte vectors per cache row
constexpr int kCopies = kWarpKeys * kRowVectors / 32; // per lane, K (and V)
constexpr int kMmaStatOffset = kStages * kStageBytes;
constexpr int kMmaQOffset = kMmaStatOffset + 512;
constexpr int kScratchPitch = kHeadDim + 8;      // floats
// The checks hold where this kernel is the one compiled.
// q fragments stay in registers up to 16 of them (d256 at 8 rows, d128 at
// 16); more re-read q per step.
constexpr bool kQInRegisters = kDimSteps * kNTiles <= 16;

static_assert(!kMatrixCores || (kThreads == 128 && kWarpKeys % 16 == 0), "4 warps, 16-key steps");
static_assert(!kMatrixCores || kHeadDim % (kCacheFP8 ? 32 : 16) == 0, "16-column k-steps, whole 16-byte vectors");
#if !MLAGEN_ARCH_SM90A
static_assert(!kMatrixCores || !kCacheFP8, "fp8 on matrix cores needs sm_90a's fp8 conversions");
#endif
static_assert(!kMatrixCores || (kWarpKeys * kRowVectors % 32 == 0), "whole copies per lane");
static_assert(!kMatrixCores || (kStages >= 2), "at least one tile in flight");
static_assert(!kMatrixCores || (kMmaQOffset + 16 * kPitch == kSharedBytes), "the layout is PagedDecodeOp::getSharedBytes'");
static_assert(!kMatrixCores || (kWarps * kRowsPerBlock * kScratchPitch * 4 <= kMmaStatOffset), "merge scratch fits the stages");

// The byte offset of 16-byte chunk `chunk` in a staged row `row` (see kCachePitch).
MLAGEN_DEVICE u32 chunk_at(int row, int chunk) {
  return (kSwizzled ? chunk ^ (row % 8) : chunk) * 16;
}

// The block-table entries of this lane's copies of its warp's keys of the
// tile at `tile0`, fetched a step before the copies are issued so that
// their latency never delays the issue. Keys at or past `end` get page 0
// (never read).
MLAGEN_DEVICE void fetch_pages(const int *table, int tile0, int end, int (&pages)[kCopies]) {
  const int first = tile0 + (thread_index() / 32) * kWarpKeys, lane = thread_index() % 32;
#pragma unroll
  for (int i = 0; i < kCopies; ++i) {
    const int key = first + (lane + i * 32) / kRowVectors;
    pages[i] = key < end ? table[key / kPageSize] : 0;
  }
}

// This warp's keys of [tile0, tile0 + kTileK) of kv head `head` into the
// stage at `dst` (shared address): K rows, then V rows. Keys at or past
// `end` are zero-filled without a read. `evict_first`: the L2 evict-first
// policy (see the callers).
MLAGEN_DEVICE void issue_tile(const mlagen_paged_decode_params &p, const int (&pages)[kCopies], int head,
                              int tile0, int end, u32 dst, bool evict_first) {
  const nv::L2Stream stream = nv::l2_stream(evict_first);
  const u8 *k_cache = static_cast<const u8 *>(p.k_cache);
  const u8 *v_cache = static_cast<const u8 *>(p.v_cache);
  const int first_row = (thread_index() / 32) * kWarpKeys, lane = thread_index() % 32;
#pragma unroll
  for (int i = 0; i < kCopies; ++i) {
    const int index = lane + i * 32;
    const int row = first_row + index / kRowVectors, vec = index % kRowVectors;
    const int key = tile0 + row;
    const long long offset = (long long)pages[i] * p.kv_block_stride +
                             (long long)(key % kPageSize) * p.kv_token_stride + (long long)head * p.kv_head_stride;
    const u32 at = dst + row * kCachePitch + chunk_at(row, vec);
    nv::cp_async_16_l2_128(at, k_cache + offset * kElemBytes + vec * 16, key < end, stream);
    nv::cp_async_16_l2_128(at + kTileBytes, v_cache + offset * kElemBytes + vec * 16, key < end, stream);
  }
}

// fp8 QK: ldmatrix gives lane (g, t4) bytes 4 t4 .. 4 t4 + 3 of a 16-byte
// row slice, which widen to K's A fragment columns k = {2 t4, 2 t4 + 1}
// and {2 t4 + 8, 2 t4 + 9}. So column c of a 16-column k-step holds q's
// (and K's) dimension fp8_q_column(c) of that step.
MLAGEN_DEVICE int fp8_q_column(int c) {
  const int in_step = c % 16;
  return c - in_step + 4 * (in_step % 8 / 2) + 2 * (in_step / 8) + in_step % 2;
}

// The dimension of row g + 8 h of O^T's m-tile m. fp8: a transposed
// ldmatrix of raw V gives lane (g, t4) keys 2 t4, 2 t4 + 1 of dimensions
// 2 g and 2 g + 1 (bytes); widened, these are the A fragments of two
// m-tiles, the even (m = 2 dd) and the odd dimensions of 32 dd .. 32 dd + 31.
MLAGEN_DEVICE int o_dim(int m, int h, int g) {
  if (!kCacheFP8)
    return 16 * m + 8 * h + g;
  return 32 * (m / 2) + 16 * h + 2 * g + m % 2;
}

} // namespace mma

MLAGEN_DEVICE void decode_mma(const mlagen_paged_decode_params &p, int item_index, int head_block) {
  using namespace mma;
  // The mma operand type: the cache's, or fp16 for an fp8 cache.
  typedef select_type<kCacheFP8, fp16, Elem>::type MmaElem;
  extern __shared__ __attribute__((aligned(16))) u8 smem[];
  const u32 smem_base = nv::shared_address(smem);
  float *stat_m = reinterpret_cast<float *>(smem + kMmaStatOffset); // [warp][16]
  float *stat_l = stat_m + kWarps * 16;
  u16 *q_smem = reinterpret_cast<u16 *>(smem + kMmaQOffset);      // [16][kPitch / 2]

  const int tid = thread_index(), warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t4 = lane % 4; // mma fragment row and column pair
  const int *item = p.work + 4 * item_index;
  const int b = item[0], key_begin = item[1], key_end_item = item[2], slot = item[3];
  const int head = head_block / kRowBlocks;
  const int row_base = (head_block % kRowBlocks) * kRowsPerBlock;
  const int seq_len = p.seq_lens[b];
  const int *table = p.block_table + (long long)b * p.block_table_stride;

  int lo = key_begin;
  if (kWindowLeft >= 0)
    lo = max_int(lo, seq_len - kQLen - kWindowLeft);
  const int hi = min_int(key_end_item, seq_len);
  const int tiles = lo < hi ? (hi - lo + kTileK - 1) / kTileK : 0;

  // A chunk of an fp8 cache with a partial slot (the reduce merges it)
  // streams evict-first from L2 (H200, Llama-3-8B heads, page 16: B1
  // S32768 51.7 -> 48.4 us, B4 S16384 72.3 -> 67.5, B8-B64 4-7% faster);
  // bf16 chunks gained at B1-B8 (61.5 -> 56.8 at B1) but lost 2.4% at B16
  // S8192, so they keep plain copies.
  const bool evict_first = kCacheFP8 && slot >= 0;
  // The block-table entries of the first kStages tiles are read together
  // (one latency, not kStages), then the first kStages - 1 tiles start;
  // every step commits one group (empty past the last tile) so that
  // wait<kStages - 2> means "this tile".
  int ahead[kStages][kCopies];
#pragma unroll
  for (int s = 0; s < kStages; ++s)
    fetch_pages(table, lo + s * kTileK, hi, ahead[s]);
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles)
      issue_tile(p, ahead[s], head, lo + s * kTileK, hi, smem_base + s * kStageBytes, evict_first);
    nv::cp_async_commit();
  }
  int pages[kCopies];
#pragma unroll
  for (int i = 0; i < kCopies; ++i)
    pages[i] = ahead[kStages - 1][i];

  // q rows of this block, zero past kRowsPerBlock (the mma's pad rows);
  // read while the first tiles are in flight.
  for (int i = tid; i < 16 * kHeadDim; i += kThreads) {
    const int r = i / kHeadDim, c = i % kHeadDim;
    u16 bits = 0;
    if (r < kRowsPerBlock) {
      const int row = row_base + r, t = row / kGroup, h = head * kGroup + row % kGroup;
      const int dim = kCacheFP8 ? fp8_q_column(c) : c;
      bits = static_cast<const u16 *>(p.q)[b * p.q_batch_stride + t * p.q_token_stride + h * p.q_head_stride + dim];
      if (kCacheFP8) { // q in the mma's fp16
        float x, unused;
        unpack2<Elem>(bits, x, unused);
        bits = static_cast<u16>(pack2<fp16>(x, 0.0f));
      }
    }
    q_smem[r * (kPitch / 2) + c] = bits;
  }
  block_barrier(); // q is in shared memory

  // ldmatrix lane addressing (lane i addresses row i % 8 of matrix i / 8;
  // a staged row's chunks by `chunk_at`, and every row a lane addresses is
  // r8 modulo 8). K (A operand, keys as rows) and raw fp8 V: matrices (keys
  // 0-7, chunk 0), (8-15, 0), (0-7, 1), (8-15, 1) of a 32-byte step; 16-bit
  // V^T (A operand of O^T, transposed from the stage): (keys 0-7, chunk
  // 0), (0-7, 1), (8-15, 0), (8-15, 1); q (B operand, q rows as n): rows
  // r8 of n-tile nt, columns 8 (m8 % 2) of a step.
  const int m8 = lane / 8, r8 = lane % 8;
  const u32 k_lane = ((m8 % 2) * 8 + r8) * kCachePitch;
  const u32 v_lane = ((m8 / 2) * 8 + r8) * kCachePitch;
  const int k_chunk = m8 / 2, v_chunk = m8 % 2;
  const u32 q_lane = smem_base + kMmaQOffset + r8 * kPitch + (m8 % 2) * 16;
  auto q_at = [&](int d, int nt) { return q_lane + nt * 8 * kPitch + d * 32; };
  u32 q_frag[kQInRegisters ? kDimSteps : 1][kNTiles][2];
  if (kQInRegisters) {
#pragma unroll
    for (int d = 0; d < (kQInRegisters ? kDimSteps : 0); ++d)
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
        nv::ldmatrix_x2(q_frag[kQInRegisters ? d : 0][nt], q_at(d, nt));
  }
  // The B fragment of q for k-step d and n-tile nt.
  auto q_step = [&](int d, int nt, u32(&qb)[2]) {
    if (kQInRegisters) {
      qb[0] = q_frag[kQInRegisters ? d : 0][nt][0];
      qb[1] = q_frag[kQInRegisters ? d : 0][nt][1];
    } else {
      nv::ldmatrix_x2(qb, q_at(d, nt));
    }
  };

  const float logit_scale = p.softmax_scale * (kCacheFP8 ? *p.k_scale : 1.0f);
  // This thread's q rows (the S^T columns 8 nt + 2 t4 + j, j = 0, 1): their
  // last visible key and slope. Pad rows borrow the last real row's and
  // are never written.
  int pos[kNTiles][2];
  float slope[kNTiles][2];
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int r = min_int(8 * nt + 2 * t4 + j, kRowsPerBlock - 1), row = row_base + r;
      pos[nt][j] = seq_len - kQLen + row / kGroup;
      slope[nt][j] = kAlibi ? p.alibi_slopes[head * kGroup + row % kGroup] : 0.0f;
    }

  // O^T: m-tile m (16 dimensions, `o_dim`) by n-tile nt (8 q rows).
  float o[kDimSteps][kNTiles][4];
#pragma unroll
  for (int m = 0; m < kDimSteps; ++m)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[m][nt][e] = 0.0f;
  float m_run[kNTiles][2], l_run[kNTiles][2];
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      m_run[nt][j] = kNegInf;
      l_run[nt][j] = 0.0f;
    }

  for (int it = 0; it < tiles; ++it) {
    nv::cp_async_wait<kStages - 2>();
    warp_barrier(); // this warp's keys of tile `it` landed; it is done with it - 1
    {
      const int next = it + kStages - 1;
      if (next < tiles) {
        issue_tile(p, pages, head, lo + next * kTileK, hi, smem_base + (next % kStages) * kStageBytes, evict_first);
        fetch_pages(table, lo + (next + 1) * kTileK, hi, pages);
      }
      nv::cp_async_commit();
    }
    // This warp's rows in the stage.
    const u32 k_tile = smem_base + (it % kStages) * kStageBytes + warp * kWarpKeys * kCachePitch;
    const u32 v_tile = k_tile + kTileBytes;
#pragma unroll
    for (int ks = 0; ks < kKeySteps; ++ks) {
      const int tile_row = ks * 16; // within the warp's rows
      const int key0 = lo + it * kTileK + warp * kWarpKeys + tile_row;
      if (key0 >= hi)
        break; // warp-uniform: the rest of the tile is past the range

      // S^T = K q^T for 16 keys (the mma's rows) by the block's q rows.
      float s[kNTiles][4];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[nt][e] = 0.0f;
      auto qk_step = [&](int d, const u32(&ka)[4]) {
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          u32 qb[2];
          q_step(d, nt, qb);
          nv::mma_16x8x16<MmaElem>(s[nt], ka, qb[0], qb[1]);
        }
      };
      if (kCacheFP8) {
        // raw[m]: key g + 8 (m % 2), bytes 4 t4 .. 4 t4 + 3 of step 2 dd +
        // m / 2, which widen to the A fragment's columns 2 t4, 2 t4 + 1 and
        // 2 t4 + 8, 2 t4 + 9.
#pragma unroll
        for (int dd = 0; dd < kDimSteps / 2; ++dd) {
          u32 raw[4];
          nv::ldmatrix_x4(raw, k_tile + tile_row * kCachePitch + k_lane + chunk_at(r8, 2 * dd + k_chunk));
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            u32 ka[4];
            fp8e4m3x4_to_f16(raw[2 * h], ka[0], ka[2]);
            fp8e4m3x4_to_f16(raw[2 * h + 1], ka[1], ka[3]);
            qk_step(2 * dd + h, ka);
          }
        }
      } else {
#pragma unroll
        for (int d = 0; d < kDimSteps; ++d) {
          u32 ka[4];
          nv::ldmatrix_x4(ka, k_tile + tile_row * kCachePitch + k_lane + chunk_at(r8, 2 * d + k_chunk));
          qk_step(d, ka);
        }
      }

      // Online softmax in the log2 domain; s[nt][e] is key key0 + g + 8
      // (e / 2) of q row 8 nt + 2 t4 + e % 2. A row's maximum joins the 8
      // lanes that share t4.
      float tile_max[kNTiles][2];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        tile_max[nt][0] = tile_max[nt][1] = kNegInf;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int j = e % 2, key = key0 + g + 8 * (e / 2);
          float x = s[nt][e] * logit_scale;
          if (kSoftCap > 0.0f)
            x = kSoftCap * tanh_approx(x * (1.0f / kSoftCap));
          if (kAlibi)
            x -= slope[nt][j] * static_cast<float>(pos[nt][j] - key);
          const bool visible =
              key < hi && key <= pos[nt][j] && (kWindowLeft < 0 || key >= pos[nt][j] - kWindowLeft);
          s[nt][e] = visible ? x * kLog2e : kNegInf;
          tile_max[nt][j] = max_float(tile_max[nt][j], s[nt][e]);
        }
      }
      float alpha[kNTiles][2];
      bool moved = false;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float t = tile_max[nt][j];
          t = max_float(t, shfl_xor(t, 4));
          t = max_float(t, shfl_xor(t, 8));
          t = max_float(t, shfl_xor(t, 16));
          const float m_new = max_float(m_run[nt][j], t);
          // All keys masked so far: subtract 0, not -inf, so exp2 gives 0.
          const float m_use = m_new == kNegInf ? 0.0f : m_new;
          alpha[nt][j] = exp2_approx(m_run[nt][j] - m_use);
          moved = moved || alpha[nt][j] != 1.0f;
          m_run[nt][j] = m_new;
          s[nt][j] = exp2_approx(s[nt][j] - m_use);
          s[nt][j + 2] = exp2_approx(s[nt][j + 2] - m_use);
          // This lane's keys; the lanes of a row are joined at the end.
          l_run[nt][j] = l_run[nt][j] * alpha[nt][j] + s[nt][j] + s[nt][j + 2];
        }
      // The running maxima rarely move after the first tiles: skip the
      // rescale when no row of the warp changed.
      if (!all_lanes(!moved)) {
#pragma unroll
        for (int m = 0; m < kDimSteps; ++m)
#pragma unroll
          for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              o[m][nt][e] *= alpha[nt][e % 2];
      }

      // O^T += V^T P^T. P^T's B fragment wants keys 2 t4, 2 t4 + 1 (+ 8) of
      // q row g; S^T's C fragment holds q rows 2 t4, 2 t4 + 1 of key g
      // (+ 8): each 8 x 8 half, packed, is transposed in registers.
      u32 pb[kNTiles][2];
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        pb[nt][0] = nv::movmatrix_trans(pack2<MmaElem>(s[nt][0], s[nt][1]));
        pb[nt][1] = nv::movmatrix_trans(pack2<MmaElem>(s[nt][2], s[nt][3]));
      }
      auto pv_step = [&](int m, const u32(&va)[4]) {
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
          nv::mma_16x8x16<MmaElem>(o[m][nt], va, pb[nt][0], pb[nt][1]);
      };
      if (kCacheFP8) {
        // raw[i]: keys 2 t4, 2 t4 + 1 (+ 8 for odd i) of dimensions
        // 32 dd + 16 (i / 2) + 2 g, + 1; bytes reordered so that each 16-bit
        // half is one dimension's key pair, then widened: the A fragments of
        // the even (m-tile 2 dd) and the odd (2 dd + 1) dimensions.
#pragma unroll
        for (int dd = 0; dd < kDimSteps / 2; ++dd) {
          u32 raw[4], even[4], odd[4];
          nv::ldmatrix_x4_trans(raw, v_tile + tile_row * kCachePitch + k_lane + chunk_at(r8, 2 * dd + k_chunk));
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int a = (i % 2) * 2 + i / 2; // A register: rows g + 8 (i / 2), keys + 8 (i % 2)
            fp8e4m3x4_to_f16(__byte_perm(raw[i], 0u, 0x3120), even[a], odd[a]);
          }
          pv_step(2 * dd, even);
          pv_step(2 * dd + 1, odd);
        }
      } else {
#pragma unroll
        for (int m = 0; m < kDimSteps; ++m) {
          u32 va[4];
          nv::ldmatrix_x4_trans(va, v_tile + tile_row * kCachePitch + v_lane + chunk_at(r8, 2 * m + v_chunk));
          pv_step(m, va);
        }
      }
    }
  }

  // Merge the warps: stats first, then each warp's rows scaled to the
  // common maximum into scratch over the (now idle) stages.
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      l_run[nt][j] += shfl_xor(l_run[nt][j], 4);
      l_run[nt][j] += shfl_xor(l_run[nt][j], 8);
      l_run[nt][j] += shfl_xor(l_run[nt][j], 16);
    }
  nv::cp_async_wait<0>();
  block_barrier();
  if (g == 0)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        stat_m[warp * 16 + 8 * nt + 2 * t4 + j] = m_run[nt][j];
        stat_l[warp * 16 + 8 * nt + 2 * t4 + j] = l_run[nt][j];
      }
  block_barrier();
  float *scratch = reinterpret_cast<float *>(smem); // [warp][row][kScratchPitch]
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int r = 8 * nt + 2 * t4 + j;
      if (r < kRowsPerBlock) {
        float m_all = kNegInf;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
          m_all = max_float(m_all, stat_m[w * 16 + r]);
        const float f = exp2_approx(m_run[nt][j] - (m_all == kNegInf ? 0.0f : m_all));
        float *dst = scratch + (warp * kRowsPerBlock + r) * kScratchPitch;
#pragma unroll
        for (int m = 0; m < kDimSteps; ++m) {
          dst[o_dim(m, 0, g)] = o[m][nt][j] * f;
          dst[o_dim(m, 1, g)] = o[m][nt][j + 2] * f;
        }
      }
    }
  block_barrier();

  // 8 columns of one row per thread: sum the warps, normalise, write.
  for (int i = tid; i < kRowsPerBlock * (kHeadDim / 8); i += kThreads) {
    const int r = i / (kHeadDim / 8), c = i % (kHeadDim / 8) * 8;
    float m_all = kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      m_all = max_float(m_all, stat_m[w * 16 + r]);
    const float m_use = m_all == kNegInf ? 0.0f : m_all;
    float l = 0.0f, x[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      l += stat_l[w * 16 + r] * exp2_approx(stat_m[w * 16 + r] - m_use);
      const float *src = scratch + (w * kRowsPerBlock + r) * kScratchPitch + c;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        x[e] += src[e];
    }
    const float norm = l > 0.0f ? (kCacheFP8 ? *p.v_scale : 1.0f) / l : 0.0f;
    const int row = row_base + r, t = row / kGroup, h = head * kGroup + row % kGroup;
    if (slot < 0) {
      Vec16 out;
#pragma unroll
      for (int e = 0; e < 4; ++e)
        out.w[e] = pack2<Elem>(x[2 * e] * norm, x[2 * e + 1] * norm);
      *reinterpret_cast<Vec16 *>(static_cast<u16 *>(p.out) + b * p.out_batch_stride + t * p.out_token_stride +
                                 h * p.out_head_stride + c) = out;
    } else {
      float *dst = p.partial_out + ((long long)slot * (kQLen * kNumQHeads) + t * kNumQHeads + h) * kHeadDim + c;
#pragma unroll
      for (int e = 0; e < 8; ++e)
        dst[e] = x[e] * norm;
    }
    if (c == 0) {
      const float lse = l > 0.0f ? (m_all + log2_approx(l)) * kLn2 : kNegInf;
      if (slot >= 0)
        p.partial_lse[(long long)slot * (kQLen * kNumQHeads) + t * kNumQHeads + h] = lse;
      else if (kReturnLSE && p.lse)
        p.lse[((long long)b * kQLen + t) * kNumQHeads + h] = lse;
    }
  }
}
#endif // MLAGEN_TARGET_NVIDIA

} // namespace paged_decode
} // namespace mlagen

// NVIDIA: registers for kBlocksPerSM blocks an SM (the code object states
// them and the decode planner counts no more). CDNA's prelude takes the
// thread count alone.
#if MLAGEN_TARGET_NVIDIA
#define MLAGEN_PAGED_DECODE_BOUNDS __launch_bounds__(mlagen_config::kThreads, mlagen_config::kBlocksPerSM)
#else
#define MLAGEN_PAGED_DECODE_BOUNDS __launch_bounds__(mlagen_config::kThreads)
#endif
extern "C" __global__ void MLAGEN_PAGED_DECODE_BOUNDS
    mlagen_paged_decode(mlagen_paged_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::paged_decode;
  // Consecutive blocks take the kv heads (and row blocks) of one work item,
  // so the blocks running together read whole token rows of the cache
  // (all heads of a key are adjacent) rather than one head's slice of many.
  // Launched early (PAGED_DECODE_CONTRACT.md): wait for the previous kernel.
  grid_dependency_wait();
  allow_next_kernel();
  const int item_index = block_index_x() / kBlocksPerItem;
  const int head_block = block_index_x() % kBlocksPerItem;
  if (item_index >= p.num_work[0])
    return;
#if MLAGEN_TARGET_NVIDIA
  if (kMatrixCores) {
    decode_mma(p, item_index, head_block);
    return;
  }
#else
  static_assert(!kMatrixCores, "the matrix-core paged decode is NVIDIA's");
#endif
  decode_simt(p, item_index, head_block);
}


// Merges the slots of request blockIdx.x by LSE, in slot order: one row per
// kReduceThreads / kReduceRowsPerBlock threads.
extern "C" __global__ void __launch_bounds__(mlagen_config::kReduceThreads)
    mlagen_paged_decode_reduce(mlagen_paged_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::paged_decode;
  constexpr int kRows = kQLen * kNumQHeads;
  constexpr int kRowThreads = kReduceThreads / kReduceRowsPerBlock;
  grid_dependency_wait(); // launched early: mlagen_paged_decode may still run
  allow_next_kernel();
  const int b = block_index_x();
  const int first = p.merge[2 * b], count = p.merge[2 * b + 1];
  const int row = block_index_y() * kReduceRowsPerBlock + thread_index() / kRowThreads;
  if (count == 0 || row >= kRows)
    return;
  const int lane = thread_index() % kRowThreads;
  const int t = row / kNumQHeads, h = row % kNumQHeads;
  float m = kNegInf;
  for (int i = 0; i < count; ++i)
    m = max_float(m, p.partial_lse[(long long)(first + i) * kRows + row]);
  const float m_use = m == kNegInf ? 0.0f : m;
  float total = 0.0f;
  for (int i = 0; i < count; ++i)
    total += exp2_approx((p.partial_lse[(long long)(first + i) * kRows + row] - m_use) * kLog2e);
  const float inv = total > 0.0f ? 1.0f / total : 0.0f;
  for (int c = 2 * lane; c < kHeadDim; c += 2 * kRowThreads) {
    float x0 = 0.0f, x1 = 0.0f;
    for (int i = 0; i < count; ++i) {
      const long long r = (long long)(first + i) * kRows + row;
      const float w = exp2_approx((p.partial_lse[r] - m_use) * kLog2e);
      x0 += w * p.partial_out[r * kHeadDim + c];
      x1 += w * p.partial_out[r * kHeadDim + c + 1];
    }
    *reinterpret_cast<u32 *>(static_cast<u16 *>(p.out) + b * p.out_batch_stride + t * p.out_token_stride +
                             h * p.out_head_stride + c) = pack2<Elem>(x0 * inv, x1 * inv);
  }
  if (lane == 0 && kReturnLSE && p.lse)
    p.lse[((long long)b * kQLen + t) * kNumQHeads + h] = total > 0.0f ? m + log2_approx(total) * kLn2 : kNegInf;
}
