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

// O^T's rows times their rescale factors (o[c][e] is the thread's q row
// hd = 2 (e / 4) + e % 2), on one vote: once the maxima settle every factor
// is exactly 1 in every lane and this is a branch. (A vote and a branch a
// row were a seventh of the 64-row e4m3 consumers' instructions.)
template <int kChunks>
MLAGEN_DEVICE void rescale_rows(float (&o)[kChunks][kRowsN / 2], const float (&alpha)[kRowsN / 4]) {
  bool settled = true;
#pragma unroll
  for (int hd = 0; hd < kRowsN / 4; ++hd)
    settled = settled && alpha[hd] == 1.0f;
  if (all_lanes(settled))
    return;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int e = 0; e < kRowsN / 2; ++e)
      o[c][e] *= alpha[2 * (e / 4) + e % 2];
}

// S^T's k-steps go round kSChains accumulators. The tensor cores add e4m3
// products to an accumulator with fewer bits than fp32, so fp8 operands
// spread them (H200: largest LSE error 7.0e-3 with one, 2.7e-3 with 2 at
// 32 rows and 3 at 16; the same speed); 16-bit products keep one chain.
// Split q's accumulators are twice as wide, in six chains of three k-steps:
// with two of nine, a logit of like-signed terms (q parallel to a key, 80)
// lost 2^-9 of itself, an LSE 0.16 (decode numerics' row_logits); with six,
// 2.8e-2, for an 8-byte spill (B64 H16 about 1% slower).
constexpr int kSChains = kFP8Operands ? (kSplitQuery ? 6 : kRowsN == 16 ? 3 : 2) : 1;
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
