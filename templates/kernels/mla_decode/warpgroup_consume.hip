// One consumer (16 or 32 rows); 64 rows take consume_rows. P is rounded to
// 16 bits once, as FlashMLA and the prefill do: items of one tile (a few
// large weights) carry that rounding in their output too.
MLAGEN_DEVICE void consume(const Job &job, const Output &output, const Layout &lay, int num_tiles, int warp,
                           int lane, float *staged) {
  constexpr int kHd = kRowsN / 4; // q rows a thread sees
  const int group = lane / 4;
  const int quad = lane % 4;
  const u64 q_desc = sm90::smem_desc_sw128(lay.q, 16);
  const u64 p_desc = sm90::smem_desc_sw128(lay.p, 16);

  float o[kVSlabs][kRowsN / 2];
#pragma unroll
  for (int c = 0; c < kVSlabs; ++c)
#pragma unroll
    for (int i = 0; i < kRowsN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[kHd];

  if (num_tiles > 0)
    sm90::mbarrier_wait(lay.q_full(), 0);
  for (int it = 0; it < num_tiles; ++it) {
    const int k0 = job.key_begin + it * kTileK;
    const u32 stage = lay.stage(it);
    const u64 kv_desc = sm90::smem_desc_sw128(stage, kSlabBytes);
    sm90::mbarrier_wait(lay.full(it % kStages), (it / kStages) & 1);
    sm90::fence_proxy_async(); // cp.async wrote through the generic proxy

    float chains[kSChains][kRowsN / 2] = {};
    sm90::wgmma_fence();
#pragma unroll
    for (int i = 0; i < kSlabs * 4; ++i) {
      const int sl = i / 4, ks = i % 4;
      WgmmaS::ss<0>(chains[i % kSChains], kv_desc + (sl * kSlabBytes + ks * 32) / 16,
                    q_desc + (sl * kQSlabBytes + ks * 32) / 16, i >= kSChains);
    }
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(chains);
    float s[kRowsN / 2];
    add_chains(s, chains);

    float alpha[kHd], base[kHd];
    mask_and_update(s, job, k0, lay.red, 1, rows, alpha, base, warp, lane);
    // P into its slab: element (q row r, key k) at row r, chunk k / 8,
    // 2-byte lane k % 8. Rows r and r + 1 (e and e + 1) share a key.
#pragma unroll
    for (int j = 0; j < kRowsN / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int e = 4 * j + 2 * h;
        const float p0 = exp2_approx(s[e] * job.unit - base[2 * j]);
        const float p1 = exp2_approx(s[e + 1] * job.unit - base[2 * j + 1]);
        rows[2 * j].sum += p0;
        rows[2 * j + 1].sum += p1;
        const int r = 8 * j + 2 * quad;
        const int key = 16 * warp + group + 8 * h;
        const u32 at = swizzled(r, key / 8) + (key % 8) * 2;
        const u32 at1 = swizzled(r + 1, key / 8) + (key % 8) * 2;
        const u32 packed = pack2<MmaElem>(p0, p1);
        store_shared_u16(lay.p + at, packed & 0xffffu);
        store_shared_u16(lay.p + at1, packed >> 16);
      }
    }
    sm90::fence_proxy_async();           // P is read by wgmma (the async proxy)
    sm90::named_barrier_sync(1, 128);    // P visible

    rescale_rows(o, alpha);

    sm90::fence_array(o); // O settles in its registers before the products
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kTileK / 16; ++ks)
#pragma unroll
      for (int c = 0; c < kVSlabs; ++c)
        WgmmaO::ss<0, 1>(o[c], kv_desc + (c * kSlabBytes + ks * 16 * 128) / 16, p_desc + (ks * 32) / 16, 1);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    sm90::fence_array(o);
    if (lane == 0)
      sm90::mbarrier_arrive(lay.empty(it % kStages)); // the buffer may refill
  }

  finish_rows(job, output, lay, rows, warp, lane);
  // O^T, normalised, through shared memory.
#pragma unroll
  for (int hd = 0; hd < kHd; ++hd) {
    const int r = q_row_of(hd, quad);
    const float scale = RowState::output_scale(lay.total[r]) * job.v_scale;
    const int e0 = 4 * (hd / 2) + hd % 2;
#pragma unroll
    for (int c = 0; c < kVSlabs; ++c) {
      const int col = 64 * c + 16 * warp + group;
      staged[r * kOutStride + col] = o[c][e0] * scale;
      staged[r * kOutStride + col + 8] = o[c][e0 + 2] * scale;
    }
  }
  write_or_merge(job, output, lay, staged, warp, lane);
}
