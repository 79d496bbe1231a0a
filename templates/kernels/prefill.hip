// Varlen flash-attention forward (FlashAttention-2 online softmax) on matrix
// cores only: mma.sync on NVIDIA, MFMA on AMD CDNA. A block computes kTileQ
// query rows of one query head of one sequence against every key tile those
// rows can see. templates/CONTRACT.md defines the ABI, grid and masking rule.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/PrefillParams.h. Strides are in elements.
struct mlagen_prefill_params {
  const void *q;
  const void *k;
  const void *v;
  void *out;
  float *lse;
  const int *cu_seqlens_q;
  const int *cu_seqlens_k;
  long long q_token_stride, q_head_stride;
  long long k_token_stride, k_head_stride;
  long long v_token_stride, v_head_stride;
  long long out_token_stride, out_head_stride;
  long long lse_head_stride;
  int batch;
  int max_seqlen_q;
  float softmax_scale;
  // 1: k_map and v_map describe k and v for bulk tensor copies (the sm_90a
  // wgmma kernel); 0: every kernel copies with cp.async or loads.
  int kv_maps_ready;
  const float *alibi_slopes; // [kNumQHeads] when kAlibi, else unread
  alignas(64) unsigned char k_map[128]; // CUtensorMap of k: (dim, kv head, token)
  alignas(64) unsigned char v_map[128]; // CUtensorMap of v
};

namespace mlagen {
namespace prefill {

using namespace mlagen_config;

typedef select_type<kInputBF16, bf16, fp16>::type Elem;

static_assert(kHeadDimQK % 16 == 0 && kHeadDimV % 16 == 0, "head dims are multiples of 16");
static_assert(kNumQHeads % kNumKVHeads == 0, "kNumKVHeads divides kNumQHeads");
static_assert(kTileK % 16 == 0, "kTileK is a multiple of 16");
static_assert(kThreads == kNumWarps * kWaveSize, "kThreads = kNumWarps * kWaveSize");
static_assert(kStages >= 1, "at least one K/V buffer");

constexpr int kQueryHeadsPerKVHead = kNumQHeads / kNumKVHeads;

// sm_90a runs the warp-specialised wgmma kernel (warpgroup_mma) when the
// tiling pass gives it a producer warpgroup plus one consumer warpgroup per
// 64 query rows; one warp per 16 rows selects mma.sync (warp_mma).
#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
constexpr bool kWarpSpecialized = kTileQ % 64 == 0 && kNumWarps == 4 * (kTileQ / 64 + 1);
#else
constexpr bool kWarpSpecialized = false;
#endif

// Key visibility within one sequence. Query i lines up with key
// i + len_k - len_q (bottom-right aligned) and sees the keys of
// [i + len_k - len_q - kWindowLeft, i + len_k - len_q + kReachRight] that
// exist; an unbounded side is replaced by the sequence edge.
constexpr bool kBoundedLeft = kWindowLeft >= 0;
constexpr bool kBoundedRight = kCausal || kWindowRight >= 0;
constexpr int kReachRight = kCausal ? 0 : kWindowRight;

struct Sequence {
  int len_q;
  int len_k;

  // First key query i sees; may lie outside [0, len_k).
  MLAGEN_DEVICE int key_begin(int i) const {
    return kBoundedLeft ? i + len_k - len_q - kWindowLeft : 0;
  }
  // The key position query i lines up with (ALiBi measures from it).
  MLAGEN_DEVICE int diagonal(int i) const { return i + len_k - len_q; }
  // One past the last key query i sees, at most len_k.
  MLAGEN_DEVICE int key_end(int i) const {
    return kBoundedRight ? min_int(len_k, i + len_k - len_q + kReachRight + 1) : len_k;
  }
  MLAGEN_DEVICE bool sees(int i, int j) const { return j >= key_begin(i) && j < key_end(i); }
};

// Queries first..last of a block, warp or wave (visibility bounds are
// monotone in the query, so the extreme rows bound the whole range).
struct QueryRows {
  int first;
  int last;

  MLAGEN_DEVICE int key_begin(const Sequence &seq) const { return max_int(0, seq.key_begin(first)); }
  MLAGEN_DEVICE int key_end(const Sequence &seq) const { return seq.key_end(last); }
  MLAGEN_DEVICE bool touches(const Sequence &seq, int k0) const {
    return k0 < key_end(seq) && k0 + kTileK > key_begin(seq);
  }
  // Some (query, key) of this tile is invisible, so elements must be masked.
  MLAGEN_DEVICE bool needs_mask(const Sequence &seq, int k0) const {
    return k0 + kTileK > seq.key_end(first) || k0 < seq.key_begin(last);
  }
};

// Logits in log2 units, so that softmax runs on exp2. A score is what the
// kernel keeps per (query, key): the soft-capped logit, or without a cap the
// raw q.k, whose scaling folds into the exp2 argument (one contracted FMA).
// ALiBi adds its bias to the score after the cap, pre-divided by the unit
// (FlashAttention divides the slope by its softmax scale the same way), so
// that it reaches the logit unscaled.
struct Logits {
  float unit;       // log2-unit logit = score * unit
  float cap_factor; // q.k -> tanh argument
  float alibi_step; // score change per key of distance; 0 without ALiBi

  MLAGEN_DEVICE Logits(float softmax_scale, float alibi_slope)
      : unit(kSoftCap > 0.0f ? 1.0f : softmax_scale * kLog2e),
        cap_factor(kSoftCap > 0.0f ? softmax_scale / kSoftCap : 0.0f),
        alibi_step(!kAlibi ? 0.0f : kSoftCap > 0.0f ? alibi_slope * kLog2e : alibi_slope / softmax_scale) {}
  MLAGEN_DEVICE float score(float qk) const {
    return kSoftCap > 0.0f ? kSoftCap * kLog2e * tanh_approx(qk * cap_factor) : qk;
  }
  // The ALiBi-biased score of a key `distance` = key - diagonal(query)
  // away: -slope * |distance|, which is slope * distance where causal
  // masking leaves only distance <= 0. Identity without ALiBi.
  MLAGEN_DEVICE float biased(float score, int distance) const {
    if (!kAlibi)
      return score;
    const float d = static_cast<float>(distance);
    return alibi_step * (kCausal || d < 0.0f ? d : -d) + score;
  }
  // exp2(logit - base) of a score; -inf (masked) gives 0.
  MLAGEN_DEVICE float exp2_shifted(float score, float base) const {
    return exp2_approx(score * unit - base);
  }
};

// Online-softmax state of one query row: running max (log2 units) and this
// lane's share of the running sum (lanes are summed once, at the end).
struct RowState {
  float max;
  float sum;

  // A constructor, not default member initializers: CUDA 13.0 initialises
  // only the first row of a 2-D array of such a struct (RowState in
  // kernels/mla_decode.hip says more).
  MLAGEN_DEVICE RowState() : max(kNegInf), sum(0.0f) {}

  // Takes the tile's row max (log2 units, over all lanes); returns the
  // factor that rescales what was accumulated so far and sets `base`, the
  // value to subtract before exp2. A row that has seen only masked keys keeps
  // max = -inf and uses base 0, so its probabilities are 0 rather than NaN.
  MLAGEN_DEVICE float update(float tile_max, float &base) {
    const float new_max = max_float(max, tile_max);
    base = new_max == kNegInf ? 0.0f : new_max;
    const float alpha = exp2_approx(max - base);
    max = new_max;
    sum *= alpha;
    return alpha;
  }
  // `total` is the row sum over all lanes. A row that saw no key writes 0
  // and LSE -inf.
  MLAGEN_DEVICE static float output_scale(float total) { return total > 0.0f ? 1.0f / total : 0.0f; }
  MLAGEN_DEVICE float lse(float total) const {
    return total > 0.0f ? (max + log2_approx(total)) * kLn2 : kNegInf;
  }
};

// One block's work, with the pointers already at its sequence and heads.
struct Task {
  Sequence seq;
  int q0;           // first query row of the block, within the sequence
  const u16 *q;     // row q0
  const u16 *k;     // key 0 of the kv head
  const u16 *v;
  u16 *out;         // row q0
  float *lse;       // query 0 of the sequence, or null
  long long q_stride, k_stride, v_stride, out_stride;
  Logits logits;
  int kv_head;      // for tensor-map coordinates: key 0 is row k_row0 of k and v
  int k_row0;
};

// Thread layout for copying tiles of kCols-element rows in 16-byte chunks:
// up to 8 threads share a row (128 contiguous bytes), the block covers
// kRowsPerPass rows at a time and each thread steps over kColumnBlocks.
template <int kCols>
struct TileCopy {
  static constexpr int kChunks = kCols / 8;
  static constexpr int kThreadsPerRow = kChunks % 8 == 0 ? 8 : kChunks % 4 == 0 ? 4 : kChunks % 2 == 0 ? 2 : 1;
  static constexpr int kRowsPerPass = kThreads / kThreadsPerRow;
  static constexpr int kBlockCols = 8 * kThreadsPerRow;
  static constexpr int kColumnBlocks = kChunks / kThreadsPerRow;
};

#if MLAGEN_TARGET_NVIDIA
// NVIDIA, mma.sync m16n8k16: each warp owns 16 query rows. Q fragments stay
// in registers; S = Q K^T accumulates in C fragments that are rescaled in
// place, converted to 16-bit and reused as the A operand of O += P V.
// K and V tiles stream global -> shared through cp.async, kStages deep.
namespace warp_mma {

@@MLAGEN_PART_WARP_MMA@@

} // namespace warp_mma
#endif // MLAGEN_TARGET_NVIDIA

#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
// sm_90a, FlashAttention-3 style: warpgroup 0 is the producer, streaming Q
// once and then K/V tiles into kStages shared-memory buffers with cp.async
// (in the 128-byte swizzle that wgmma reads; completion arrives on
// mbarriers; K and V buffers are released separately); each further
// warpgroup is a consumer owning 64 query rows. S = Q K^T is wgmma with K
// (and Q, unless Q fits in registers) from shared memory; P stays in
// registers as the A operand of O += P V, whose B (V, MN-major) is read
// transposed from shared memory. A consumer issues S of tile j with P V of
// tile j - 1; with two or three consumers, named barriers make their
// products take turns, so that one warpgroup's softmax runs under the
// others' products.
// With tensor maps of k and v from the host, K and V tiles arrive by bulk
// tensor copies (TMA) instead (produce_bulk); Q always by cp.async.
namespace warpgroup_mma {

@@MLAGEN_PART_WARPGROUP_MMA@@

} // namespace warpgroup_mma
#endif // MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A

#if MLAGEN_TARGET_CDNA
// AMD CDNA, wave64 MFMA 16x16: each wave owns kBlocksPerWave blocks of 16
// queries. S^T = K Q^T puts query l % 16 in lane l's accumulator column, which
// is also the B layout of O^T += V^T P^T, whose accumulator again keeps query
// l % 16 per lane: each lane rescales and normalises only its own query, and
// row reductions are two shuffles across l / 16. Q^T stays in registers; K
// and V^T (transposed on its way into LDS, so lanes read contiguous keys)
// are staged through registers, the next tile's loads overlapping this
// tile's math.
namespace wave_mfma {

@@MLAGEN_PART_WAVE_MFMA@@

} // namespace wave_mfma
#endif // MLAGEN_TARGET_CDNA

// What one block computes: query tile q_tile of `head` in `sequence`.
struct GridItem {
  int sequence, head, q_tile;
};

// Blocks start roughly in linear order (x fastest), each as soon as an SM
// frees, so the order decides how the grid ends. Without a causal mask every
// tile costs the same and x, y, z are taken as they are. With one, query
// tile t sees t + 1 key tiles: the grid is taken in bands of band_heads()
// (sequence, head) pairs, and within a band tile by tile, longest first,
// heads fastest, so the last band's short tiles fill the end of the grid.
// Taking each head's tiles in turn instead started the last heads' long
// tiles near the end (H200, causal 192/128: B1 H16 S4096 456 -> 534
// TFLOP/s, B4 H16 S4096 563 -> 582). A band's keys and values stay in L2
// while its tiles run; on CDNA, which deals blocks round-robin to 8 XCDs,
// a band of 8 heads gives each XCD's L2 one head.
MLAGEN_DEVICE int band_heads(int max_seqlen) {
  // Key and value bytes of one query head (kv heads are shared), against
  // about half of a 50 MB L2; at most 8 heads per band.
  const long long head_bytes =
      (long long)max_seqlen * (kHeadDimQK + kHeadDimV) * sizeof(Elem) / kQueryHeadsPerKVHead;
  constexpr long long kBudget = 24ll << 20;
  return head_bytes * 8 <= kBudget ? 8 : head_bytes * 4 <= kBudget ? 4 : head_bytes * 2 <= kBudget ? 2 : 1;
}

MLAGEN_DEVICE GridItem grid_item(int batch, int max_seqlen_q) {
  const int tiles = ceil_div(max_seqlen_q, kTileQ);
  if (!kCausal)
    return {block_index_z(), block_index_y(), block_index_x()};
  const int pairs = batch * kNumQHeads;
  const int band = band_heads(max_seqlen_q);
  const int linear = block_index_x() + tiles * (block_index_y() + kNumQHeads * block_index_z());
  const int first_pair = linear / (tiles * band) * band;
  const int width = min_int(band, pairs - first_pair); // the last band may be narrower
  const int within = linear - first_pair * tiles;
  const int pair = first_pair + within % width;
  return {pair / kNumQHeads, pair % kNumQHeads, tiles - 1 - within / width};
}

} // namespace prefill
} // namespace mlagen

// The warp-specialised kernel declares one block per SM, without which
// ptxas ignores setmaxnreg; 0 leaves the mma.sync kernel as it was.
#if MLAGEN_TARGET_NVIDIA
#define MLAGEN_PREFILL_BOUNDS \
  __launch_bounds__(mlagen_config::kThreads, mlagen::prefill::kWarpSpecialized ? 1 : 0)
#else
#define MLAGEN_PREFILL_BOUNDS __launch_bounds__(mlagen_config::kThreads)
#endif

// __grid_constant__ (sm_90a): the tensor maps are read in place, in parameter space.
extern "C" __global__ void MLAGEN_PREFILL_BOUNDS mlagen_prefill(MLAGEN_GRID_CONSTANT mlagen_prefill_params p) {
  using namespace mlagen;
  using namespace mlagen::prefill;
  extern __shared__ __attribute__((aligned(16))) u16 mlagen_smem[];

  const GridItem item = grid_item(p.batch, p.max_seqlen_q);
  const int sequence = item.sequence;
  const int head = item.head;
  const int q0 = item.q_tile * kTileQ;
  const int q_offset = p.cu_seqlens_q[sequence];
  const int len_q = p.cu_seqlens_q[sequence + 1] - q_offset;
  if (q0 < 0 || q0 >= len_q)
    return;
  const int k_offset = p.cu_seqlens_k[sequence];
  const int len_k = p.cu_seqlens_k[sequence + 1] - k_offset;
  const int kv_head = head / kQueryHeadsPerKVHead;

  const Task task = {
      {len_q, len_k},
      q0,
      static_cast<const u16 *>(p.q) + (q_offset + q0) * p.q_token_stride + head * p.q_head_stride,
      static_cast<const u16 *>(p.k) + k_offset * p.k_token_stride + kv_head * p.k_head_stride,
      static_cast<const u16 *>(p.v) + k_offset * p.v_token_stride + kv_head * p.v_head_stride,
      static_cast<u16 *>(p.out) + (q_offset + q0) * p.out_token_stride + head * p.out_head_stride,
      p.lse ? p.lse + head * p.lse_head_stride + q_offset : nullptr,
      p.q_token_stride,
      p.k_token_stride,
      p.v_token_stride,
      p.out_token_stride,
      Logits(p.softmax_scale, kAlibi ? p.alibi_slopes[head] : 0.0f),
      kv_head,
      k_offset};

#if MLAGEN_TARGET_NVIDIA && MLAGEN_ARCH_SM90A
  if constexpr (kWarpSpecialized)
    warpgroup_mma::attend(task, {p.kv_maps_ready ? p.k_map : nullptr, p.kv_maps_ready ? p.v_map : nullptr},
                          mlagen_smem);
  else
    warp_mma::attend(task, mlagen_smem);
#elif MLAGEN_TARGET_NVIDIA
  warp_mma::attend(task, mlagen_smem);
#else
  wave_mfma::attend(task, mlagen_smem);
#endif
}
