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

static_assert(kWaveSize == 32, "NVIDIA warps are 32 lanes");
static_assert(kWarpSpecialized || kTileQ == 16 * kNumWarps,
              "NVIDIA: each warp owns 16 query rows (kTileQ = 16 * kNumWarps)");
static_assert(kHeadDimV <= 256, "NVIDIA: a warp keeps 16 x kHeadDimV fp32 outputs in registers");

// Rows padded by 8 elements: the 8 rows an ldmatrix reads start 16 bytes
// apart modulo 128, so they hit distinct banks.
constexpr int kStrideQK = kHeadDimQK + 8;
constexpr int kStrideV = kHeadDimV + 8;
constexpr int kQTileElems = kTileQ * kStrideQK;
constexpr int kKTileElems = kTileK * kStrideQK;
constexpr int kVTileElems = kTileK * kStrideV;
constexpr int kSharedBytesUsed = 2 * (kQTileElems + kStages * (kKTileElems + kVTileElems));
static_assert(kWarpSpecialized || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKSteps = kHeadDimQK / 16; // k-steps of S = Q K^T
constexpr int kSTiles = kTileK / 8;       // n8 tiles of S
constexpr int kPVSteps = kTileK / 16;     // k-steps of O += P V
constexpr int kOTiles = kHeadDimV / 8;    // n8 tiles of O
// Q fragments live in registers unless they and the accumulators would need
// more than ~160 of the 255 registers a thread may use.
constexpr bool kQInRegisters = 4 * (kQKSteps + kSTiles + kOTiles) <= 160;
// Otherwise (head dims 192/192, 256) a fully unrolled Q K^T lets ptxas hoist
// every K fragment and spill on sm_80; two k-steps at a time keep it in 255.
constexpr int kQKUnroll = kQInRegisters ? kQKSteps : 2;

// Copies a row-major kRows x kCols global tile into shared memory with row
// stride kStride, zero-filling rows at or past `rows_valid`. Each thread
// keeps one 16-byte column chunk and walks rows and column blocks by
// constant steps, so its addresses cost a couple of registers.
template <int kRows, int kCols, int kStride>
MLAGEN_DEVICE void load_tile_async(u16 *dst, const u16 *src, long long src_stride, int rows_valid) {
  typedef TileCopy<kCols> Copy;
  const int tid = thread_index();
  const int row = tid / Copy::kThreadsPerRow;
  const int col = tid % Copy::kThreadsPerRow * 8;
  const u16 *const tile = src; // row 0 exists: a safe address for skipped rows
  dst += row * kStride + col;
  src += row * src_stride + col;
#pragma unroll
  for (int pass = 0; pass < ceil_div(kRows, Copy::kRowsPerPass); ++pass) {
    const int r = row + pass * Copy::kRowsPerPass;
    if (kRows % Copy::kRowsPerPass != 0 && r >= kRows)
      break;
    const bool valid = r < rows_valid;
#pragma unroll
    for (int cb = 0; cb < Copy::kColumnBlocks; ++cb)
      nv::cp_async_16(nv::shared_address(dst + pass * Copy::kRowsPerPass * kStride + cb * Copy::kBlockCols),
                      valid ? src + pass * Copy::kRowsPerPass * src_stride + cb * Copy::kBlockCols : tile,
                      valid);
  }
}

MLAGEN_DEVICE void attend(const Task &task, u16 *smem) {
  const Sequence &seq = task.seq;
  u16 *const q_tile = smem;
  u16 *const k_tiles = q_tile + kQTileElems;
  u16 *const v_tiles = k_tiles + kStages * kKTileElems;

  const int tid = thread_index();
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int group = lane / 4; // fragment row (and row + 8)
  const int quad = lane % 4;  // fragment column pair

  const int rows_q = min_int(kTileQ, seq.len_q - task.q0);
  const QueryRows block_rows = {task.q0, task.q0 + rows_q - 1};
  const int warp_q0 = task.q0 + warp * 16;
  const QueryRows warp_rows = {warp_q0, min_int(warp_q0 + 15, seq.len_q - 1)};
  const bool warp_has_rows = warp_q0 < seq.len_q;
  // When a row sees few keys each gets a large weight, and P's 16-bit
  // rounding (2^-9 relative) shows in the output at the level of its own
  // rounding. Such warps (one key tile at most: short sequences, the start
  // of a causal one) also multiply the rounding residue of P, which costs a
  // few MMAs once instead of precision everywhere.
  const bool few_keys = warp_has_rows && warp_rows.key_end(seq) - warp_rows.key_begin(seq) <= kTileK;

  const int key_begin = block_rows.key_begin(seq);
  const int key_end = block_rows.key_end(seq);
  const int first_tile = key_begin / kTileK;
  const int num_tiles = key_end > key_begin ? ceil_div(key_end, kTileK) - first_tile : 0;

  // Per-lane ldmatrix row offsets (elements): lane i addresses row i % 8 of
  // matrix i / 8; the matrices are ordered as the fragment registers.
  const int q_lane = (lane % 8 + 8 * (lane / 8 % 2)) * kStrideQK + 8 * (lane / 16) + warp * 16 * kStrideQK;
  const int k_lane = (lane % 8 + 8 * (lane / 16)) * kStrideQK + 8 * (lane / 8 % 2);
  const int v_lane = (lane % 8 + 8 * (lane / 8 % 2)) * kStrideV + 8 * (lane / 16);

  auto load_kv = [&](int tile) {
    const int k0 = tile * kTileK;
    const int buffer = (tile - first_tile) % kStages;
    load_tile_async<kTileK, kHeadDimQK, kStrideQK>(k_tiles + buffer * kKTileElems,
                                                   task.k + k0 * task.k_stride, task.k_stride,
                                                   seq.len_k - k0);
    load_tile_async<kTileK, kHeadDimV, kStrideV>(v_tiles + buffer * kVTileElems,
                                                 task.v + k0 * task.v_stride, task.v_stride,
                                                 seq.len_k - k0);
  };

  u32 q_frag[kQKSteps][4]; // unused, and optimised away, unless kQInRegisters
  float o[kOTiles][4] = {};
  RowState rows[2]; // rows group and group + 8

  if (num_tiles > 0) {
    // Q joins the first committed group.
    load_tile_async<kTileQ, kHeadDimQK, kStrideQK>(q_tile, task.q, task.q_stride, rows_q);
    for (int s = 0; s + 1 < kStages; ++s) {
      if (s < num_tiles)
        load_kv(first_tile + s);
      nv::cp_async_commit();
    }
  }

  for (int it = 0; it < num_tiles; ++it) {
    if (kStages == 1) {
      if (it > 0)
        block_barrier(); // everyone is done with the single buffer
      load_kv(first_tile + it);
      nv::cp_async_commit();
    }
    nv::cp_async_wait<kStages == 1 ? 0 : kStages - 2>();
    // Makes tile `it` visible, and frees the buffer read in iteration it - 1.
    block_barrier();
    if (kStages > 1) {
      if (it + kStages - 1 < num_tiles)
        load_kv(first_tile + it + kStages - 1);
      nv::cp_async_commit();
    }
    if (kQInRegisters && it == 0) {
#pragma unroll
      for (int ks = 0; ks < kQKSteps; ++ks)
        nv::ldmatrix_x4(q_frag[ks], nv::shared_address(q_tile + q_lane + ks * 16));
    }

    const int k0 = (first_tile + it) * kTileK;
    if (!warp_has_rows || !warp_rows.touches(seq, k0))
      continue; // causal / window: nothing this warp sees in the tile
    const int buffer = it % kStages;
    const u32 k_base = nv::shared_address(k_tiles + buffer * kKTileElems + k_lane);
    const u32 v_base = nv::shared_address(v_tiles + buffer * kVTileElems + v_lane);

    float s[kSTiles][4] = {};
#pragma unroll kQKUnroll
    for (int ks = 0; ks < kQKSteps; ++ks) {
      u32 q_reg[4];
      if (!kQInRegisters)
        nv::ldmatrix_x4(q_reg, nv::shared_address(q_tile + q_lane + ks * 16));
      const u32(&a)[4] = kQInRegisters ? q_frag[ks] : q_reg;
#pragma unroll
      for (int nt = 0; nt < kSTiles; nt += 2) {
        u32 b[4]; // b0, b1 of key tiles nt and nt + 1
        nv::ldmatrix_x4(b, k_base + 2 * (nt * 8 * kStrideQK + ks * 16));
        nv::mma_16x8x16<Elem>(s[nt], a, b[0], b[1]);
        nv::mma_16x8x16<Elem>(s[nt + 1], a, b[2], b[3]);
      }
    }

    // Element e of tile nt is (row group + 8 * (e / 2), key nt * 8 + 2 * quad + e % 2).
    const bool masked = warp_rows.needs_mask(seq, k0);
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int nt = 0; nt < kSTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int query = warp_q0 + group + 8 * (e / 2), key = k0 + nt * 8 + 2 * quad + e % 2;
        float x = task.logits.biased(task.logits.score(s[nt][e]), key - seq.diagonal(query));
        if (masked && !seq.sees(query, key))
          x = kNegInf;
        s[nt][e] = x;
        tile_max[e / 2] = max_float(tile_max[e / 2], x);
      }
    }
    float base[2], alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = max_float(tile_max[r], shfl_xor(tile_max[r], 1));
      tile_max[r] = max_float(tile_max[r], shfl_xor(tile_max[r], 2));
      alpha[r] = rows[r].update(tile_max[r] * task.logits.unit, base[r]);
    }
#pragma unroll
    for (int nt = 0; nt < kSTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[nt][e] = task.logits.exp2_shifted(s[nt][e], base[e / 2]);
        rows[e / 2].sum += s[nt][e];
      }
    }
#pragma unroll
    for (int ot = 0; ot < kOTiles; ++ot) {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        o[ot][e] *= alpha[e / 2];
    }

#pragma unroll
    for (int ps = 0; ps < kPVSteps; ++ps) {
      // The C fragments of key tiles 2ps and 2ps + 1 are exactly the A
      // fragment of keys 16ps..16ps+15.
      const u32 p[4] = {pack2<Elem>(s[2 * ps][0], s[2 * ps][1]), pack2<Elem>(s[2 * ps][2], s[2 * ps][3]),
                        pack2<Elem>(s[2 * ps + 1][0], s[2 * ps + 1][1]),
                        pack2<Elem>(s[2 * ps + 1][2], s[2 * ps + 1][3])};
#pragma unroll
      for (int ot = 0; ot < kOTiles; ot += 2) {
        u32 b[4]; // b0, b1 of output tiles ot and ot + 1
        nv::ldmatrix_x4_trans(b, v_base + 2 * (ps * 16 * kStrideV + ot * 8));
        nv::mma_16x8x16<Elem>(o[ot], p, b[0], b[1]);
        nv::mma_16x8x16<Elem>(o[ot + 1], p, b[2], b[3]);
      }
      if (few_keys) { // a separate loop keeps the common path's schedule
        const u32 p_residue[4] = {rounding_residue<Elem>(s[2 * ps][0], s[2 * ps][1], p[0]),
                                  rounding_residue<Elem>(s[2 * ps][2], s[2 * ps][3], p[1]),
                                  rounding_residue<Elem>(s[2 * ps + 1][0], s[2 * ps + 1][1], p[2]),
                                  rounding_residue<Elem>(s[2 * ps + 1][2], s[2 * ps + 1][3], p[3])};
#pragma unroll
        for (int ot = 0; ot < kOTiles; ot += 2) {
          u32 b[4];
          nv::ldmatrix_x4_trans(b, v_base + 2 * (ps * 16 * kStrideV + ot * 8));
          nv::mma_16x8x16<Elem>(o[ot], p_residue, b[0], b[1]);
          nv::mma_16x8x16<Elem>(o[ot + 1], p_residue, b[2], b[3]);
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = rows[r].sum;
    total += shfl_xor(total, 1);
    total += shfl_xor(total, 2);
    const int query = warp_q0 + group + 8 * r;
    if (query >= seq.len_q)
      continue;
    const float scale = RowState::output_scale(total);
    u16 *dst = task.out + (query - task.q0) * task.out_stride + 2 * quad;
#pragma unroll
    for (int ot = 0; ot < kOTiles; ++ot)
      *reinterpret_cast<u32 *>(dst + ot * 8) = pack2<Elem>(o[ot][2 * r] * scale, o[ot][2 * r + 1] * scale);
    if (kReturnLSE && task.lse && quad == 0)
      task.lse[query] = rows[r].lse(total);
  }
}

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

using sm90::u64;

// Checked only when this kernel is the one selected (kWarpSpecialized).
constexpr int kConsumers = kTileQ / 64;
static_assert(!kWarpSpecialized || (kConsumers >= 1 && kConsumers <= 3),
              "sm_90a wgmma: one to three consumer warpgroups of 64 query rows");
static_assert(!kWarpSpecialized || kHeadDimQK % 16 == 0 && kHeadDimV % 16 == 0,
              "sm_90a wgmma: head dims are whole 16-element wgmma steps");
static_assert(!kWarpSpecialized || kTileK == 64 || kTileK == 80 || kTileK == 96 || kTileK == 128,
              "sm_90a wgmma: kTileK is 64, 80, 96 or 128");
static_assert(!kWarpSpecialized || kHeadDimV <= 256,
              "sm_90a wgmma: a warpgroup keeps 64 x kHeadDimV fp32 outputs in registers");
// S of tile j is issued while P V of tile j - 1 still reads its V buffer.
static_assert(!kWarpSpecialized || kStages >= 2, "sm_90a wgmma: at least two K/V stages");

// Two or three consumers take turns issuing their matrix products (turn_begin).
constexpr bool kPingPong = kConsumers >= 2;
// Named barriers: 0 is the block's, 1 + wg the consumers' turns, and
// kOutputBarrier + wg a warpgroup's own (its output staged).
constexpr int kOutputBarrier = 4;
// Register budgets (the producer gives its share to the consumers):
// 128 * 24 + 256 * 240 <= 64K, or 128 * 24 + 384 * 160 with three
// consumers. The producer's loop needs few.
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = kConsumers == 3 ? 160 : 240;

// Each tile is stored as 64-column slabs of [rows][64] elements (128-byte
// rows), slab after slab, every slab 1024-byte aligned. A head dim that is
// not a multiple of 64 (80, 96, ...) leaves the last slab partly unused:
// no product reads past the head dim.
constexpr int kSlabsQK = ceil_div(kHeadDimQK, 64);
constexpr int kSlabsV = ceil_div(kHeadDimV, 64);
static_assert(!kWarpSpecialized || kSlabsV <= kSlabsQK, "sm_90a wgmma: O is staged in Q's slabs");
constexpr int kQBytes = kTileQ * kSlabsQK * 128;
constexpr int kKBytes = kTileK * kSlabsQK * 128;
constexpr int kVBytes = kTileK * kSlabsV * 128;
constexpr int kNumBarriers = 1 + 4 * kStages; // q_full, k_full[], v_full[], k_empty[], v_empty[]
// 1024 bytes of alignment slack (the dynamic shared base is only 16-byte
// aligned), then the tiles, then the barriers.
// (PrefillOp::getSharedBytes computes the same for the host.)
constexpr int kSharedBytesUsed = 1024 + kQBytes + kStages * (kKBytes + kVBytes) + 8 * kNumBarriers;
static_assert(!kWarpSpecialized || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKSteps = kHeadDimQK / 16;
constexpr int kPVSteps = kTileK / 16;
// Q as wgmma A fragments in registers, so that S = Q K^T reads only K from
// shared memory (its bandwidth is shared with the cp.async fills), when Q,
// S, P and O fit in about 208 of the consumers' 240 registers and no soft
// cap needs more. (fp16 kept Q in shared memory while its few-keys path
// still multiplied P's rounding residue; not re-measured since.)
constexpr bool kQInRegisters =
    4 * kQKSteps + kTileK / 2 + kTileK / 4 + kHeadDimV / 2 <= kConsumerRegs - 32 && kSoftCap == 0.0f && kInputBF16;
// wgmma N of O += P V: 128 or 64 columns; a head dim that is not a
// multiple of 64 in one product up to 128 (80, 96, 112: narrower chunks
// spill at 80 and 112), else in chunks of 32 or 16.
// (Another kernel compiles this code unused: 16 divides any head dim.)
constexpr int kOChunkN = !kWarpSpecialized      ? 16
                         : kHeadDimV % 128 == 0 ? 128
                         : kHeadDimV % 64 == 0  ? 64
                         : kHeadDimV <= 128     ? kHeadDimV
                         : kHeadDimV % 32 == 0  ? 32
                                                : 16;
constexpr int kOChunks = kHeadDimV / kOChunkN;
// A warpgroup whose rows see only the first half of their last tile's keys
// (d64's three consumers: 192 rows against 128-key tiles; a sequence's end)
// computes S and P V of that tile on that half alone: m64n64 products, half
// the P V steps. Three consumers on 128-key tiles only: there it gains
// (H200, d64 B8 S2048 335 -> 352 TFLOP/s with the skipped tiles below);
// kernels of two consumers ran 1-2.5% slower with it (d80, d96, d128)
// though their first warpgroup computed less, and 64-key tiles (m64n32) are
// never chosen for three consumers, so no device test would reach them.
constexpr bool kHalfTiles = kTileK == 128 && kConsumers == 3;
constexpr int kSHalfN = kHalfTiles ? kTileK / 2 : 64; // (64: a valid N where unused)
static_assert(!kHalfTiles || kSHalfN % 16 == 0, "a half tile is whole P V steps");
typedef sm90::Wgmma<Elem, kOChunkN> WgmmaO;

struct Barriers {
  u32 base;
  MLAGEN_DEVICE u32 q_full() const { return base; }
  MLAGEN_DEVICE u32 k_full(int stage) const { return base + 8 * (1 + stage); }
  MLAGEN_DEVICE u32 v_full(int stage) const { return base + 8 * (1 + kStages + stage); }
  MLAGEN_DEVICE u32 k_empty(int stage) const { return base + 8 * (1 + 2 * kStages + stage); }
  MLAGEN_DEVICE u32 v_empty(int stage) const { return base + 8 * (1 + 3 * kStages + stage); }
};

// Whether 16-byte chunk `chunk` (of 8) of slab `slab` holds columns of a
// kCols-wide row: all of them but in a partial last slab.
template <int kCols>
MLAGEN_DEVICE bool chunk_in_row(int slab, int chunk) {
  return slab < kCols / 64 || 8 * chunk < kCols % 64;
}

// cp.async of a kRows x kCols global tile into swizzled slabs at `dst`,
// zero-filling rows at or past rows_valid. Eight producer threads cover one
// 128-byte slab row; since 16 rows per pass keep r % 8, each thread's
// swizzled column is fixed.
template <int kRows, int kCols>
MLAGEN_DEVICE void load_tile(u32 dst, const u16 *src, long long src_stride, int rows_valid, int ptid) {
  static_assert(kRows % 16 == 0, "16 rows per pass");
  const int row = ptid / 8;
  const int chunk = ptid % 8;
  const u16 *const tile = src;
  dst += row * 128 + ((chunk ^ (row % 8)) * 16);
  src += row * src_stride + chunk * 8;
#pragma unroll
  for (int pass = 0; pass < kRows / 16; ++pass) {
    const bool valid = row + pass * 16 < rows_valid;
#pragma unroll
    for (int slab = 0; slab < ceil_div(kCols, 64); ++slab)
      if (chunk_in_row<kCols>(slab, chunk))
        nv::cp_async_16(dst + slab * kRows * 128 + pass * 16 * 128,
                        valid ? src + pass * 16 * src_stride + slab * 64 : tile, valid);
  }
}

// The same by kCopiers threads (a warp) in a rolled loop, for a copy that
// runs once per block beside the bulk copies: the producer has 24 registers.
template <int kRows, int kCols, int kCopiers>
MLAGEN_DEVICE void load_tile_rolled(u32 dst, const u16 *src, long long src_stride, int rows_valid, int ptid) {
  const int chunk = ptid % 8;
#pragma unroll 1
  for (int r = ptid / 8; r < kRows; r += kCopiers / 8) {
    const bool valid = r < rows_valid;
    const u16 *from = src + (valid ? r * src_stride : 0) + chunk * 8;
    const u32 to = dst + r * 128 + ((chunk ^ (r % 8)) * 16);
#pragma unroll
    for (int slab = 0; slab < ceil_div(kCols, 64); ++slab)
      if (chunk_in_row<kCols>(slab, chunk))
        nv::cp_async_16(to + slab * kRows * 128, from + slab * 64, valid);
  }
}

// K and V by bulk tensor copies when the host passes tensor maps: bf16
// only, since with fp16 (Q read from shared memory, P's rounding residues)
// ptxas spills a few bytes of the 24-register producer with them.
constexpr bool kBulkCopies = kInputBF16;

// The tensor maps of k and v (mlagen_prefill_params::k_map, v_map), or null.
struct TensorMaps {
  const void *k;
  const void *v;
};

// Bulk copies: warp 0 streams the K tiles and warp 1 the V tiles, each
// waiting only for its own buffers' release; lane 0 issues. K rows past the
// sequence are the next sequence's keys (or zeros): the consumers' mask
// replaces their scores with -inf. V rows there are multiplied by P = 0,
// and 0 x NaN is not 0, so a V tile that ends past the sequence (only ever
// the last) is copied by the warp with cp.async, which zero-fills them.
MLAGEN_DEVICE void produce_bulk(const Task &task, const TensorMaps &maps, u32 k_smem, u32 v_smem,
                                const Barriers &bars, int first_tile, int num_tiles, int warp, int lane) {
  const bool keys = warp == 0;
  const int bulk_tiles =
      keys || (first_tile + num_tiles) * kTileK <= task.seq.len_k ? num_tiles : num_tiles - 1;
  // The role's buffers and barriers as bases plus a stride per stage, so
  // that the loop fits the producer's 24 registers.
  const void *map = keys ? maps.k : maps.v;
  const u32 buffer = keys ? k_smem : v_smem;
  const u32 tile_bytes = keys ? kKBytes : kVBytes;
  const int slabs = keys ? kSlabsQK : kSlabsV; // past the head dim: zero-filled
  const u32 full = keys ? bars.k_full(0) : bars.v_full(0);
  const u32 empty = keys ? bars.k_empty(0) : bars.v_empty(0);
  if (lane == 0)
    sm90::prefetch_tensor_map(map);
  int row = task.k_row0 + first_tile * kTileK;
  for (int it = 0; it < bulk_tiles; ++it, row += kTileK) {
    const int stage = it % kStages;
    if (it >= kStages)
      sm90::mbarrier_wait(empty + 8 * stage, (it / kStages - 1) & 1);
    if (lane == 0) {
      sm90::mbarrier_arrive_expect_tx(full + 8 * stage, tile_bytes);
      for (int slab = 0; slab < slabs; ++slab)
        sm90::tma_load_3d(buffer + stage * tile_bytes + slab * kTileK * 128, map, 64 * slab, task.kv_head, row,
                          full + 8 * stage);
    }
  }
  if (bulk_tiles == num_tiles)
    return;
  const int it = num_tiles - 1;
  const int stage = it % kStages;
  if (it >= kStages)
    sm90::mbarrier_wait(bars.v_empty(stage), (it / kStages - 1) & 1);
  const int k0 = (first_tile + it) * kTileK;
  load_tile_rolled<kTileK, kHeadDimV, 32>(v_smem + stage * kVBytes, task.v + k0 * task.v_stride, task.v_stride,
                                          task.seq.len_k - k0, lane);
  sm90::cp_async_wait_all();
  __syncwarp();
  if (lane == 0)
    sm90::mbarrier_arrive(bars.v_full(stage));
}

// K and V tiles by cp.async from all producer threads.
MLAGEN_DEVICE void produce(const Task &task, u32 k_smem, u32 v_smem, const Barriers &bars, int first_tile,
                           int num_tiles, int ptid) {
  for (int it = 0; it < num_tiles; ++it) {
    const int stage = it % kStages;
    // Buffers are reused once both consumers are done with the tile kStages
    // back: K once its S is computed, V once its P V is (so the next K
    // streams in half an iteration earlier than with one release per tile).
    if (it >= kStages)
      sm90::mbarrier_wait(bars.k_empty(stage), (it / kStages - 1) & 1);
    const int k0 = (first_tile + it) * kTileK;
    load_tile<kTileK, kHeadDimQK>(k_smem + stage * kKBytes, task.k + k0 * task.k_stride, task.k_stride,
                                  task.seq.len_k - k0, ptid);
    sm90::cp_async_arrive(bars.k_full(stage));
    if (it >= kStages)
      sm90::mbarrier_wait(bars.v_empty(stage), (it / kStages - 1) & 1);
    load_tile<kTileK, kHeadDimV>(v_smem + stage * kVBytes, task.v + k0 * task.v_stride, task.v_stride,
                                 task.seq.len_k - k0, ptid);
    sm90::cp_async_arrive(bars.v_full(stage));
  }
}

// Row r of this thread (warp row group + 8 r) holds s[4 j + 2 r + {0, 1}],
// keys 8 j + 2 quad + {0, 1} of the tile, j < kS / 4. The helpers below
// take kS = kTileK / 2 accumulators, or kSHalfN / 2 for the first half of a
// tile's keys (kHalfTiles).

// Max and sum of one row's elements through 8 independent partial
// results: short dependency chains, where a running max / sum would take
// kRowElems dependent steps.
static_assert(kTileK >= 32, "kTileK is at least 32");
template <int kS>
MLAGEN_DEVICE float row_max(const float (&s)[kS], int r) {
  static_assert(kS >= 16, "8 partial maxima of a row's kS / 2 elements");
  constexpr int kRowElems = kS / 2;
  float t[8];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    t[k] = s[4 * (k / 2) + 2 * r + k % 2];
#pragma unroll
  for (int i = 8; i < kRowElems; ++i)
    t[i % 8] = fmaxf(t[i % 8], s[4 * (i / 2) + 2 * r + i % 2]);
  return fmaxf(fmaxf(fmaxf(t[0], t[1]), fmaxf(t[2], t[3])), fmaxf(fmaxf(t[4], t[5]), fmaxf(t[6], t[7])));
}
template <int kS>
MLAGEN_DEVICE float row_sum(const float (&s)[kS], int r) {
  static_assert(kS >= 16, "8 partial sums of a row's kS / 2 elements");
  constexpr int kRowElems = kS / 2;
  float t[8];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    t[k] = s[4 * (k / 2) + 2 * r + k % 2];
#pragma unroll
  for (int i = 8; i < kRowElems; ++i)
    t[i % 8] += s[4 * (i / 2) + 2 * r + i % 2];
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

// Sets the invisible elements of a tile to -inf: key k0 + c is visible to
// row i iff key_begin(i) <= k0 + c < key_end(i); with c = 8 j + e % 2 +
// 2 quad the comparisons are against constants.
template <int kS>
MLAGEN_DEVICE void apply_mask(float (&s)[kS], const Sequence &seq, int row0, int k0, int quad) {
  int lo[2], hi[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    lo[r] = seq.key_begin(row0 + 8 * r) - k0 - 2 * quad;
    hi[r] = seq.key_end(row0 + 8 * r) - k0 - 2 * quad;
  }
#pragma unroll
  for (int i = 0; i < kS; ++i) {
    const int r = (i % 4) / 2;
    const int c = (i / 4) * 8 + i % 2;
    if (c < lo[r] || c >= hi[r])
      s[i] = kNegInf;
  }
}

// Adds the ALiBi bias to a tile: element i is key k0 + 2 quad + c of row
// row0 + 8 r, so its distance is a per-row base plus the constant c.
template <int kS>
MLAGEN_DEVICE void apply_alibi(float (&s)[kS], const Sequence &seq, const Logits &logits, int row0, int k0,
                               int quad) {
  int base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    base[r] = k0 + 2 * quad - seq.diagonal(row0 + 8 * r);
#pragma unroll
  for (int i = 0; i < kS; ++i)
    s[i] = logits.biased(s[i], base[(i % 4) / 2] + (i / 4) * 8 + i % 2);
}

// Online softmax of one S tile held as wgmma accumulators: soft cap, ALiBi, mask
// (only tiles that need one, behind a real branch), the two row states of
// this thread, s -> unnormalised probabilities; returns the O rescale factors.
template <int kS>
MLAGEN_DEVICE void softmax(float (&s)[kS], RowState (&rows)[2], float (&alpha)[2], const Task &task,
                           const QueryRows &warp_rows, int row0, int k0, int quad) {
  const Sequence &seq = task.seq;
  if (kSoftCap > 0.0f) {
#pragma unroll
    for (int i = 0; i < kS; ++i)
      s[i] = task.logits.score(s[i]);
  }
  if (kAlibi)
    apply_alibi(s, seq, task.logits, row0, k0, quad);
  if (warp_rows.needs_mask(seq, k0))
    apply_mask(s, seq, row0, k0, quad);
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = row_max(s, r);
    tile_max = fmaxf(tile_max, shfl_xor(tile_max, 1));
    tile_max = fmaxf(tile_max, shfl_xor(tile_max, 2));
    alpha[r] = rows[r].update(tile_max * task.logits.unit, base[r]);
  }
#pragma unroll
  for (int i = 0; i < kS; ++i)
    s[i] = task.logits.exp2_shifted(s[i], base[(i % 4) / 2]);
#pragma unroll
  for (int r = 0; r < 2; ++r)
    rows[r].sum += row_sum(s, r);
}

// S = Q K^T of one tile (not waited for), over its first 2 kS keys (all of
// them, or half: kHalfTiles). Descriptors advance by adding the byte offset
// / 16 to their base (addresses stay below 256 KiB, so the 14-bit address
// field never carries).
template <int kS>
MLAGEN_DEVICE void issue_qk(float (&s)[kS], u64 q_desc, u64 k_desc) {
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks) {
    // Step ks: slab ks / 4, 32 bytes per 16 columns within the 128-byte row.
    const u64 a = q_desc + ((ks / 4) * kTileQ * 128 + (ks % 4) * 32) / 16;
    const u64 b = k_desc + ((ks / 4) * kTileK * 128 + (ks % 4) * 32) / 16;
    sm90::Wgmma<Elem, 2 * kS>::template ss<0>(s, a, b, ks > 0);
  }
}

// The same with Q from registers.
template <int kS>
MLAGEN_DEVICE void issue_qk(float (&s)[kS], const u32 (&q)[kQKSteps][4], u64 k_desc) {
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks)
    sm90::Wgmma<Elem, 2 * kS>::template rs<0>(s, q[ks], k_desc + ((ks / 4) * kTileK * 128 + (ks % 4) * 32) / 16,
                                              ks > 0);
}

// This warp's 16 rows of the swizzled Q tile as A fragments, k-step by
// k-step: ldmatrix lane l addresses row l % 8 + 8 (l / 8 % 2) at column
// 8 (l / 16) of the step.
MLAGEN_DEVICE void load_q_fragments(u32 (&q)[kQKSteps][4], u32 q_smem, int row0, int lane) {
  const int row = row0 + lane % 8 + 8 * (lane / 8 % 2);
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks) {
    const int col = ks * 16 + 8 * (lane / 16);
    nv::ldmatrix_x4(q[ks], q_smem + (col / 64) * kTileQ * 128 + row * 128 + (((col % 64) / 8) ^ (row % 8)) * 16);
  }
}

// O += P V of one tile (not waited for), over its first 16 kSteps keys.
template <int kSteps = kPVSteps>
MLAGEN_DEVICE void issue_pv(float (&o)[kOChunks][kOChunkN / 2], const u32 (&p)[kPVSteps][4], u64 v_desc) {
#pragma unroll
  for (int ps = 0; ps < kSteps; ++ps) {
#pragma unroll
    for (int c = 0; c < kOChunks; ++c) {
      // V is [key][column]: keys 16 ps.. start 16 rows of 128 bytes on;
      // chunk c starts at column c kOChunkN: slab c kOChunkN / 64 (slabs
      // are kTileK rows apart), byte 2 (c kOChunkN % 64) of its rows.
      const int col = c * kOChunkN;
      const u64 b = v_desc + ((col / 64) * kTileK * 128 + (col % 64) * 2 + ps * 16 * 128) / 16;
      WgmmaO::rs<1>(o[c], p[ps], b, 1);
    }
  }
}

// P = S (probabilities) as 16-bit A fragments: accumulator chunks 2 ps and
// 2 ps + 1 (keys 16 ps..) are exactly the A fragment of keys 16 ps..16 ps + 15.
template <int kS>
MLAGEN_DEVICE void pack_p(u32 (&p)[kPVSteps][4], const float (&s)[kS]) {
#pragma unroll
  for (int ps = 0; ps < kS / 8; ++ps)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      p[ps][j] = pack2<Elem>(s[8 * ps + 2 * j], s[8 * ps + 2 * j + 1]);
}

using sm90::fence_array;

// Turn-taking of the consumers' matrix products (kPingPong): a warpgroup
// waits for its turn (named barrier 1 + wg), issues, then hands the turn
// to the next in a ring. Every warpgroup takes the same number of turns
// (one per tile, plus one).
MLAGEN_DEVICE void turn_begin(int wg) {
  if (kPingPong)
    sm90::named_barrier_sync(1 + wg, 256);
}
MLAGEN_DEVICE void turn_end(int wg) {
  if (kPingPong)
    sm90::named_barrier_arrive(1 + (wg + 1) % kConsumers, 256);
}

// One consumer warpgroup: computes its 64 rows against the block's tiles
// [t_begin, t_end) and only releases the others.
//
// S of tile j and P V of tile j - 1 are issued together; the softmax of
// tile j runs while P V still does. P is rounded to 16 bits for P V, as
// FlashAttention and cuDNN round it, at every row. (Rows that see at most
// 128 keys used to multiply P's rounding residue too, in a loop of their
// own: half of this kernel's compile time, for error no larger than the
// peers'; bench/notes/prefill-sm90a.md.)
template <bool kHalfLast>
MLAGEN_DEVICE void consume(const Task &task, u32 q_smem, u32 k_smem, u32 v_smem, const Barriers &bars,
                           int first_tile, int num_tiles, int t_begin, int t_end, int wg, int warp_in_wg,
                           int lane) {
  const Sequence &seq = task.seq;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int warp_q0 = task.q0 + wg * 64 + warp_in_wg * 16;
  const QueryRows warp_rows = {warp_q0, min_int(warp_q0 + 15, max_int(warp_q0, seq.len_q - 1))};
  const u64 q_desc = sm90::smem_desc_sw128(q_smem + wg * 64 * 128, 16);
  const u64 k_desc0 = sm90::smem_desc_sw128(k_smem, 16);
  const u64 v_desc0 = sm90::smem_desc_sw128(v_smem, kTileK * 128); // LBO: next 64 columns
  auto k_desc = [&](int it) { return k_desc0 + (it % kStages) * (kKBytes / 16); };
  auto v_desc = [&](int it) { return v_desc0 + (it % kStages) * (kVBytes / 16); };

  float o[kOChunks][kOChunkN / 2];
#pragma unroll
  for (int c = 0; c < kOChunks; ++c)
#pragma unroll
    for (int i = 0; i < kOChunkN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[2];

  // One arrival per consumer warp and buffer use.
  auto release_k = [&](int it) {
    if (lane == 0)
      sm90::mbarrier_arrive(bars.k_empty(it % kStages));
  };
  auto release_v = [&](int it) {
    if (lane == 0)
      sm90::mbarrier_arrive(bars.v_empty(it % kStages));
  };
  // Callers follow with fence_proxy_async: cp.async wrote the tiles through
  // the generic proxy, wgmma reads them through the async proxy.
  auto wait_full = [&](u32 bar, int it) { sm90::mbarrier_wait(bar, (it / kStages) & 1); };
  auto rescale_o = [&](const float (&alpha)[2]) {
    // Once the row maxima settle, alpha is exactly 1 for the whole warp.
    if (all_lanes(alpha[0] == 1.0f && alpha[1] == 1.0f))
      return;
#pragma unroll
    for (int c = 0; c < kOChunks; ++c)
#pragma unroll
      for (int i = 0; i < kOChunkN / 2; ++i)
        o[c][i] *= alpha[(i % 4) / 2];
  };
  // A tile outside this warpgroup's rows' keys (masked for all of them) is
  // only released; with turn-taking its turn is passed on first, so that
  // every warpgroup takes num_tiles + 1 turns however few tiles it computes.
  auto skip_tile = [&](int it) {
    turn_begin(wg);
    turn_end(wg);
    wait_full(bars.k_full(it % kStages), it);
    wait_full(bars.v_full(it % kStages), it);
    release_k(it);
    release_v(it);
  };
  for (int it = 0; it < t_begin; ++it)
    skip_tile(it);
  if (t_begin < t_end) {
    float s[kTileK / 2];
    u32 p[kPVSteps][4];
    float alpha[2];
    sm90::mbarrier_wait(bars.q_full(), 0);
    constexpr bool kQRegs = kQInRegisters;
    u32 q_frag[kQRegs ? kQKSteps : 1][4];
    if (kQRegs) {
      load_q_fragments(reinterpret_cast<u32(&)[kQKSteps][4]>(q_frag), q_smem, wg * 64 + warp_in_wg * 16, lane);
    }
    // S of tile it into acc (not waited for): all of its keys into s, or
    // the first half into s_half (half_last: no row sees the rest).
    auto qk = [&](auto &acc, int it) {
      if (kQRegs)
        issue_qk(acc, reinterpret_cast<const u32(&)[kQKSteps][4]>(q_frag), k_desc(it));
      else
        issue_qk(acc, q_desc, k_desc(it));
    };
    wait_full(bars.k_full(t_begin % kStages), t_begin);
    sm90::fence_proxy_async();
    turn_begin(wg);
    sm90::wgmma_fence();
    qk(s, t_begin);
    sm90::wgmma_commit();
    turn_end(wg);
    sm90::wgmma_wait<0>();
    fence_array(s);
    release_k(t_begin);
    softmax(s, rows, alpha, task, warp_rows, warp_q0 + group, (first_tile + t_begin) * kTileK, quad);
    pack_p(p, s);
    // Common path: S of tile it (into acc, s or s_half) with P V of tile
    // it - 1, then tile it's softmax. A half tile's S has registers of its
    // own: written into half of s, it made ptxas serialise the products
    // (C7511).
    auto step = [&](auto &acc, int it) {
      sm90::wgmma_fence();
      qk(acc, it);
      sm90::wgmma_commit();
      issue_pv(o, p, v_desc(it - 1));
      sm90::wgmma_commit();
      turn_end(wg);
      sm90::wgmma_wait<1>(); // S of tile it; P V of tile it - 1 may still run
      fence_array(acc);
      release_k(it);
      softmax(acc, rows, alpha, task, warp_rows, warp_q0 + group, (first_tile + it) * kTileK, quad);
      sm90::wgmma_wait<0>();
      fence_array(o);
      fence_array(p);
      release_v(it - 1);
      rescale_o(alpha);
      pack_p(p, acc); // a half tile's P: only its first kSHalfN / 16 steps
    };
    auto wait_step = [&](int it) {
      wait_full(bars.k_full(it % kStages), it);
      wait_full(bars.v_full((it - 1) % kStages), it - 1);
      sm90::fence_proxy_async();
      turn_begin(wg);
    };
    // kHalfLast: the last tile's step is taken apart, below.
    for (int it = t_begin + 1; it < t_end - kHalfLast; ++it) {
      wait_step(it);
      step(s, it);
    }
    if (kHalfLast) {
      float s_half[kSHalfN / 2];
      wait_step(t_end - 1);
      step(s_half, t_end - 1);
    }
    const int last = t_end - 1;
    wait_full(bars.v_full(last % kStages), last);
    sm90::fence_proxy_async();
    turn_begin(wg);
    sm90::wgmma_fence();
    // A half tile's P covers its first kSHalfN keys (pack_p wrote p[0 ..
    // kSHalfN / 16); the rest of p is the previous tile's, not read).
    issue_pv<kHalfLast ? kSHalfN / 16 : kPVSteps>(o, p, v_desc(last));
    sm90::wgmma_commit();
    turn_end(wg);
    sm90::wgmma_wait<0>();
    fence_array(o);
    release_v(last);
  }
  for (int it = max_int(t_begin, t_end); it < num_tiles; ++it)
    skip_tile(it);
  if (t_begin >= t_end && num_tiles > 0) { // no tile of its own: the turn a last product would take
    turn_begin(wg);
    turn_end(wg);
  }
  if (kPingPong && wg == 0 && num_tiles > 0)
    sm90::named_barrier_sync(1, 256); // the turn the last warpgroup handed over
  // A warpgroup without tiles never waited for Q, yet stages into its Q rows
  // below: its last turn comes after the turn of the warpgroup holding the
  // block's last row, which has tiles and waited for Q first, so Q's copies
  // have landed by now.

  // o[c][4 j + e] = O[row group + 8 (e / 2)][c kOChunkN + 8 j + 2 quad + e % 2].
  // O goes out through this warpgroup's 64 rows of the Q tile, free once its
  // products are done (O fits: kSlabsV <= kSlabsQK), in Q's swizzle (the
  // 4-byte stores of a warp hit 32 banks), then as 16-byte row chunks. Stores
  // straight from the fragments wrote 16 bytes of each of eight rows a warp
  // instruction (B32 H16 S512 192/128: 248 TFLOP/s with them, 270 now, 301
  // with no output at all).
  const u32 o_smem = q_smem + wg * 64 * 128;
  const int wg_row0 = warp_in_wg * 16 + group; // this thread's rows within the warpgroup's 64
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = rows[r].sum;
    total += shfl_xor(total, 1);
    total += shfl_xor(total, 2);
    const int row = wg_row0 + 8 * r;
    const float scale = RowState::output_scale(total);
#pragma unroll
    for (int c = 0; c < kOChunks; ++c)
#pragma unroll
      for (int j = 0; j < kOChunkN / 8; ++j) {
        const int col = c * kOChunkN + j * 8; // + 2 quad
        nv::store_shared_u32(o_smem + (col / 64) * kTileQ * 128 + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16) +
                                 4 * quad,
                             pack2<Elem>(o[c][4 * j + 2 * r] * scale, o[c][4 * j + 2 * r + 1] * scale));
      }
    const int query = warp_q0 + group + 8 * r;
    if (kReturnLSE && task.lse && quad == 0 && query < seq.len_q)
      task.lse[query] = rows[r].lse(total);
  }
  sm90::named_barrier_sync(kOutputBarrier + wg, 128);
  constexpr int kRowChunks = kHeadDimV / 8;
  const int rows_valid = min_int(64, seq.len_q - (task.q0 + wg * 64));
  const int thread_in_wg = warp_in_wg * 32 + lane;
#pragma unroll 4
  for (int at = thread_in_wg; at < 64 * kRowChunks; at += 128) {
    const int row = at / kRowChunks, chunk = at % kRowChunks;
    if (row < rows_valid)
      nv::copy_shared_to_global_16(task.out + (wg * 64 + row) * task.out_stride + chunk * 8,
                                   o_smem + (chunk / 8) * kTileQ * 128 + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
  }
}

MLAGEN_DEVICE void attend(const Task &task, const TensorMaps &maps, u16 *smem) {
  const Sequence &seq = task.seq;
  const u32 raw = nv::shared_address(smem);
  const u32 q_smem = (raw + 1023) & ~1023u;
  const u32 k_smem = q_smem + kQBytes;
  const u32 v_smem = k_smem + kStages * kKBytes;
  const Barriers bars = {v_smem + kStages * kVBytes};

  const int tid = thread_index();
  const int warp = tid / 32;
  const int lane = tid % 32;

  const int rows_q = min_int(kTileQ, seq.len_q - task.q0);
  const QueryRows block_rows = {task.q0, task.q0 + rows_q - 1};
  const int key_begin = block_rows.key_begin(seq);
  const int key_end = block_rows.key_end(seq);
  const int first_tile = key_begin / kTileK;
  const int num_tiles = key_end > key_begin ? ceil_div(key_end, kTileK) - first_tile : 0;

  const bool bulk = kBulkCopies && maps.k != nullptr;
  if (tid == 0) {
    sm90::mbarrier_init(bars.q_full(), 128);
    for (int s = 0; s < kStages; ++s) {
      sm90::mbarrier_init(bars.k_full(s), bulk ? 1 : 128);
      sm90::mbarrier_init(bars.v_full(s), bulk ? 1 : 128);
      sm90::mbarrier_init(bars.k_empty(s), 4 * kConsumers); // one arrival per consumer warp
      sm90::mbarrier_init(bars.v_empty(s), 4 * kConsumers);
    }
    sm90::mbarrier_init_fence();
  }
  block_barrier();

  if (warp < 4) {
    if (kConsumers >= 2)
      sm90::setmaxnreg_dec<kProducerRegs>();
    if (num_tiles == 0)
      return;
    load_tile<kTileQ, kHeadDimQK>(q_smem, task.q, task.q_stride, rows_q, tid);
    sm90::cp_async_arrive(bars.q_full());
    if (!bulk)
      produce(task, k_smem, v_smem, bars, first_tile, num_tiles, tid);
    else if (warp < 2)
      produce_bulk(task, maps, k_smem, v_smem, bars, first_tile, num_tiles, warp, lane);
    sm90::cp_async_wait_all(); // no copies outlive the thread
    return;
  }
  if (kConsumers >= 2)
    sm90::setmaxnreg_inc<kConsumerRegs>();
  const int wg = warp / 4 - 1;
  const int warp_in_wg = warp % 4;
  if (kPingPong && wg == kConsumers - 1 && num_tiles > 0)
    sm90::named_barrier_arrive(1, 256); // warpgroup 0 takes the first turn

  // This warpgroup's rows and the block tiles they see. One or three
  // consumers compute only those (three pass their turns on for the
  // others: on 192 rows against 128-key tiles a causal block's first
  // warpgroup skips a tile this way; H200, d64 B8 S2048 335 -> 346 TFLOP/s).
  // Two consumers walk every tile (rows past the sequence: masked work, the
  // same turns): computing only their own made those kernels 1-3% slower
  // (d80, d128, Llama, MLA at S512), though with 128 rows against 128-key
  // tiles it skipped nothing there.
  constexpr bool kEveryTile = kConsumers == 2;
  const int wg_q0 = task.q0 + wg * 64;
  const QueryRows wg_rows = {wg_q0, min_int(wg_q0 + 63, seq.len_q - 1)};
  int t_begin = 0, t_end = 0;
  if (wg_q0 < seq.len_q && wg_rows.key_end(seq) > wg_rows.key_begin(seq)) {
    t_begin = kEveryTile ? 0 : wg_rows.key_begin(seq) / kTileK - first_tile;
    t_end = kEveryTile ? num_tiles : ceil_div(wg_rows.key_end(seq), kTileK) - first_tile;
  } else if (kEveryTile) {
    t_end = num_tiles;
  }
  // Its rows see only the first half of their last tile (kHalfTiles). The
  // first tile's S is always whole, so a half tile is a loop step's: one
  // tile of its own is never half.
  const bool half_last = kHalfTiles && t_end - t_begin >= 2 &&
                         wg_rows.key_end(seq) - (first_tile + t_end - 1) * kTileK <= kTileK / 2;
  if (half_last)
    consume<true>(task, q_smem, k_smem, v_smem, bars, first_tile, num_tiles, t_begin, t_end, wg, warp_in_wg,
                  lane);
  else
    consume<false>(task, q_smem, k_smem, v_smem, bars, first_tile, num_tiles, t_begin, t_end, wg, warp_in_wg,
                   lane);
}

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

using cdna::kLaneK;
using cdna::kMfmaK;
using cdna::mfma_operand;

static_assert(kWaveSize == 64, "CDNA waves are 64 lanes");
static_assert(kTileQ % (16 * kNumWarps) == 0, "CDNA: kTileQ is a multiple of 16 * kNumWarps");
static_assert(kTileK % kMfmaK == 0, "CDNA: kTileK is a multiple of the MFMA depth (32 on gfx950)");

constexpr int kBlocksPerWave = kTileQ / (16 * kNumWarps);
constexpr int kWaveRows = 16 * kBlocksPerWave;

// Padding so that the 16 rows read by a quarter wave hit distinct banks:
// K rows by kLaneK-element lane reads, V^T rows by 4-element lane reads.
constexpr int kStrideK = kHeadDimQK + kLaneK;
constexpr int kStrideVt = kTileK + 4;
constexpr int kKTileElems = kTileK * kStrideK;
constexpr int kVtTileElems = kHeadDimV * kStrideVt;
constexpr int kSharedBytesUsed = 2 * kStages * (kKTileElems + kVtTileElems);
static_assert(kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKSteps = kHeadDimQK / kMfmaK; // full-depth MFMAs per 16x16 block of S^T
// gfx950 with kHeadDimQK % 32 == 16 (head dim 80): the last 16 columns run
// as one 16-deep MFMA rather than padding K and Q to the next 32.
constexpr bool kQKTail = kHeadDimQK % kMfmaK != 0;
constexpr int kQKTailCol = kQKSteps * kMfmaK;
constexpr int kSBlocks = kTileK / 16;         // 16-key blocks of S^T
constexpr int kPVSteps = kTileK / kMfmaK;     // MFMAs per 16x16 block of O^T
constexpr int kSBlocksPerStep = kMfmaK / 16;  // S^T blocks feeding one PV MFMA
constexpr int kOBlocks = kHeadDimV / 16;

// Global -> register staging of one K/V tile: K in 16-byte row chunks laid
// out as TileCopy; V in units of 4 keys x 8 columns, each of which
// transposes into 8 rows of V^T.
typedef TileCopy<kHeadDimQK> KCopy;
constexpr int kKPasses = ceil_div(kTileK, KCopy::kRowsPerPass);
constexpr int kVUnitsPerColumn = kTileK / 4;
constexpr int kVUnits = kVUnitsPerColumn * (kHeadDimV / 8);
constexpr int kVLoads = ceil_div(kVUnits, kThreads);

struct StagedKV {
  u32x4 k[kKPasses][KCopy::kColumnBlocks];
  u32x4 v[kVLoads][4];
};

MLAGEN_DEVICE u32x4 load_row_chunk(const u16 *src, bool valid) {
  const u32x4 zero = {0u, 0u, 0u, 0u};
  return valid ? *reinterpret_cast<const u32x4 *>(src) : zero;
}

MLAGEN_DEVICE void fetch_kv(StagedKV &staged, const Task &task, int k0, int tid) {
  const int len_k = task.seq.len_k;
  const int k_row = tid / KCopy::kThreadsPerRow;
  const u16 *const k_src = task.k + (k0 + k_row) * task.k_stride + tid % KCopy::kThreadsPerRow * 8;
#pragma unroll
  for (int pass = 0; pass < kKPasses; ++pass) {
    const int row = k_row + pass * KCopy::kRowsPerPass;
    const bool valid = (kTileK % KCopy::kRowsPerPass == 0 || row < kTileK) && k0 + row < len_k;
#pragma unroll
    for (int cb = 0; cb < KCopy::kColumnBlocks; ++cb)
      staged.k[pass][cb] = load_row_chunk(
          k_src + pass * KCopy::kRowsPerPass * task.k_stride + cb * KCopy::kBlockCols, valid);
  }
#pragma unroll
  for (int i = 0; i < kVLoads; ++i) {
    // Consecutive lanes take consecutive key quads: coalesced enough on
    // load, and bank-conflict free when written transposed.
    const int unit = tid + i * kThreads;
    const int key = unit % kVUnitsPerColumn * 4;
    const int col = unit / kVUnitsPerColumn * 8;
    const bool unit_valid = kVUnits % kThreads == 0 || unit < kVUnits;
#pragma unroll
    for (int r = 0; r < 4; ++r)
      staged.v[i][r] = load_row_chunk(task.v + (k0 + key + r) * task.v_stride + col,
                                      unit_valid && k0 + key + r < len_k);
  }
}

MLAGEN_DEVICE void store_kv(const StagedKV &staged, u16 *k_tile, u16 *vt_tile, int tid) {
  u16 *const k_dst = k_tile + tid / KCopy::kThreadsPerRow * kStrideK + tid % KCopy::kThreadsPerRow * 8;
#pragma unroll
  for (int pass = 0; pass < kKPasses; ++pass) {
    if (kTileK % KCopy::kRowsPerPass != 0 && tid / KCopy::kThreadsPerRow + pass * KCopy::kRowsPerPass >= kTileK)
      break;
#pragma unroll
    for (int cb = 0; cb < KCopy::kColumnBlocks; ++cb) {
      u16 *dst = k_dst + pass * KCopy::kRowsPerPass * kStrideK + cb * KCopy::kBlockCols;
      if (kStrideK % 8 == 0) {
        *reinterpret_cast<u32x4 *>(dst) = staged.k[pass][cb];
      } else { // rows are only 8-byte aligned
        *reinterpret_cast<u32x2 *>(dst) = staged.k[pass][cb].xy;
        *reinterpret_cast<u32x2 *>(dst + 4) = staged.k[pass][cb].zw;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kVLoads; ++i) {
    const int unit = tid + i * kThreads;
    if (kVUnits % kThreads != 0 && unit >= kVUnits)
      break;
    const int key = unit % kVUnitsPerColumn * 4;
    const int col = unit / kVUnitsPerColumn * 8;
    const u32x4(&v)[4] = staged.v[i];
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      // Element c of a row is half c % 2 of word c / 2.
      const int w = c / 2;
      const u32 low = c % 2 == 0 ? (v[0][w] & 0xffffu) | (v[1][w] << 16) : (v[0][w] >> 16) | (v[1][w] & 0xffff0000u);
      const u32 high = c % 2 == 0 ? (v[2][w] & 0xffffu) | (v[3][w] << 16) : (v[2][w] >> 16) | (v[3][w] & 0xffff0000u);
      const u32x2 keys = {low, high};
      *reinterpret_cast<u32x2 *>(vt_tile + (col + c) * kStrideVt + key) = keys;
    }
  }
}

MLAGEN_DEVICE void attend(const Task &task, u16 *smem) {
  const Sequence &seq = task.seq;
  u16 *const k_tiles = smem;
  u16 *const vt_tiles = k_tiles + kStages * kKTileElems;

  const int tid = thread_index();
  const int wave = wave_uniform(tid / 64);
  const int lane = lane_index();
  const int column = lane % 16; // the query this lane works on, per block
  const int slice = lane / 16;  // which quarter of the contraction it holds

  const int rows_q = min_int(kTileQ, seq.len_q - task.q0);
  const QueryRows block_rows = {task.q0, task.q0 + rows_q - 1};
  const int wave_q0 = task.q0 + wave * kWaveRows;
  const QueryRows wave_rows = {wave_q0, min_int(wave_q0 + kWaveRows - 1, seq.len_q - 1)};
  const bool wave_has_rows = wave_q0 < seq.len_q;

  const int key_begin = block_rows.key_begin(seq);
  const int key_end = block_rows.key_end(seq);
  const int first_tile = key_begin / kTileK;
  const int num_tiles = key_end > key_begin ? ceil_div(key_end, kTileK) - first_tile : 0;

  // B operand of S^T = K Q^T: lane holds Q[query][kLaneK * slice + i] of each k-step.
  mfma_operand q_frag[kBlocksPerWave][kQKSteps];
#pragma unroll
  for (int qb = 0; qb < kBlocksPerWave; ++qb) {
    const int row = wave * kWaveRows + qb * 16 + column; // within the block
    const u16 *src = task.q + row * task.q_stride + kLaneK * slice;
#pragma unroll
    for (int ks = 0; ks < kQKSteps; ++ks) {
      mfma_operand zero = {};
      q_frag[qb][ks] = row < rows_q ? *reinterpret_cast<const mfma_operand *>(src + ks * kMfmaK) : zero;
    }
  }
  // The tail's B operand: lane holds Q[query][kQKTailCol + 4 slice + i].
  u32x2 q_tail[kQKTail ? kBlocksPerWave : 1];
  if (kQKTail) {
#pragma unroll
    for (int qb = 0; qb < kBlocksPerWave; ++qb) {
      const int row = wave * kWaveRows + qb * 16 + column;
      const u32x2 zero = {};
      q_tail[qb] = row < rows_q ? *reinterpret_cast<const u32x2 *>(task.q + row * task.q_stride + kQKTailCol + 4 * slice)
                                : zero;
    }
  }

  f32x4 o[kBlocksPerWave][kOBlocks] = {};
  RowState rows[kBlocksPerWave];
  const u16 *const k_lane = k_tiles + column * kStrideK + kLaneK * slice;
  const u16 *const vt_lane = vt_tiles + column * kStrideVt + 4 * slice;

  StagedKV staged;
  if (num_tiles > 0)
    fetch_kv(staged, task, first_tile * kTileK, tid);

  for (int it = 0; it < num_tiles; ++it) {
    const int buffer = it % kStages;
    if (kStages == 1 && it > 0)
      block_barrier(); // everyone is done with the single buffer
    // With kStages >= 2 the previous iteration's barrier already ordered
    // this store after the last reads of the buffer (kStages tiles ago).
    store_kv(staged, k_tiles + buffer * kKTileElems, vt_tiles + buffer * kVtTileElems, tid);
    block_barrier(); // the tile is visible to every wave
    if (it + 1 < num_tiles)
      fetch_kv(staged, task, (first_tile + it + 1) * kTileK, tid);

    const int k0 = (first_tile + it) * kTileK;
    if (!wave_has_rows || !wave_rows.touches(seq, k0))
      continue; // causal / window: nothing this wave sees in the tile
    const u16 *const k_buf = k_lane + buffer * kKTileElems;
    const u16 *const vt_buf = vt_lane + buffer * kVtTileElems;

    // s[qb][sb][i] = S[query wave_q0 + 16 qb + column][key k0 + 16 sb + 4 slice + i]
    f32x4 s[kBlocksPerWave][kSBlocks] = {};
#pragma unroll
    for (int ks = 0; ks < kQKSteps; ++ks) {
#pragma unroll
      for (int sb = 0; sb < kSBlocks; ++sb) {
        const mfma_operand a = *reinterpret_cast<const mfma_operand *>(k_buf + sb * 16 * kStrideK + ks * kMfmaK);
#pragma unroll
        for (int qb = 0; qb < kBlocksPerWave; ++qb)
          s[qb][sb] = cdna::mfma_16x16<Elem>(a, q_frag[qb][ks], s[qb][sb]);
      }
    }
    if (kQKTail) {
      // k_buf is at column kLaneK * slice; the tail reads 4 * slice.
      const u16 *const k_tail = k_buf - kLaneK * slice + kQKTailCol + 4 * slice;
#pragma unroll
      for (int sb = 0; sb < kSBlocks; ++sb) {
        const u32x2 a = *reinterpret_cast<const u32x2 *>(k_tail + sb * 16 * kStrideK);
#pragma unroll
        for (int qb = 0; qb < kBlocksPerWave; ++qb)
          s[qb][sb] = cdna::mfma_16x16x16<Elem>(a, q_tail[qb], s[qb][sb]);
      }
    }

    const bool masked = wave_rows.needs_mask(seq, k0);
    u32x2 p[kBlocksPerWave][kSBlocks]; // probabilities, B operand of O^T += V^T P^T
#pragma unroll
    for (int qb = 0; qb < kBlocksPerWave; ++qb) {
      const int query = wave_q0 + qb * 16 + column;
      float tile_max = kNegInf;
#pragma unroll
      for (int sb = 0; sb < kSBlocks; ++sb) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int key = k0 + sb * 16 + 4 * slice + i;
          float x = task.logits.biased(task.logits.score(s[qb][sb][i]), key - seq.diagonal(query));
          if (masked && !seq.sees(query, key))
            x = kNegInf;
          s[qb][sb][i] = x;
          tile_max = max_float(tile_max, x);
        }
      }
      tile_max = max_float(tile_max, shfl_xor(tile_max, 16));
      tile_max = max_float(tile_max, shfl_xor(tile_max, 32));
      float base;
      const float alpha = rows[qb].update(tile_max * task.logits.unit, base);
#pragma unroll
      for (int sb = 0; sb < kSBlocks; ++sb) {
        float e[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          e[i] = task.logits.exp2_shifted(s[qb][sb][i], base);
          rows[qb].sum += e[i];
        }
        p[qb][sb].x = pack2<Elem>(e[0], e[1]);
        p[qb][sb].y = pack2<Elem>(e[2], e[3]);
      }
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob)
        o[qb][ob] *= alpha;
    }

    // PV step ps contracts the S^T blocks sb = ps * kSBlocksPerStep + j:
    // lane slots 4j..4j+3 of both operands hold keys 16 sb + 4 slice + 0..3.
#pragma unroll
    for (int ps = 0; ps < kPVSteps; ++ps) {
      mfma_operand b[kBlocksPerWave];
#pragma unroll
      for (int qb = 0; qb < kBlocksPerWave; ++qb) {
#pragma unroll
        for (int j = 0; j < kSBlocksPerStep; ++j) {
          b[qb][2 * j] = p[qb][ps * kSBlocksPerStep + j].x;
          b[qb][2 * j + 1] = p[qb][ps * kSBlocksPerStep + j].y;
        }
      }
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob) {
        mfma_operand a;
#pragma unroll
        for (int j = 0; j < kSBlocksPerStep; ++j) {
          const u32x2 vt = *reinterpret_cast<const u32x2 *>(vt_buf + ob * 16 * kStrideVt +
                                                            (ps * kSBlocksPerStep + j) * 16);
          a[2 * j] = vt.x;
          a[2 * j + 1] = vt.y;
        }
#pragma unroll
        for (int qb = 0; qb < kBlocksPerWave; ++qb)
          o[qb][ob] = cdna::mfma_16x16<Elem>(a, b[qb], o[qb][ob]);
      }
    }
  }

  // o[qb][ob][i] = O[query wave_q0 + 16 qb + column][16 ob + 4 slice + i]
#pragma unroll
  for (int qb = 0; qb < kBlocksPerWave; ++qb) {
    float total = rows[qb].sum;
    total += shfl_xor(total, 16);
    total += shfl_xor(total, 32);
    const int query = wave_q0 + qb * 16 + column;
    if (query >= seq.len_q)
      continue;
    const float scale = RowState::output_scale(total);
    u16 *dst = task.out + (query - task.q0) * task.out_stride + 4 * slice;
#pragma unroll
    for (int ob = 0; ob < kOBlocks; ++ob) {
      const f32x4 r = o[qb][ob] * scale;
      const u32x2 packed = {pack2<Elem>(r.x, r.y), pack2<Elem>(r.z, r.w)};
      *reinterpret_cast<u32x2 *>(dst + ob * 16) = packed;
    }
    if (kReturnLSE && task.lse && slice == 0)
      task.lse[query] = rows[qb].lse(total);
  }
}

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
