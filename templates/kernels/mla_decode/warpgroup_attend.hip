MLAGEN_DEVICE void attend(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                          long long q_head_stride, const void *kv_map, const Output &output, u16 *smem) {
  const u32 raw = nv::shared_address(smem);
  // Blocks of 32 rows and 16-bit blocks of 16 take the base, and their
  // consumers the tile count, from lane 0, so that ptxas knows they are the
  // same in every lane: the stages' addresses, the loop counters and the
  // wgmma descriptors then live in uniform registers. The 64-row kernels'
  // are uniform already (the broadcast made ptxas spill there); the 16-row
  // e4m3 kernels spilled or ran slower with it (bench/notes/decode-fp8.md).
  constexpr bool kUniformBase = kRowsN == 32 || (kRowsN == 16 && !kFP8Operands);
  const u32 aligned_raw = (raw + 1023u) & ~1023u;
  const u32 base = kUniformBase ? __shfl_sync(~0u, aligned_raw, 0) : aligned_raw;
  u16 *const aligned = smem + (base - raw) / 2;
  Layout lay;
  lay.q = base;
  lay.kv = lay.q + kQBytes;
  lay.p = lay.kv + kStages * kStageBytes;
  lay.red = reinterpret_cast<float *>(aligned + (lay.p + kPSlabs * kPBytes - base) / 2);
  lay.total = lay.red + 5 * kRowsN;
  lay.q_unscale = lay.red + kConsumerRowFloats * kPSlabs;
  lay.bars = lay.p + kPSlabs * kPBytes + 4 * kRowFloats + (kClusterParts > 1 ? kPartBytes : 0);
  float *const staged = reinterpret_cast<float *>(aligned + (lay.kv - base) / 2);

  const int tid = thread_index();
  if constexpr (kSplitQuery) {
    // split_q's loads go out after the barrier, behind the producer's first
    // tile copies; asking L2 for q's lines now keeps them off that queue.
    constexpr int kLines = kHeadDimQK * 2 / 128; // of a bf16 q row
    for (int i = tid; i < kRowsN * kLines; i += kThreads)
      if (is_real_row(job.row0 + i / kLines))
        nv::prefetch_l2(q_row(q, job.row0 + i / kLines, q_token_stride, q_head_stride) + 128 * (i % kLines));
  }
  if (tid == 0) {
    sm90::mbarrier_init(lay.q_full(), 128);
    // Bulk tiles: one arrival a copier warp (produce_bulk); else a thread's.
    const int arrivals = kBulkTiles ? (kv_map != nullptr ? 1 : 2) : 128;
    for (int st = 0; st < kStages; ++st) {
      for (int sl = 0; sl < kFullPerStage; ++sl)
        sm90::mbarrier_init(lay.full(st, sl), kCacheFP8 && kSplitStages && sl % 4 == 1 ? 1 : arrivals);
      // One arrival per consumer warp; split stages: consumer 0's warps free
      // the first half, consumer 1's the second.
      // The seesaw's stages are read by both consumers.
      sm90::mbarrier_init(lay.empty(st), kSeesawFP8 ? 8 : 4);
      if (kSplitStages)
        sm90::mbarrier_init(lay.empty(st, 1), 4);
    }
    if (kClusterParts > 1) { // the other block's copy lands (merge_in_cluster)
      sm90::mbarrier_init(lay.merge_recv(), 1);
      sm90::mbarrier_arrive_expect_tx(lay.merge_recv(), kReceivedBytes);
    }
    sm90::mbarrier_init_fence();
  }
  block_barrier();
  if (kClusterParts > 1)
    sm90::cluster_arrive(); // the group's barriers exist
  const int num_tiles = ceil_div(job.block_end - job.key_begin, kTileK);
  // Two consumers: the producer hands registers to them (64 rows: O^T is
  // 128 a thread; paired fp8 consumers of 32 rows too). The block holds 168
  // a thread (65536 / 384, rounded down to 8): 56 + 2 x 224 <= 3 x 168,
  // else setmaxnreg.inc waits forever.
  if (tid >= kConsumerThreads) {
    if (kConsumers > 1)
      sm90::setmaxnreg_dec<56>();
    const int ptid = tid - kConsumerThreads;
    if constexpr (kFP8Operands) {
      produce_fp8_operands(job, cache, q, q_token_stride, q_head_stride, lay, num_tiles, ptid);
    } else if constexpr (kCacheFP8) {
      if constexpr (kSplitStages)
        produce_fp8_halves(job, cache, q, q_token_stride, q_head_stride, kv_map, lay, num_tiles, ptid);
      else
        produce_fp8(job, cache, q, q_token_stride, q_head_stride, lay, num_tiles, ptid);
    } else {
      if (num_tiles > 0)
        produce_q(job, cache, q, q_token_stride, q_head_stride, lay, ptid);
      if constexpr (kBulkTiles) {
        const int copiers = kv_map != nullptr ? 1 : 2; // warps a half
        if (ptid < 64 * copiers)
          produce_bulk(job, cache, kv_map, lay, num_tiles, ptid / 32 % 2, ptid / 64, copiers, ptid % 32);
      } else {
        produce(job, cache, lay, num_tiles, ptid);
      }
      sm90::cp_async_wait_all(); // no copy outlives the thread
    }
    return;
  }
  if (kConsumers > 1)
    sm90::setmaxnreg_inc<224>();
  const int warp = tid / 32 % 4, lane = tid % 32;
  const int consumer_tiles = kUniformBase ? __shfl_sync(~0u, num_tiles, 0) : num_tiles;
  if constexpr (kSplitStages) {
    if (tid >= 128) // the second consumer
      consume_rows<1>(job, cache, kv_map, output, lay, num_tiles, warp, lane, staged);
    else
      consume_rows<0>(job, cache, kv_map, output, lay, num_tiles, warp, lane, staged);
  } else if constexpr (kSeesawFP8) {
    if (tid >= 128) // the second consumer
      consume_seesaw_fp8<1>(job, output, lay, num_tiles, warp, lane, staged);
    else
      consume_seesaw_fp8<0>(job, output, lay, num_tiles, warp, lane, staged);
  } else if constexpr (kFP8Operands) {
    // Paired 16-row consumers run one body: an instance each compiled the
    // same schedule twice (16-head fp8 cold JIT 1.4-2.3 -> 1.2-1.4 s on an
    // H200 machine, speed unchanged). Paired 32-row consumers keep an
    // instance each: one body made B128 H128 2% slower
    // (bench/notes/decode-fp8.md). tid / 128 comes from lane 0 so that
    // ptxas knows it is the same in every lane.
    if constexpr (kPairedTiles && kRowsN == 32) {
      if (tid >= 128)
        consume_fp8(1, job, q, q_token_stride, q_head_stride, output, lay, consumer_tiles, warp, lane, staged);
      else
        consume_fp8(0, job, q, q_token_stride, q_head_stride, output, lay, consumer_tiles, warp, lane, staged);
    } else {
      consume_fp8(kPairedTiles ? __shfl_sync(~0u, tid / 128, 0) : 0, job, q, q_token_stride, q_head_stride, output,
                  lay, consumer_tiles, warp, lane, staged);
    }
  } else {
    consume(job, output, lay, consumer_tiles, warp, lane, staged);
  }
  // The threads that wrote the rows: consumer 0 (paired fp8 consumers hand
  // theirs to it). 64-row blocks merge their pairs in their consumers.
  if (!kSplitStages && !kSeesawFP8 && tid < 128)
    merge_pair_if_second<128, 8>(job, output, tid, staged, [] { sm90::named_barrier_sync(1, 128); });
}
