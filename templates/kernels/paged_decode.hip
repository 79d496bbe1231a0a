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
// mlagen_paged_decode: grid (work capacity, kNumKVHeads * kRowBlocks), one
// block per (work item, kv head, row block) handling kRowsPerBlock of the kv
// head's kQLen x group rows, so each K/V row of a chunk is read once per kv
// head (per row block). CUDA-core fp32 math, portable to wave32 and wave64:
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
static_assert(kSharedBytesUsed <= kSharedBytes, "shared memory layout exceeds kSharedBytes");

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

} // namespace paged_decode
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_paged_decode(mlagen_paged_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::paged_decode;
  if (block_index_x() >= p.num_work[0])
    return;
  extern __shared__ __attribute__((aligned(16))) u8 smem[];
  u8 *k_smem = smem;
  u8 *v_smem = smem + kKVBytes;
  float *scores = reinterpret_cast<float *>(smem + kScoreOffset); // [row][key]
  float *q_smem = reinterpret_cast<float *>(smem + kQOffset);     // [row][col]
  float *alpha_smem = reinterpret_cast<float *>(smem + kStatOffset);
  float *l_smem = alpha_smem + 16;

  const int tid = thread_index();
  const int *item = p.work + 4 * block_index_x();
  const int b = item[0], key_begin = item[1], key_end_item = item[2], slot = item[3];
  const int head = block_index_y() / kRowBlocks;
  const int row_base = (block_index_y() % kRowBlocks) * kRowsPerBlock;
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

// Merges the slots of request blockIdx.x by LSE, in slot order: one row per
// kReduceThreads / kReduceRowsPerBlock threads.
extern "C" __global__ void __launch_bounds__(mlagen_config::kReduceThreads)
    mlagen_paged_decode_reduce(mlagen_paged_decode_params p) {
  using namespace mlagen;
  using namespace mlagen::paged_decode;
  constexpr int kRows = kQLen * kNumQHeads;
  constexpr int kRowThreads = kReduceThreads / kReduceRowsPerBlock;
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
