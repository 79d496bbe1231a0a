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
