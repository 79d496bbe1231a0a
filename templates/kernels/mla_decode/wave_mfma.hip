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
