// fp8 q at 64 rows (kSeesawFP8): FlashMLA's seesaw on e4m3 operands. Tile t
// belongs to consumer t % 2 (its owner), which computes
//   S [64 rows x 64 keys] = Q K^T  (18 SS m64n64k32 products; Q as M, as
//   consume_rows, so a row's keys sit in one quad of lanes),
//   the rows' new maxima and rescale factors against the running maxima
//   (published in shared memory), and
//   P as e4m3 hi + residue (times kPScale) into P slab t % 2, rows of keys
//   in consume_fp8's order;
// and both consumers add P's product to their half of O's columns,
//   O^T [256 columns x 64 rows] += V^T P^T  (16 RS m64n64k32 products a
//   tile: V^T from ldmatrix.trans of the raw stage, P^T the slab, as
//   consume_fp8), consumer c holding columns [256 c, 256 c + 256).
// Each consumer's row sums count its own tiles (rescaled by every tile's
// factors); the totals add at the end. Hand-overs (split named barriers,
// 256 threads): the owner's maxima and factors published (kBarMax + owner),
// its P stored (kBarP + owner), and the other consumer done with a P slab
// (kBarPFree + slab) before the owner overwrites it two tiles later. Both
// consumers read every stage: eight warp arrivals free it.
enum {
  kBarMax = kBarScale0,  // + owner: the tile's maxima and factors are published
  kBarP = kBarPa,        // + owner: P of the owner's tile is in its slab
  kBarPFree = kBarPair,  // + slab: the other consumer's products on the slab are done
};
static_assert(kBarPFree + 1 == kBarHanded && kBarMax + 1 == kBarScale1 && kBarP + 1 == kBarPb,
              "the seesaw's barriers pair up by consumer");

template <int consumer>
MLAGEN_DEVICE void consume_seesaw_fp8(const Job &job, const Output &output, const Layout &lay, int num_tiles,
                                      int warp, int lane, float *staged) {
  constexpr int kHd = kRowsN / 4;          // O^T's q rows a thread sees
  constexpr int kChunks = kVSlabs / 2;     // this consumer's 64-column chunks of V
  constexpr int kPartChunks = kChunks / 2; // V^T fragments loaded at a time
  constexpr int other = 1 - consumer;
  const int bar = 1 + consumer;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int row0 = 16 * warp + group; // S's rows of this thread: row0 and row0 + 8
  float *const s_max = lay.red;         // [64] running row maxima (log2 units)
  // [4][64] tile t's rescale factors at t % 4: consumer 0 publishes tile
  // a + 2's before consumer 1 has taken tile a's (it rescales after its own
  // softmax of b); its store of P_{a+2}, after the other consumer's products
  // of a, orders the slot's next use.
  float *const s_alpha = lay.red + 64;
  float *const s_sum = lay.red + 320;   // [2][64] row sums at the end
  static_assert(448 <= kRowFloats, "the seesaw's row floats fit");
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  int row_end[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    row_end[r] = job.row_end(job.row0 + row0 + 8 * r);
  float o[kChunks][kRowsN / 2];
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
#pragma unroll
    for (int i = 0; i < kRowsN / 2; ++i)
      o[c][i] = 0.0f;
  float sum[2] = {0.0f, 0.0f}; // rows row0, row0 + 8: this consumer's tiles
  u32 v[kPartChunks][2][4] = {};

  // O^T and the row sums times tile it's factors (published by its owner).
  auto rescale = [&](int it) {
    const float *alpha = s_alpha + 64 * (it % 4);
#pragma unroll
    for (int r = 0; r < 2; ++r)
      sum[r] *= alpha[row0 + 8 * r];
    float a[kHd];
#pragma unroll
    for (int hd = 0; hd < kHd; ++hd)
      a[hd] = alpha[q_row_of(hd, quad)];
    rescale_rows(o, a);
  };
  // O^T += V^T P^T over this consumer's chunks of tile it, P from slab
  // it % 2; the stage is released once the last fragments are loaded, and
  // every product is done on return.
  auto add_pv = [&](int it) {
    const u32 stage = lay.stage(it);
    const u64 p_desc = sm90::smem_desc_sw128(lay.p + (it % 2) * kPBytes, 16);
    sm90::fence_array(o);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      if (part > 0) {
        sm90::wgmma_commit();
        sm90::wgmma_wait<0>();
        sm90::fence_array(o);
        sm90::fence_array(v);
      }
#pragma unroll
      for (int k = 0; k < kPartChunks; ++k) {
        const int c = kChunks * consumer + kPartChunks * part + k; // of V's 8 chunks
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
          load_vt_fragment(v[k][ks], stage, c, ks, warp, lane);
      }
      if (part == 1 && lane == 0)
        sm90::mbarrier_arrive(lay.empty(it % kStages)); // this consumer has read the stage
      sm90::fence_array(v);
      sm90::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 2; ++ks) // hi, then the residue, of k-step ks
#pragma unroll
        for (int k = 0; k < kPartChunks; ++k) {
          float(&acc)[kRowsN / 2] = o[kPartChunks * part + k];
          WgmmaE4M3::rs(acc, v[k][ks], p_desc + (ks * 32) / 16, 1);
          WgmmaE4M3::rs(acc, v[k][ks], p_desc + (64 + ks * 32) / 16, 1);
        }
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(o);
    sm90::fence_array(v);
  };
  // The owner's part of tile it: S, the rows' maxima and factors
  // (published), P (stored once the other consumer is done with the slab,
  // then published), the tile's row sums (added by the caller once it has
  // rescaled O for the tile, after its products of the tile before).
  auto own_tile = [&](int it, float (&tile_sum)[2]) {
    const int k0 = job.key_begin + it * kTileK;
    const u64 k_desc = sm90::smem_desc_sw128(lay.stage(it), kSlabBytes);
    // One accumulator (the other e4m3 kernels spread S over kSChains): a
    // second spills beside O's 128 registers and runs 40-47% slower. An LSE
    // moves by up to 1.6e-2 at logits of 80 (decode numerics' own bound).
    float s[kRowsN / 2] = {};
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kHeadDimQK / 32; ++ks)
      WgmmaE4M3::ss(s, q_desc + ((ks / 4) * kQSlabBytes + (ks % 4) * 32) / 16,
                    k_desc + ((ks / 4) * kSlabBytes + (ks % 4) * 32) / 16, ks > 0);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(s);
    // s[4 j + e]: row row0 + 8 (e / 2), key k0 + 8 j + 2 quad + e % 2.
    if (k0 + kTileK > job.mask_from) {
#pragma unroll
      for (int i = 0; i < kRowsN / 2; ++i)
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
      const int row = row0 + 8 * r;
      const float max_prev = it == 0 ? kNegInf : s_max[row];
      const float max_new = max_float(max_prev, m * job.unit);
      // A row that has seen only masked keys keeps max -inf and base 0.
      base[r] = max_new == kNegInf ? 0.0f : max_new;
      const float alpha = exp2_approx(max_prev - base[r]);
      __syncwarp(); // every lane of the quad has read s_max
      if (quad == 0) {
        s_max[row] = max_new;
        s_alpha[64 * (it % 4) + row] = alpha;
      }
    }
    sm90::named_barrier_sync(bar, 128); // the factors visible to this consumer's warps
    sm90::split_barrier_arrive(kBarMax + consumer, 256);
    // P: for row r and 16-key group g, this thread's keys 16 g + 2 quad +
    // {0, 1} and 16 g + 8 + 2 quad + {0, 1} are bytes 4 quad .. 4 quad + 3
    // of the group (consume_fp8's order), so one word a row and group.
    u32 hi[2][4], lo[2][4];
    tile_sum[0] = tile_sum[1] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float p0 = exp2_approx(s[4 * j + 2 * r] * job.unit - base[r]);
        const float p1 = exp2_approx(s[4 * j + 2 * r + 1] * job.unit - base[r]);
        tile_sum[r] += p0 + p1;
        u32 h, l;
        sm90::split_fp8_pair(p0 * kPScale, p1 * kPScale, h, l);
        const int shift = 16 * (j % 2);
        hi[r][j / 2] = (j % 2 ? hi[r][j / 2] : 0u) | h << shift;
        lo[r][j / 2] = (j % 2 ? lo[r][j / 2] : 0u) | l << shift;
      }
    if (it >= 2)
      sm90::split_barrier_sync(kBarPFree + it % 2, 256); // the other consumer's P V of tile it - 2 is done
    const u32 p_slab = lay.p + (it % 2) * kPBytes;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        nv::store_shared_u32(p_slab + swizzled(row0 + 8 * r, g) + 4 * quad, hi[r][g]);
        nv::store_shared_u32(p_slab + swizzled(row0 + 8 * r, 4 + g) + 4 * quad, lo[r][g]);
      }
    sm90::fence_proxy_async();          // P is read by wgmma (the async proxy)
    sm90::named_barrier_sync(bar, 128); // P visible to this consumer's warps
    sm90::split_barrier_arrive(kBarP + consumer, 256);
  };

  // The other consumer's tile it: its P's products (O already rescaled).
  auto take = [&](int it) {
    sm90::split_barrier_sync(kBarP + other, 256);
    sm90::mbarrier_wait(lay.full(it % kStages), (it / kStages) & 1); // (the owner waited too)
    add_pv(it);
    sm90::split_barrier_arrive(kBarPFree + it % 2, 256); // the owner may store P of it + 2
  };
  auto add_sum = [&](const float (&tile_sum)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
      sum[r] += tile_sum[r];
  };
  // Pairs of tiles (a, b), in consume_rows' order, so that one consumer's S
  // and softmax run under the other's products:
  //   consumer 0: S and softmax of a, P_a V_a[L]; alpha_b, P_b V_b[L].
  //   consumer 1: alpha_a; S and softmax of b; P_a V_a[R]; alpha_b, P_b V_b[R].
  if (num_tiles > 0)
    sm90::mbarrier_wait(lay.q_full(), 0);
  for (int a = 0; a < num_tiles; a += 2) {
    const int b = a + 1;
    const bool has_b = b < num_tiles;
    float tile_sum[2];
    if (consumer == 0) {
      sm90::mbarrier_wait(lay.full(a % kStages), (a / kStages) & 1);
      sm90::fence_proxy_async(); // cp.async wrote through the generic proxy
      own_tile(a, tile_sum);
      rescale(a);
      add_sum(tile_sum);
      add_pv(a);
      if (has_b) {
        sm90::split_barrier_sync(kBarMax + other, 256);
        rescale(b);
        take(b);
      }
    } else {
      sm90::split_barrier_sync(kBarMax + other, 256);
      if (has_b) {
        sm90::mbarrier_wait(lay.full(b % kStages), (b / kStages) & 1);
        sm90::fence_proxy_async(); // cp.async wrote through the generic proxy
        own_tile(b, tile_sum);
      }
      rescale(a);
      take(a);
      if (has_b) {
        rescale(b);
        add_sum(tile_sum);
        add_pv(b);
      }
    }
  }
  // The last arrival on this consumer's kBarPFree, which no store waited for.
  if (num_tiles > consumer)
    sm90::split_barrier_sync(kBarPFree + consumer, 256);

  // Row sums: this thread's keys, the quad's, then both consumers'.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sum[r] += shfl_xor(sum[r], 1);
    sum[r] += shfl_xor(sum[r], 2);
    if (quad == 0)
      s_sum[consumer * 64 + row0 + 8 * r] = sum[r];
  }
  sm90::split_barrier_sync(kBarOut, kConsumerThreads); // sums visible, every product done: the stages are free
  if (consumer == 0 && quad == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      if (!is_real_row(job.row0 + row))
        continue;
      const float total = s_sum[row] + s_sum[64 + row];
      const float lse = total > 0.0f ? (s_max[row] + log2_approx(total)) * kLn2 : kNegInf;
      if (job.pair)
        staged[kStagedLse + row] = lse; // merge_staged_pair's
      else
        output.store_lse(job.row0 + row, lse);
    }
  }
  // O^T as fp32 rows: o[c][4 j + e] is q row 8 j + 2 quad + e % 2, column
  // 256 consumer + 64 c + 16 w + 2 g + e / 2.
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float scale = RowState::output_scale(s_sum[r] + s_sum[64 + r]) * (job.v_scale / kPScale);
    const int e0 = 4 * (hd / 2) + hd % 2;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      Float2 *const at =
          reinterpret_cast<Float2 *>(staged + r * kOutStride + 256 * consumer + 64 * c + 16 * warp + 2 * group);
      *at = Float2{o[c][e0] * scale, o[c][e0 + 2] * scale};
    }
  }
  sm90::split_barrier_sync(kBarOut, kConsumerThreads);
  const int tid = consumer * 128 + warp * 32 + lane;
  if (job.pair) {
    merge_staged_pair<kConsumerThreads>(job, output, staged, tid,
                                        [] { sm90::split_barrier_sync(kBarOut, kConsumerThreads); });
    return;
  }
  write_staged_rows<kConsumerThreads>(job, output, staged, tid);
}
