// fp8 operands (kFP8Operands), each consumer. Per tile:
//   S^T [64 keys x N] = K Q^T: e4m3 wgmma from the raw slabs (18 k-steps
//     over kSChains accumulators);
//   softmax as `consume`; P (times 256, so that no p of interest is an e4m3
//     subnormal) as e4m3 plus the e4m3 of its rounding residue (~8 bits
//     together), in the key order below, into one swizzled slab: hi in
//     bytes 0..63 of a row, residue in 64..127;
//   O^T += V^T P_hi^T + V^T P_lo^T: 32 wgmma RS (e4m3 has no transposed
//     shared operand, so V^T comes from registers). Warp w's A rows of
//     64-column chunk c are columns 64 c + 16 w..+15; ldmatrix.x4.trans of
//     32 key rows gives a thread keys 2 t, 2 t + 1 (+ 8 j) of columns 2 g
//     and 2 g + 1, and byte permutes make rows g and g + 8 of the fragment
//     columns 2 g and 2 g + 1, with the 16 keys of each half of a k-step in
//     the order 2 t, 2 t + 1, 2 t + 8, 2 t + 9 (so key k of a 16-key group
//     is P's byte 4 (k % 8 / 2) + k % 2 + 2 (k / 8)); the stage is free once
//     the last fragments are loaded, the products waited for before the
//     next tile.
// Paired (kPairedTiles): `consumer` takes tiles consumer, consumer + 2, ...
// and `merge_pair` joins the two at the end.
constexpr float kPScale = 256.0f;
typedef sm90::WgmmaFP8<kRowsN> WgmmaE4M3;
typedef sm90::WgmmaFP8<kQSlabRows> WgmmaS8; // S^T's products (N = 32 with split q)

// V^T's A fragment of 64-column chunk c, k-step ks (32 keys) of a raw
// stage, in the key order above: ldmatrix.x4.trans of 32 key rows, then
// byte permutes.
MLAGEN_DEVICE void load_vt_fragment(u32 (&f)[4], u32 stage, int c, int ks, int warp, int lane) {
  u32 r[4];
  nv::ldmatrix_x4_trans(r, fp8_operand_at(stage, kSlabBytes, 32 * ks + lane, 4 * c + warp));
  f[0] = __byte_perm(r[0], r[1], 0x6420);
  f[1] = __byte_perm(r[0], r[1], 0x7531);
  f[2] = __byte_perm(r[2], r[3], 0x6420);
  f[3] = __byte_perm(r[2], r[3], 0x7531);
}

// A consume_fp8 consumer's O^T times each row's scale into the fp32
// staging (added to what is staged there with kAdd): o[c][4 j + e] is q row
// 8 j + 2 quad + e % 2, column 64 c + 16 w + 2 g + e / 2.
template <bool kAdd>
MLAGEN_DEVICE void stage_fp8_rows(const float (&o)[kVSlabs][kRowsN / 2], const float (&scale)[kRowsN / 4],
                                  float *staged, int warp, int lane) {
  const int group = lane / 4;
  const int quad = lane % 4;
#pragma unroll
  for (int hd = 0; hd < kRowsN / 4; ++hd) {
    const int r = q_row_of(hd, quad);
    const int e0 = 4 * (hd / 2) + hd % 2;
#pragma unroll
    for (int c = 0; c < kVSlabs; ++c) {
      Float2 *const at = reinterpret_cast<Float2 *>(staged + r * kOutStride + 64 * c + 16 * warp + 2 * group);
      Float2 pair = {o[c][e0] * scale[hd], o[c][e0 + 2] * scale[hd]};
      if (kAdd) {
        const Float2 staged_pair = *at;
        pair.x += staged_pair.x;
        pair.y += staged_pair.y;
      }
      *at = pair;
    }
  }
}

// Paired consumers' O: both publish their row maxima and totals, rescale
// their O^T to the larger maximum over the joint total; consumer 1 stages
// its share, consumer 0 adds its own (mine + theirs: the sum does not
// depend on timing), writes the LSE and the rows.
MLAGEN_DEVICE void merge_pair(int consumer, const Job &job, const Output &output, const Layout &lay,
                              RowState (&rows)[kRowsN / 4], const float (&o)[kVSlabs][kRowsN / 2], int warp,
                              int lane, float *staged) {
  constexpr int kHd = kRowsN / 4;
  const int group = lane / 4;
  const int quad = lane % 4;
  float *const red = lay.red + consumer * kConsumerRowFloats;
  float *const total = red + 5 * kRowsN, *const maxima = red + 4 * kRowsN;
  row_totals(red, total, 1 + consumer, rows, warp, lane);
  if (warp == 0 && group == 0)
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd)
      maxima[q_row_of(hd, quad)] = rows[hd].max;
  // Both consumers' rows published, every product of both done: the stage
  // buffers are free for the staging of O.
  sm90::split_barrier_sync(kBarPair, 256);
  float scale[kHd];
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float m0 = lay.red[4 * kRowsN + r], m1 = lay.red[kConsumerRowFloats + 4 * kRowsN + r];
    const float t0 = lay.red[5 * kRowsN + r], t1 = lay.red[kConsumerRowFloats + 5 * kRowsN + r];
    const float joint = max_float(m0, m1);
    const float shift = joint == kNegInf ? 0.0f : joint;
    const float f0 = exp2_approx(m0 - shift), f1 = exp2_approx(m1 - shift);
    const float sum = t0 * f0 + t1 * f1;
    scale[hd] = RowState::output_scale(sum) * (consumer == 0 ? f0 : f1) * (job.v_scale / kPScale);
    rows[hd].max = joint;
    if (consumer == 0 && warp == 0 && group == 0) {
      if (kClusterParts > 1 && merge_parts(job) > 1)
        lay.part_lse()[r] = rows[hd].lse(sum); // merge_in_cluster adds it
      else if (is_real_row(job.row0 + r))
        output.store_lse(job.row0 + r, rows[hd].lse(sum));
    }
  }
  if (consumer == 1) {
    stage_fp8_rows<false>(o, scale, staged, warp, lane);
    sm90::split_barrier_arrive(kBarHanded, 256);
    return;
  }
  sm90::split_barrier_sync(kBarHanded, 256);
  stage_fp8_rows<true>(o, scale, staged, warp, lane);
  write_or_merge(job, output, lay, staged, warp, lane);
}

// kSplitQuery: both consumers (which wait for the first tile anyway) split
// bf16 q into e4m3 hi + lo while the producer's first copies fly. kG
// threads a row, thread t taking 8-element chunks t % kG + kG i: the row's
// largest |q| sets a power of two 2^e that brings it into [128, 256) (e4m3
// reaches 448), then each pair of elements times 2^e becomes hi and the
// e4m3 of what hi rounded away (split_fp8_pair), stored raw like fp8 q
// (element k of a row at byte k; lo kRowsN rows down). The row's 2^-e goes
// to lay.q_unscale.
MLAGEN_DEVICE void split_q(const Job &job, const void *q, long long q_token_stride, long long q_head_stride,
                           const Layout &lay, int ctid) {
  constexpr int kG = kConsumerThreads / kRowsN; // 16 threads a row
  constexpr int kRowChunks = kHeadDimQK / 8;
  constexpr int kChunks = ceil_div(kRowChunks, kG);
  static_assert(kG <= 32 && 32 % kG == 0, "a row's threads sit in one warp");
  const int row = ctid / kG, sub = ctid % kG;
  const int g = job.row0 + row;
  const bool real = is_real_row(g);
  const u8 *src = real ? q_row(q, g, q_token_stride, q_head_stride) : nullptr;
  Raw16 v[kChunks];
  int top = 0; // largest |q| (bf16 magnitudes compare as integers)
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = sub + kG * i;
    v[i] = Raw16{{0u, 0u, 0u, 0u}};
    if (real && c < kRowChunks)
      v[i] = *reinterpret_cast<const Raw16 *>(src + c * 16);
#pragma unroll
    for (int w = 0; w < 4; ++w)
      top = max_int(top, max_int(v[i].w[w] & 0x7fff, (v[i].w[w] >> 16) & 0x7fff));
  }
#pragma unroll
  for (int m = 1; m < kG; m *= 2)
    top = max_int(top, __shfl_xor_sync(0xffffffffu, top, m));
  // bf16 exponent field E: |q| < 2^(E - 126), so 2^(134 - E) brings it
  // under 256 (and to 128 or more); kept within normal floats.
  const int e = top == 0 ? 0 : min_int(max_int(134 - (top >> 7), -120), 120);
  const float up = __int_as_float((127 + e) << 23);
  if (sub == 0)
    lay.q_unscale[row] = __int_as_float((127 - e) << 23);
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int c = sub + kG * i;
    if (c >= kRowChunks)
      continue;
    u32 hi[4], lo[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      float a, b;
      unpack2<bf16>(v[i].w[w], a, b);
      sm90::split_fp8_pair(a * up, b * up, hi[w], lo[w]);
    }
    const u32 at = fp8_operand_at(lay.q, kQSlabBytes, row, c / 2) + (c % 2) * 8;
    store_shared_u32x2(at, hi[0] | hi[1] << 16, hi[2] | hi[3] << 16);
    store_shared_u32x2(at + kRowsN * 128, lo[0] | lo[1] << 16, lo[2] | lo[3] << 16);
  }
  sm90::fence_proxy_async(); // read by wgmma (the async proxy)
  // Both consumers (every warp converged here).
  sm90::split_barrier_sync(kBarQuery, kConsumerThreads);
}

// `consumer`: 0, or 1 for the second of paired consumers. Inlined, a
// constant argument gives a body per consumer, a run-time one a shared body.
MLAGEN_DEVICE void consume_fp8(int consumer, const Job &job, const void *q, long long q_token_stride,
                               long long q_head_stride, const Output &output, const Layout &lay, int num_tiles,
                               int warp, int lane, float *staged) {
  constexpr int kHd = kRowsN / 4; // q rows a thread sees
  constexpr int kGroups = kRowsN / 8; // 8-column groups of an accumulator
  constexpr int kStep = kPairedTiles ? 2 : 1;
  const int bar = 1 + consumer;
  const int group = lane / 4;
  const int quad = lane % 4;
  const u32 p_slab = lay.p + consumer * kPBytes;
  float *const red = lay.red + consumer * kConsumerRowFloats;
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(p_slab, 16);
  float o[kVSlabs][kRowsN / 2];
#pragma unroll
  for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
    for (int i = 0; i < kRowsN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[kHd];
  // V^T fragments of a part of the 64-column chunks (chunk % kVChunks),
  // k-step: halves, or quarters for paired consumers of 32 rows (whose O^T
  // is 128 registers of the 224 they hold).
  constexpr int kVParts = kPairedTiles && kRowsN == 32 ? 4 : 2;
  constexpr int kVChunks = kVSlabs / kVParts;
  u32 v[kVChunks][2][4] = {};

  if (kSplitQuery)
    split_q(job, q, q_token_stride, q_head_stride, lay, consumer * 128 + warp * 32 + lane);
  else if (num_tiles > 0)
    sm90::mbarrier_wait(lay.q_full(), 0);
  // Paired, tile it - kStages may be the other consumer's: waiting on the
  // parity of it's phase is sound because the producer completes the full
  // barriers in tile order and this consumer has waited on tile it - 2.
  for (int it = consumer; it < num_tiles; it += kStep) {
    const int k0 = job.key_begin + it * kTileK;
    const u32 stage = lay.stage(it);
    const u64 k_desc = sm90::smem_desc_sw128(stage, kSlabBytes);
    sm90::mbarrier_wait(lay.full(it % kStages), (it / kStages) & 1);
    sm90::fence_proxy_async(); // cp.async wrote through the generic proxy

    float chains[kSChains][kQSlabRows / 2] = {};
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kHeadDimQK / 32; ++ks)
      WgmmaS8::ss(chains[ks % kSChains], k_desc + ((ks / 4) * kSlabBytes + (ks % 4) * 32) / 16,
                  q_desc + ((ks / 4) * kQSlabBytes + (ks % 4) * 32) / 16, ks >= kSChains);
    sm90::wgmma_commit();
    auto load_chunk = [&](int c) {
#pragma unroll
      for (int ks = 0; ks < 2; ++ks)
        load_vt_fragment(v[c % kVChunks][ks], stage, c, ks, warp, lane);
    };
    sm90::wgmma_wait<0>();
    sm90::fence_array(chains);
    float s[kRowsN / 2];
    add_chains(s, chains);
    if (kSplitQuery) // undo each q row's scale
#pragma unroll
      for (int e = 0; e < kRowsN / 2; ++e)
        s[e] *= lay.q_unscale[q_row_of(2 * (e / 4) + e % 2, quad)];

    float alpha[kHd], base[kHd];
    mask_and_update(s, job, k0, red, bar, rows, alpha, base, warp, lane);
    // P: this thread's keys 16 w + g (+ 8) sit at slots 16 w + 4 (g / 2) +
    // g % 2 (+ 2) of rows 8 j + 2 quad + {0, 1}. Lanes g and g ^ 1 swap
    // halves so that each stores whole words: even g the rows 8 j + 2 quad,
    // odd g the rows 8 j + 2 quad + 1.
    const int mine = group % 2;
    u32 keep_hi[kGroups / 2] = {}, give_hi[kGroups / 2] = {}, keep_lo[kGroups / 2] = {}, give_lo[kGroups / 2] = {};
#pragma unroll
    for (int j = 0; j < kGroups; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = 4 * j + h;
        const float p0 = exp2_approx(s[e] * job.unit - base[2 * j + h]);
        const float p1 = exp2_approx(s[e + 2] * job.unit - base[2 * j + h]);
        rows[2 * j + h].sum += p0 + p1;
        u32 hi, lo;
        sm90::split_fp8_pair(p0 * kPScale, p1 * kPScale, hi, lo);
        const int shift = 16 * (j % 2);
        if (h == mine) {
          keep_hi[j / 2] |= hi << shift;
          keep_lo[j / 2] |= lo << shift;
        } else {
          give_hi[j / 2] |= hi << shift;
          give_lo[j / 2] |= lo << shift;
        }
      }
    const u32 at = 16 * warp + 4 * (group / 2);
#pragma unroll
    for (int w = 0; w < kGroups / 2; ++w) {
      const u32 got_hi = __shfl_xor_sync(0xffffffffu, give_hi[w], 4);
      const u32 got_lo = __shfl_xor_sync(0xffffffffu, give_lo[w], 4);
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        // Bytes: even g's key, odd g's key, even g's key + 8, odd g's.
        const u32 sel = mine == 0 ? (jj == 0 ? 0x5140 : 0x7362) : (jj == 0 ? 0x1504 : 0x3726);
        const int row = 8 * (2 * w + jj) + 2 * quad + mine;
        nv::store_shared_u32(p_slab + swizzled(row, at / 16) + at % 16, __byte_perm(keep_hi[w], got_hi, sel));
        nv::store_shared_u32(p_slab + swizzled(row, 4 + at / 16) + at % 16, __byte_perm(keep_lo[w], got_lo, sel));
      }
    }
    sm90::fence_proxy_async();          // P is read by wgmma (the async proxy)
    sm90::named_barrier_sync(bar, 128); // P visible

    rescale_rows(o, alpha);
    sm90::fence_array(o);
    // V^T after the softmax (loading it under S^T ran slower on the H200,
    // B128 104 against 98 us), a part of the chunks at a time into the same
    // registers, each part's products done before the next part's
    // fragments overwrite them.
#pragma unroll
    for (int half = 0; half < kVParts; ++half) {
      if (half > 0) {
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        sm90::fence_array(v);
      }
#pragma unroll
      for (int c = kVChunks * half; c < kVChunks * (half + 1); ++c)
        load_chunk(c);
      if (half == kVParts - 1 && lane == 0)
        sm90::mbarrier_arrive(lay.empty(it % kStages)); // K and V read: the buffer may refill
      sm90::fence_array(v);
      sm90::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) // hi, then the residue, of k-step ks
#pragma unroll
        for (int c = kVChunks * half; c < kVChunks * (half + 1); ++c) {
          WgmmaE4M3::rs(o[c], v[c % kVChunks][ks], p_desc + (ks * 32) / 16, 1);
          WgmmaE4M3::rs(o[c], v[c % kVChunks][ks], p_desc + (64 + ks * 32) / 16, 1);
        }
    }
    sm90::wgmma_commit();
    // Every product done before the next tile touches o or v: with products
    // left in flight past here ptxas serialises them all (C7514, C7515).
    sm90::wgmma_wait<0>();
    sm90::fence_array(o);
    sm90::fence_array(v);
  }

  if (kPairedTiles) {
    merge_pair(consumer, job, output, lay, rows, o, warp, lane, staged);
    return;
  }
  finish_rows(job, output, lay, rows, warp, lane);
  // O^T, normalised (P carried kPScale).
  float scale[kHd];
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd)
    scale[hd] = RowState::output_scale(lay.total[q_row_of(hd, quad)]) * (job.v_scale / kPScale);
  stage_fp8_rows<false>(o, scale, staged, warp, lane);
  write_or_merge(job, output, lay, staged, warp, lane);
}
