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
