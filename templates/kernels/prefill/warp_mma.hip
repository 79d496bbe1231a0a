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
