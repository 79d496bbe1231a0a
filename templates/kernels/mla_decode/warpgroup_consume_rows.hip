// 64 q rows (two consumers): Q is the M of both products, as in FlashMLA.
// Tile t's S = Q K^T belongs to consumer t % 2 (its owner); consumer c
// holds O's columns [256 c, 256 c + 256) of all 64 rows. A pair of tiles
// (a even, b odd) runs as
//   consumer 0: softmax of a (from the max after the previous pair) ->
//     publishes m_a, alpha_a; O_L = O_L alpha_a + P_a V_a[L] (P from
//     registers); once consumer 1 has published alpha_b, stores P_a alpha_b
//     into slab 8 of a's stage (K's last 64 columns, free once S_a is
//     done); O_L = O_L alpha_b + P_b V_b[L] (P_b from shared memory);
//     issues S of a + 2.
//   consumer 1: softmax of b (from m_a) -> alpha_b; stores P_b into the P
//     buffer; O_R = O_R alpha_a alpha_b + P_b V_b[R] + (P_a alpha_b) V_a[R];
//     issues S of b + 2.
// (That is the order for 16-bit caches; an fp8 cache's is below,
// kUnscaledPa.)
// One consumer's softmax runs while the other's products keep the tensor
// cores busy, half the products take P from registers, and a row's 64 keys
// sit in one quad of lanes (no cross-warp maxima). Consumer 0 frees the
// first half of each stage (slabs 0..3: V_L), consumer 1 the second (V_R,
// and slab 8 holding P_a), each as soon as its products are done.
// Accumulators (S and O): element 4 j + e of a thread is row 16 warp +
// group + 8 (e / 2), column 8 j + 2 quad + e % 2.
// With an fp8 cache a stage half is ready only after the producer has
// widened it, so consumer 1 takes P_a unscaled and multiplies P_a V_a[R]
// first: tile a's second half refills one product earlier (B128 H128
// 421 -> 402 us; 16-bit caches lose 6% with it, bench/notes/decode-wgmma.md).
constexpr bool kUnscaledPa = kCacheFP8;
typedef sm90::Wgmma<MmaElem, 64> WgmmaRowS;
typedef sm90::Wgmma<MmaElem, 128> WgmmaRowO;

// P (this thread's two rows of a 64-key tile) times its rows' factors, as
// 16-bit into a swizzled [64 rows][64 keys] slab: the A operand of the
// other consumer's product.
MLAGEN_DEVICE void store_rows_p(u32 slab, const float (&s)[32], const float (&scale)[2], int row0, int quad) {
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const int r = k % 2;
    const float v0 = s[2 * k] * scale[r], v1 = s[2 * k + 1] * scale[r];
    const u32 packed = pack2<MmaElem>(v0, v1);
    const u32 at = swizzled(row0 + 8 * r, k / 2) + quad * 4;
    nv::store_shared_u32(slab + at, packed);
  }
}

// S (probabilities) as A fragments: accumulator groups 2 ps and 2 ps + 1
// (keys 16 ps..16 ps + 15) are the A fragment of k-step ps.
MLAGEN_DEVICE void pack_rows_p(u32 (&p)[4][4], const float (&s)[32]) {
#pragma unroll
  for (int ps = 0; ps < 4; ++ps)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      p[ps][j] = pack2<MmaElem>(s[8 * ps + 2 * j], s[8 * ps + 2 * j + 1]);
}

// Staged fp32 rows (kOutStride apart) out by kWriters threads, 16 bytes a
// store: the 64-row kernel's partials.
template <int kWriters>
MLAGEN_DEVICE void write_staged_rows(const Job &job, const Output &output, const float *staged, int tid) {
#pragma unroll 4
  for (int i = 0; i < kRowsN * kHeadDimV / 4 / kWriters; ++i) {
    const int idx = tid + kWriters * i;
    const int r = idx / (kHeadDimV / 4);
    const int col = idx % (kHeadDimV / 4) * 4;
    const int g = job.row0 + r;
    if (!is_real_row(g))
      continue;
    const Float4 v = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
    output.row(g).store4(col, v.x, v.y, v.z, v.w);
  }
}

// A pair's block (merged in the grid) with its rows staged in shared
// memory: fp32 rows of kOutStride, then the rows' LSEs. Unlike
// merge_pair_if_second, a block arrives before it writes anything. The
// first to arrive writes its partial and publishes it (+2 on the counter);
// the second waits for that and merges the partner's partial with its own
// staged rows, so it neither writes its partial nor reads it back. The
// arithmetic and its slot order are merge_pair_if_second's (the reduce's
// bits). The second only waits for a block that has arrived and waits for
// nothing, so co-residency is not needed.
template <int kWriters, class Sync>
MLAGEN_DEVICE void merge_staged_pair(const Job &job, const Output &output, float *staged, int tid, Sync sync) {
  constexpr int kPositions = kRowsN * (kHeadDimV / 4) / kWriters; // a thread's
  static_assert(kWriters >= kRowsN && kPositions % 8 == 0, "a row a thread, whole passes");
  const float *const own_lse = staged + kStagedLse;
  int *const state = reinterpret_cast<int *>(staged + kStagedLse + kRowsN);
  float *const weights = staged + kStagedLse + kRowsN + 4; // [row][2]
  float *const scales = weights + 2 * kRowsN;                       // [row]
  int *const counter = output.arrivals + job.batch * kRowBlocks + job.row0 / kHeadsPerBlock;
  if (tid == 0)
    state[0] = atomic_add_device(counter, 1);
  sync();
  if (state[0] == 0) { // first: the partial, then published
    write_staged_rows<kWriters>(job, output, staged, tid);
    if (tid < kRowsN && is_real_row(job.row0 + tid))
      output.store_lse(job.row0 + tid, own_lse[tid]);
    fence_device();
    sync();
    if (tid == 0) {
      fence_device(); // (the textbook order too: barrier, fence, signal)
      atomic_add_device(counter, 2);
    }
    return;
  }
  if (tid == 0) {
    // Both arrivals and the publication. A counter that did not start at 0
    // (a launch aborted mid-merge) may never read 4 here: after 10 ms the
    // block stops waiting rather than hang. Its rows may then be wrong, and
    // so may the next steps' until the plan is copied again (every copy
    // zeroes the counters); merge_pair_if_second fares no better there.
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      if (atomic_add_device(counter, 0) >= 4)
        break;
      __nanosleep(32);
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 10000000ull);
    *counter = 0; // ready for the next step, or a graph's replay
  }
  sync();
  fence_device(); // the partner's partial, after its publication
  const int first = output.merge[2 * job.batch];
  const int mine = output.slot - first; // this block's slot of the two
  const long long theirs = first + 1 - mine;
  Output final_rows = output;
  final_rows.slot = -1;
  if (tid < kRowsN) {
    const int g = job.row0 + tid;
    const bool real = is_real_row(g);
    const float own = real ? own_lse[tid] : kNegInf;
    const float other = real ? load_l2_f32(output.partial_lse + theirs * kRows + g) : kNegInf;
    pair_row_weights(final_rows, g, real, mine == 0 ? own : other, mine == 0 ? other : own, weights, scales, tid);
  }
  sync();
  const float *part = output.partial_out + theirs * kRows * kHeadDimV;
#pragma unroll 1
  for (int p0 = 0; p0 < kPositions; p0 += 8) {
    Float4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int g = job.row0 + at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
      v[j] = Float4{0.0f, 0.0f, 0.0f, 0.0f};
      if (is_real_row(g))
        load_l2_f32x4(part + (long long)g * kHeadDimV + col, v[j].x, v[j].y, v[j].z, v[j].w);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int at = tid + kWriters * (p0 + j);
      const int r = at / (kHeadDimV / 4), col = at % (kHeadDimV / 4) * 4;
      if (!is_real_row(job.row0 + r))
        continue;
      const Float4 own = *reinterpret_cast<const Float4 *>(staged + r * kOutStride + col);
      const Float4 a = mine == 0 ? own : v[j], b = mine == 0 ? v[j] : own;
      const float w0 = weights[2 * r], w1 = weights[2 * r + 1], scale = scales[r];
      auto add = [&](float x0, float x1) { return pair_value(w0, x0, w1, x1, scale); };
      final_rows.row(job.row0 + r).store4(col, add(a.x, b.x), add(a.y, b.y), add(a.z, b.z), add(a.w, b.w));
    }
  }
}

// An fp8 cache read with bf16 q keeps the pair merge out of line: inlined
// beside the widening producer it made ptxas spill 76 / 268 bytes (out of
// line 16 / 52; the 16-bit kernels spill less inlined).
template <int kWriters>
__attribute__((device)) __attribute__((noinline)) void merge_staged_pair_outlined(const Job &job, const Output &output,
                                                                                   float *staged, int tid) {
  merge_staged_pair<kWriters>(job, output, staged, tid, [] { sm90::split_barrier_sync(kBarOut, kWriters); });
}

// Log2 units a row's maximum may pass its reference before O is rescaled
// (consume_rows' softmax).
constexpr float kRescaleSlack = 8.0f;

// Bulk-tile kernels (kBulkTiles) wait for each slab, also in launches
// without a tensor map (produce_bulk). One body serves all items (one body
// per case doubled the entry's compile time). Products in a branch made
// ptxas serialise every product (C7520) or inject warpgroup arrivals
// (C7519); a wait in one serialises them too (C7515).
template <int consumer>
MLAGEN_DEVICE void consume_rows(const Job &job, const PagedCache &cache, const void *kv_map, const Output &output,
                                const Layout &lay, int num_tiles, int warp, int lane, float *staged) {
  const int group = lane / 4;
  const int quad = lane % 4;
  const int row0 = 16 * warp + group; // this thread's rows: row0 and row0 + 8
  float *const s_max = lay.red;       // [64] running row maxima (log2 units)
  float *const s_alpha0 = lay.red + 64;  // [64] consumer 0's tile's rescale factors
  float *const s_alpha1 = lay.red + 128; // [64] consumer 1's
  float *const s_sum = lay.red + 192;    // [2][64] row sums at the end
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(lay.p, 16);
  int row_end[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    row_end[r] = job.row_end(job.row0 + row0 + 8 * r);

  float o[2][64]; // two 128-column chunks of this consumer's half of O
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int i = 0; i < 64; ++i)
      o[c][i] = 0.0f;
  float s[32];
  u32 p[4][4];
  float sum[2] = {0.0f, 0.0f};

  // S of tile it, in two commit groups: one per half of the stage, in the
  // order they are refilled (first_half: this consumer's tiles are
  // those with it % 2 == consumer). `between` runs once the first group is
  // issued, before waiting for the second half's copy.
  auto issue_s = [&](int it, auto between) {
    const u32 stage = lay.stage(it);
    const u64 k_desc = sm90::smem_desc_sw128(stage, 16);
    const u32 parity = (it / kStages) & 1;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int half = consumer ^ h;
#pragma unroll
      for (int sl = half == 0 ? 0 : 4; sl < (half == 0 ? 4 : kSlabs); ++sl) {
        // Bulk copies complete slab by slab, in the async proxy that wgmma
        // reads through (no proxy fence: one here would wait for the
        // products in flight); cp.async copies half by half. The wgmma fence
        // after each wait is ours: one ptxas inserts after the wait's loop
        // serialises the products (C7520).
        if (kBulkTiles || sl == 4 * half) {
          sm90::mbarrier_wait(lay.full(it % kStages, sl), parity);
          if (!kBulkTiles && !kCacheFP8) // fp8: the producer fenced its stores
            sm90::fence_proxy_async(); // cp.async wrote through the generic proxy
          sm90::wgmma_fence();
        }
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          WgmmaRowS::ss<0>(s, q_desc + (sl * kQSlabBytes + ks * 32) / 16, k_desc + (sl * kSlabBytes + ks * 32) / 16,
                           h > 0 || sl != 4 * half || ks > 0);
      }
      sm90::wgmma_commit();
      if (h == 0)
        between();
    }
  };
  auto nothing = [] {};
  // O += P V over this consumer's 256 columns of tile it: P from registers.
  auto pv_registers = [&](const u32(&a_frag)[4][4], int it) {
    const u64 v_desc = sm90::smem_desc_sw128(lay.stage(it), kSlabBytes); // LBO: next 64 columns
#pragma unroll
    for (int ps = 0; ps < 4; ++ps)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        WgmmaRowO::rs<1>(o[c], a_frag[ps], v_desc + ((consumer * 4 + 2 * c) * kSlabBytes + ps * 16 * 128) / 16, 1);
  };
  // The same with P from a shared slab.
  auto pv_shared = [&](int it, u64 a_desc) {
    const u64 v_desc = sm90::smem_desc_sw128(lay.stage(it), kSlabBytes);
#pragma unroll
    for (int ps = 0; ps < 4; ++ps)
#pragma unroll
      for (int c = 0; c < 2; ++c)
        WgmmaRowO::ss<1>(o[c], a_desc + (ps * 32) / 16,
                         v_desc + ((consumer * 4 + 2 * c) * kSlabBytes + ps * 16 * 128) / 16, 1);
  };
  auto rescale = [&](const float (&alpha)[2]) {
    // Once the row maxima settle, alpha is exactly 1 for the whole warp.
    if (all_lanes(alpha[0] == 1.0f && alpha[1] == 1.0f))
      return;
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int i = 0; i < 64; ++i)
        o[c][i] *= alpha[(i % 4) / 2];
  };
  // Mask, row maxima and probabilities of S (tile it) against the running
  // maxima `max_prev`: sets the new maxima, the rescale factors and the
  // tile's row sums (this thread's keys).
  auto softmax = [&](int it, const float (&max_prev)[2], float (&max_new)[2], float (&alpha)[2],
                     float (&tile_sum)[2]) {
    const int k0 = job.key_begin + it * kTileK;
    if (k0 + kTileK > job.mask_from) {
#pragma unroll
      for (int i = 0; i < 32; ++i)
        if (k0 + 8 * (i / 4) + 2 * quad + i % 2 >= row_end[(i % 4) / 2])
          s[i] = kNegInf;
    }
    float base[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float m = kNegInf;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        m = max_float(m, max_float(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
      m = max_float(m, shfl_xor(m, 1));
      m = max_float(m, shfl_xor(m, 2));
      // The reference moves only when the tile's maximum passes it by more
      // than kRescaleSlack (FlashAttention-4's conditional rescale): most
      // tiles then rescale nothing (alpha exactly 1, `rescale` returns; B128
      // H128 1.5-2% faster). P reaches 2^kRescaleSlack, which bf16 and fp16
      // hold; a row's largest P is no longer exactly 1, so a row that hangs
      // on one key rounds that key's weight (errors up to 1.8x the
      // emulation's, within the test's rule: bench/notes/decode-wgmma.md).
      const float tile_max = m * job.unit;
      max_new[r] = tile_max > max_prev[r] + kRescaleSlack ? tile_max : max_prev[r];
      // A row that has seen only masked keys keeps max -inf and base 0.
      base[r] = max_new[r] == kNegInf ? 0.0f : max_new[r];
      alpha[r] = exp2_approx(max_prev[r] - base[r]);
      tile_sum[r] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      s[i] = exp2_approx(s[i] * job.unit - base[(i % 4) / 2]);
      tile_sum[(i % 4) / 2] += s[i];
    }
  };
  // One arrival per warp on a stage half's empty barrier.
  auto release = [&](u32 bar) {
    if (lane == 0)
      sm90::mbarrier_arrive(bar);
  };
  // Tile `done`'s stage half is free (this consumer's last product on it
  // is complete). With bulk copies, when tile done + 2 fills its page the
  // consumer copies it in right away (B128 H128: 6% faster than handing it
  // to a producer warp); a wgmma group completes for the whole warpgroup,
  // so warp 0's wait covers the other warps' reads. Otherwise the producer
  // copies it, once every warp has arrived. `page`: tile done + 2's, loaded
  // at the top of the pair (pages). An fp8 cache's raw halves come the same
  // way when the launch has a tensor map (produce_fp8_halves).
  static_assert(!(kBulkTiles || (kCacheFP8 && kSplitStages)) || kStages == 2,
                "tile done + 2 goes into tile done's stage");
  const bool refills = (kBulkTiles || kCacheFP8) && kv_map != nullptr;
  int pages[2] = {0, 0};
  auto free_half = [&](int done, int half, int page) {
    const int it = done + 2;
    if (!refills || it >= num_tiles || !fills_page(job, it)) {
      release(lay.empty(done % kStages, half));
      return;
    }
    if (warp != 0 || lane != 0)
      return;
    if (kCacheFP8) { // raw bytes, widened by the producer
      issue_raw_half(lay, kv_map, it, half, page);
      return;
    }
    const u32 dst = lay.stage(it);
    const unsigned long long policy = nv::l2_evict_first_policy();
    for (int sl = half == 0 ? 0 : 4; sl < (half == 0 ? 4 : kSlabs); ++sl) {
      sm90::mbarrier_arrive_expect_tx(lay.full(it % kStages, sl), kSlabBytes);
      sm90::tma_load_3d(dst + sl * kSlabBytes, kv_map, 64 * sl, 0, page, lay.full(it % kStages, sl), policy);
    }
  };

  // Consumer 0: P_a (times `scale`) into slab 8 of a's stage, for
  // consumer 1.
  auto store_pa = [&](int a, const float (&scale)[2]) {
    store_rows_p(lay.stage(a) + 8 * kSlabBytes, s, scale, row0, quad);
    sm90::fence_proxy_async(); // P_a is read by wgmma (the async proxy)
    sm90::split_barrier_arrive(kBarPa, kConsumerThreads);
  };
  // Consumer 1, once S_b is done: consumer 0's row maxima and rescale
  // factors of tile a.
  auto take_alpha_a = [&](float (&max_a)[2], float (&alpha_a)[2]) {
    sm90::split_barrier_sync(kBarScale0, kConsumerThreads);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      max_a[r] = s_max[row0 + 8 * r];
      alpha_a[r] = s_alpha0[row0 + 8 * r];
    }
  };
  // Consumer 1: softmax of tile b, its maxima and rescale factors
  // published, P_b (unscaled) stored for consumer 0.
  auto publish_b = [&](int b, const float (&max_a)[2], float (&alpha_b)[2], float (&tile_sum)[2]) {
    float max_b[2];
    softmax(b, max_a, max_b, alpha_b, tile_sum);
    if (quad == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        s_max[row0 + 8 * r] = max_b[r];
        s_alpha1[row0 + 8 * r] = alpha_b[r];
      }
    }
    sm90::split_barrier_arrive(kBarScale1, kConsumerThreads);
    const float one[2] = {1.0f, 1.0f};
    store_rows_p(lay.p, s, one, row0, quad);
    sm90::fence_proxy_async();
    sm90::split_barrier_arrive(kBarPb, kConsumerThreads);
  };

  if (num_tiles > 0) {
    sm90::mbarrier_wait(lay.q_full(), 0);
    if (consumer < num_tiles)
      issue_s(consumer, nothing);
  }
  for (int a = 0; a < num_tiles; a += 2) {
    const int b = a + 1;
    const bool has_b = b < num_tiles;
    if (refills && warp == 0 && lane == 0)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        pages[i] = a + 2 + i < num_tiles ? cache.page_of(job.key_begin + (a + 2 + i) * kTileK) : 0;
    if (consumer == 0) {
      sm90::wgmma_wait<0>(); // S_a, and the last pair's products
      sm90::fence_array(s);
      sm90::fence_array(o);
      float max_prev[2], max_a[2], alpha_a[2], tile_sum[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        max_prev[r] = a == 0 ? kNegInf : s_max[row0 + 8 * r];
      softmax(a, max_prev, max_a, alpha_a, tile_sum);
      __syncwarp(); // every lane of the quad has read s_max
      if (quad == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          s_max[row0 + 8 * r] = max_a[r];
          s_alpha0[row0 + 8 * r] = alpha_a[r];
        }
      }
      sm90::split_barrier_arrive(kBarScale0, kConsumerThreads);
#pragma unroll
      for (int r = 0; r < 2; ++r)
        sum[r] = sum[r] * alpha_a[r] + tile_sum[r];
      rescale(alpha_a);
      pack_rows_p(p, s);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_registers(p, a);
      sm90::wgmma_commit();
      if (kUnscaledPa) {
        const float one[2] = {1.0f, 1.0f};
        store_pa(a, one);
      }
      float alpha_b[2] = {1.0f, 1.0f};
      // Tile a's low half is free once P_a V_a[L] is done: free it before
      // waiting for consumer 1's rescale factors (B32 H128: 1.5% faster than after).
      sm90::wgmma_wait<0>();
      sm90::fence_array(o);
      sm90::fence_array(p);
      free_half(a, 0, pages[0]);
      if (has_b) {
        sm90::split_barrier_sync(kBarScale1, kConsumerThreads);
#pragma unroll
        for (int r = 0; r < 2; ++r)
          alpha_b[r] = s_alpha1[row0 + 8 * r];
      }
      if (!kUnscaledPa)
        store_pa(a, alpha_b);
      if (has_b) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] *= alpha_b[r];
        rescale(alpha_b);
        sm90::split_barrier_sync(kBarPb, kConsumerThreads);
        sm90::fence_array(o);
        sm90::wgmma_fence();
        pv_shared(b, p_desc);
        sm90::wgmma_commit();
      }
      // b's first half is free once P_b V_b is done: release it before
      // waiting on the second half of tile a + 2, which consumer 1 frees.
      auto release_b = [&] {
        sm90::wgmma_wait<1>(); // P_b V_b done; S of a + 2's first half may run on
        sm90::fence_array(o);
        if (has_b)
          free_half(b, 0, pages[1]);
      };
      if (a + 2 < num_tiles) {
        issue_s(a + 2, release_b);
      } else {
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        if (has_b)
          free_half(b, 0, pages[1]);
      }
    } else if (kUnscaledPa) {
      // O_R = (O_R alpha_a + P_a V_a[R]) alpha_b + P_b V_b[R]. Both products
      // stay outside any branch on has_b (without b, P is zero): a wait
      // inside one made ptxas serialise every product (C7515).
      float max_a[2], alpha_a[2];
      sm90::wgmma_wait<0>(); // S_b (none pending without b)
      sm90::fence_array(s);
      take_alpha_a(max_a, alpha_a);
      float alpha_b[2] = {1.0f, 1.0f}, tile_sum[2] = {0.0f, 0.0f};
      if (has_b) {
        publish_b(b, max_a, alpha_b, tile_sum);
        pack_rows_p(p, s);
      } else {
#pragma unroll
        for (int ps = 0; ps < 4; ++ps)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            p[ps][j] = 0u;
      }
#pragma unroll
      for (int r = 0; r < 2; ++r)
        sum[r] *= alpha_a[r];
      rescale(alpha_a);
      sm90::split_barrier_sync(kBarPa, kConsumerThreads);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_shared(a, sm90::smem_desc_sw128(lay.stage(a) + 8 * kSlabBytes, 16));
      sm90::wgmma_commit();
      sm90::wgmma_wait<0>(); // P_a V_a[R] done
      sm90::fence_array(o);
      if (has_b)
        free_half(a, 1, pages[0]);
      {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] = sum[r] * alpha_b[r] + tile_sum[r];
        rescale(alpha_b);
        sm90::fence_array(o);
        sm90::fence_array(p);
        sm90::wgmma_fence();
        pv_registers(p, has_b ? b : a); // without b, P is zero: adds nothing
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        sm90::fence_array(p);
        if (has_b)
          free_half(b, 1, pages[1]);
        else
          free_half(a, 1, pages[0]);
      }
      if (b + 2 < num_tiles)
        issue_s(b + 2, nothing);
    } else {
      float max_a[2], alpha_a[2];
      sm90::wgmma_wait<0>(); // S_b (none pending without b)
      sm90::fence_array(s);
      take_alpha_a(max_a, alpha_a);
      if (has_b) {
        float alpha_b[2], tile_sum[2];
        publish_b(b, max_a, alpha_b, tile_sum);
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          alpha[r] = alpha_a[r] * alpha_b[r];
          sum[r] = sum[r] * alpha[r] + tile_sum[r];
        }
        rescale(alpha);
        pack_rows_p(p, s);
        sm90::fence_array(o);
        sm90::wgmma_fence();
        pv_registers(p, b);
        sm90::wgmma_commit();
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r)
          sum[r] *= alpha_a[r];
        rescale(alpha_a);
      }
      sm90::split_barrier_sync(kBarPa, kConsumerThreads);
      sm90::fence_array(o);
      sm90::wgmma_fence();
      pv_shared(a, sm90::smem_desc_sw128(lay.stage(a) + 8 * kSlabBytes, 16));
      sm90::wgmma_commit();
      sm90::wgmma_wait<1>(); // P_b V_b (from registers) done
      sm90::fence_array(p);
      if (has_b)
        free_half(b, 1, pages[1]);
      sm90::wgmma_wait<0>();
      sm90::fence_array(o);
      free_half(a, 1, pages[0]);
      if (b + 2 < num_tiles)
        issue_s(b + 2, nothing);
    }
  }
  sm90::wgmma_wait<0>(); // (nothing pending: for ptxas, which cannot tell)

  // Row sums: this thread's keys, the quad's, then both consumers'.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sum[r] += shfl_xor(sum[r], 1);
    sum[r] += shfl_xor(sum[r], 2);
    if (quad == 0)
      s_sum[consumer * 64 + row0 + 8 * r] = sum[r];
  }
  // Row sums visible, and every product done: the stage buffers are free.
  sm90::split_barrier_sync(kBarOut, kConsumerThreads);
  float scale[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    const float total = s_sum[row] + s_sum[64 + row];
    scale[r] = RowState::output_scale(total) * job.v_scale;
    if (consumer == 0 && quad == 0 && is_real_row(job.row0 + row)) {
      const float lse = total > 0.0f ? (s_max[row] + log2_approx(total)) * kLn2 : kNegInf;
      if (job.pair)
        staged[kStagedLse + row] = lse; // merge_staged_pair's
      else
        output.store_lse(job.row0 + row, lse);
    }
  }
  const int tid = consumer * 128 + warp * 32 + lane;
  if (output.wide_rows()) {
    // Final rows: O packed to 16-bit in shared memory (half the bytes of
    // fp32), then 16-byte stores. 64-row steps end 1-2% sooner than with
    // fp32 staging (bench/notes/decode-wgmma.md, "The end of a 64-row block").
    u32 *const packed = reinterpret_cast<u32 *>(staged);
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int i = 0; i < 64; i += 2) {
        const int row = row0 + 8 * ((i % 4) / 2);
        const int col = 256 * consumer + 128 * c + 8 * (i / 4) + 2 * quad;
        packed[row * kPackedWords + col / 2] =
            pack2<Elem>(o[c][i] * scale[(i % 4) / 2], o[c][i + 1] * scale[(i % 4) / 2]);
      }
    sm90::split_barrier_sync(kBarOut, kConsumerThreads);
#pragma unroll 4
    for (int i = 0; i < kRowsN * kHeadDimV / 8 / kConsumerThreads; ++i) {
      const int idx = tid + kConsumerThreads * i;
      const int r = idx / (kHeadDimV / 8);
      const int chunk = idx % (kHeadDimV / 8);
      const int g = job.row0 + r;
      if (is_real_row(g))
        nv::copy_shared_to_global_16(output.row(g).out + 8 * chunk,
                                     nv::shared_address(packed + r * kPackedWords + 4 * chunk));
    }
    return;
  }
  // Partial rows (fp32): through shared memory so that each row is written
  // in 16-byte pieces.
#pragma unroll
  for (int c = 0; c < 2; ++c)
#pragma unroll
    for (int i = 0; i < 64; i += 2) {
      const int row = row0 + 8 * ((i % 4) / 2);
      const int col = 256 * consumer + 128 * c + 8 * (i / 4) + 2 * quad;
      const Float2 v = {o[c][i] * scale[(i % 4) / 2], o[c][i + 1] * scale[(i % 4) / 2]};
      *reinterpret_cast<Float2 *>(staged + row * kOutStride + col) = v;
    }
  sm90::split_barrier_sync(kBarOut, kConsumerThreads);
  if (job.pair) {
    if (kCacheFP8 && !kFP8Operands)
      merge_staged_pair_outlined<kConsumerThreads>(job, output, staged, tid);
    else
      merge_staged_pair<kConsumerThreads>(job, output, staged, tid,
                                          [] { sm90::split_barrier_sync(kBarOut, kConsumerThreads); });
    return;
  }
  write_staged_rows<kConsumerThreads>(job, output, staged, tid);
}
