// The producer: Q, then every tile of the item. Thread t copies 16-byte
// chunk t % 8 of rows t / 8 + 16 i of every slab; the row's page is looked
// up one tile ahead, so the block table's latency hides behind the wait for
// a free buffer.

// The page of key `key` of tile `it`: tile 0's from the job
// (read_first_pages) when pages hold whole tiles, except in the 32-row e4m3
// blocks, whose producer spilled with the two entries held until it hands
// its registers over; else from the block table.
constexpr bool kFirstPagesAhead = kFirstPagesRead && !(kFP8Operands && kRowsN == 32);

MLAGEN_DEVICE int tile_page(const Job &job, const PagedCache &cache, int it, int key) {
  if (kFirstPagesAhead && it == 0)
    return (unsigned)key / kPageSize == (unsigned)job.key_begin / kPageSize ? job.first_pages[0] : job.first_pages[1];
  return cache.page_of(key);
}

MLAGEN_DEVICE void produce(const Job &job, const PagedCache &cache, const Layout &lay, int num_tiles, int ptid) {
  const int row = ptid / 8;
  const int chunk = ptid % 8;
  constexpr int kPasses = kTileK / 16;
  int page[kPasses];
  auto lookup = [&](int it) {
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int key = job.key_begin + it * kTileK + row + 16 * i;
      page[i] = key < job.block_end ? tile_page(job, cache, it, key) : -1;
    }
  };
  lookup(0);
  // One consumer: a chunk with a partial slot (the reduce merges it) streams
  // evict-first from L2 (H200, bf16 H16 B1 S32768 26.7 -> 25.5 us, B4-B8
  // 37.2-37.3 -> 34.1-34.6, B32 55.7 -> 53.8); chunks merged in a cluster
  // (B64: 89.5 -> 91.8) and whole requests keep plain copies.
  const nv::L2Stream stream = nv::l2_stream(!kSplitStages && job.slot >= 0);
  for (int it = 0; it < num_tiles; ++it) {
    const u32 dst = lay.stage(it);
    const int k0 = job.key_begin + it * kTileK;
    // Two consumers free the halves of a stage at different times; each
    // half refills as soon as it is free, in the order they free up.
#pragma unroll
    for (int h = 0; h < (kSplitStages ? 2 : 1); ++h) {
      const int half = first_half(it) ^ h;
      const int s_begin = kSplitStages && half == 1 ? 4 : 0;
      const int s_end = kSplitStages && half == 0 ? 4 : kSlabs;
      if (it >= kStages)
        sm90::mbarrier_wait(lay.empty(it % kStages, half), (it / kStages - 1) & 1);
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const int r = row + 16 * i;
        const bool valid = page[i] >= 0;
        // A row past the keys reads nothing and is zero-filled.
        const u16 *src = (valid ? cache.row(page[i], k0 + r) : cache.base) + chunk * 8;
        for (int s = s_begin; s < s_end; ++s)
          nv::cp_async_16_l2_128(dst + s * kSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid,
                                 stream);
      }
      // The half's first slab barrier stands for the half.
      sm90::cp_async_arrive(lay.full(it % kStages, s_begin));
    }
    if (it + 1 < num_tiles)
      lookup(it + 1);
  }
}

// Whole pages by bulk tensor copies (TMA): 64-row blocks whose pages are
// one tile each, from a 16-bit cache, when the host passes a tensor map of
// the cache (DecodeParams::kv_map; without one, `produce`).
constexpr bool kBulkTiles = kSplitStages && kPageSize == kTileK && !kCacheFP8;

// Whether tile it of the item is a whole page (one box per slab); else it
// ends inside its page and goes by cp.async, zero-filled past the keys.
MLAGEN_DEVICE bool fills_page(const Job &job, int it) {
  const int k0 = job.key_begin + it * kTileK;
  return k0 % kTileK == 0 && k0 + kTileK <= job.block_end;
}

// Producer warps for each half of a stage (`copiers` of them; this is
// number `copier`): lane 0 of the first copies the first kStages tiles'
// halves as one 64 x 64 box per slab, completing on the slab's own full
// barrier. Later whole tiles are copied by the consumer that frees the half
// (consume_rows's `free_half`), which saves the hand-over to this warp. A
// tile that does not fill its page (an item's last) is copied by the warps
// with cp.async, which zero-fills the rows past the keys, and announced on
// the slab barriers (one arrival a warp) once all of it has landed; so is
// every tile of a launch without a tensor map (kv_map null: two warps a
// half), which keeps one consumer path for both (a second doubled the
// entry's compile time). The consumers arrive on a half's empty barrier
// only for such tiles, so its phases count them: the warps wait for each in
// turn, and none can complete twice before they wait (the consumers need
// the tile first).
MLAGEN_DEVICE void produce_bulk(const Job &job, const PagedCache &cache, const void *kv_map, const Layout &lay,
                                int num_tiles, int half, int copier, int copiers, int lane) {
  const int s_begin = half == 0 ? 0 : 4;
  const int s_end = half == 0 ? 4 : kSlabs;
  // The tile's page, looked up a tile ahead (lane 0).
  int page = lane == 0 && num_tiles > 0 ? tile_page(job, cache, 0, job.key_begin) : 0;
  if (lane == 0 && kv_map != nullptr)
    sm90::prefetch_tensor_map(kv_map);
  u32 parity = 0; // bit st: the parity of stage st's next empty phase
  for (int it = 0; it < num_tiles; ++it) {
    const u32 dst = lay.stage(it);
    const int k0 = job.key_begin + it * kTileK;
    const bool whole = kv_map != nullptr && fills_page(job, it);
    if (it >= kStages) {
      if (whole)
        continue;
      const int st = it % kStages;
      sm90::mbarrier_wait(lay.empty(st, half), (parity >> st) & 1);
      parity ^= 1u << st;
    }
    if (whole) {
      if (lane == 0) {
        const unsigned long long policy = nv::l2_evict_first_policy();
        for (int s = s_begin; s < s_end; ++s) {
          sm90::mbarrier_arrive_expect_tx(lay.full(it % kStages, s), kSlabBytes);
          sm90::tma_load_3d(dst + s * kSlabBytes, kv_map, 64 * s, 0, page, lay.full(it % kStages, s), policy);
        }
      }
    } else {
      // A tile spans at most two pages: both looked up once (a lookup a row
      // kept the copies waiting on one table load after another).
      const int last_key = min_int(k0 + kTileK, job.block_end) - 1;
      const int first_page = tile_page(job, cache, it, k0);
      const int last_page = tile_page(job, cache, it, last_key);
      const int chunk = lane % 8;
      for (int r = lane / 8 + 4 * copier; r < kTileK; r += 4 * copiers) {
        const int key = k0 + r;
        const bool valid = key < job.block_end;
        const int pg = (unsigned)key / kPageSize == (unsigned)k0 / kPageSize ? first_page : last_page;
        const u16 *src = (valid ? cache.row(pg, key) : cache.base) + chunk * 8;
        for (int s = s_begin; s < s_end; ++s)
          nv::cp_async_16(dst + s * kSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid);
      }
      sm90::cp_async_wait_all();
      sm90::fence_proxy_async(); // for wgmma: the consumers do not fence in bulk mode
      __syncwarp();
      if (lane == 0)
        for (int s = s_begin; s < s_end; ++s)
          sm90::mbarrier_arrive(lay.full(it % kStages, s));
    }
    const int next = k0 + kTileK;
    if (lane == 0 && it + 1 < min_int(num_tiles, kStages))
      page = cache.page_of(next);
  }
}

// Q, by all four producer warps.
MLAGEN_DEVICE void produce_q(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                             long long q_head_stride, const Layout &lay, int ptid) {
  const int row = ptid / 8;
  const int chunk = ptid % 8;
#pragma unroll
  for (int r = row; r < kRowsN; r += 16) {
    const int g = job.row0 + r;
    const bool valid = is_real_row(g);
    const u16 *src =
        valid ? reinterpret_cast<const u16 *>(q_row(q, g, q_token_stride, q_head_stride)) + chunk * 8 : cache.base;
#pragma unroll
    for (int s = 0; s < kSlabs; ++s)
      nv::cp_async_16(lay.q + s * kQSlabBytes + swizzled(r, chunk), valid ? src + s * 64 : src, valid);
  }
  sm90::cp_async_arrive(lay.q_full());
}

MLAGEN_DEVICE void store_shared_16(u32 addr, const Raw16 &v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.w[0]), "r"(v.w[1]), "r"(v.w[2]),
               "r"(v.w[3])
               : "memory");
}

// An fp8 cache (one consumer): Q and the tiles go through registers,
// converted exactly to fp16 (the operand type, see MmaElem) on their way
// into the slabs. Thread t holds 16-byte chunks t % 4 + 4 s (slab s) of rows
// t / 4 and t / 4 + 32; each chunk becomes two swizzled 16-byte fp16
// chunks. Two tiles are in registers at a time: one is stored while the
// next one's loads fly.
struct FP8Tile {
  Raw16 chunk[2][kSlabs];
  int page[2]; // -1: past the keys (zeros, nothing read)
};

MLAGEN_DEVICE Raw16 load_shared_16(u32 addr) {
  Raw16 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "r"(addr)
               : "memory");
  return v;
}

// 16 fp8 of a raw chunk as 16 fp16 operands: 16-byte chunks `chunk` and
// chunk + 1 of row r of the fp16 slab at `slab`.
MLAGEN_DEVICE void store_widened(u32 slab, int r, int chunk, const Raw16 &raw) {
  Raw16 lo, hi;
  fp8x4_to_operands(raw.w[0], lo.w[0], lo.w[1]);
  fp8x4_to_operands(raw.w[1], lo.w[2], lo.w[3]);
  fp8x4_to_operands(raw.w[2], hi.w[0], hi.w[1]);
  fp8x4_to_operands(raw.w[3], hi.w[2], hi.w[3]);
  store_shared_16(slab + swizzled(r, chunk), lo);
  store_shared_16(slab + swizzled(r, chunk + 1), hi);
}
// Raw chunk c (16 columns) of a half's rows widened into the stage at `stage`.
MLAGEN_DEVICE void widen_raw_chunk(u32 stage, int half, int r, int c, const Raw16 &raw) {
  const int col = 256 * half + 16 * c;
  store_widened(stage + col / 64 * kSlabBytes, r, col % 64 / 8, raw);
}

// Q as fp16 operands through registers (fp8 q converted exactly, bf16 q
// rounded), by the four producer warps.
MLAGEN_DEVICE void produce_q_fp16(const Job &job, const void *q, long long q_token_stride, long long q_head_stride,
                                  const Layout &lay, int ptid) {
  const int chunk = ptid % 8;
  for (int row = ptid / 8; row < kRowsN; row += 16) {
    const int g = job.row0 + row;
    const u8 *src = q_row(q, g, q_token_stride, q_head_stride);
#pragma unroll
    for (int sl = 0; sl < kSlabs; ++sl) {
      const Raw16 zero = {{0u, 0u, 0u, 0u}};
      const Raw16 v = is_real_row(g) ? q_chunk_as_fp16(src, sl * 64 + chunk * 8) : zero;
      store_shared_16(lay.q + sl * kQSlabBytes + swizzled(row, chunk), v);
    }
  }
  sm90::fence_proxy_async(); // read by wgmma (the async proxy)
  sm90::mbarrier_arrive(lay.q_full());
}

MLAGEN_DEVICE void produce_fp8(const Job &job, const PagedCache &cache, const void *q, long long q_token_stride,
                               long long q_head_stride, const Layout &lay, int num_tiles, int ptid) {
  if (num_tiles > 0)
    produce_q_fp16(job, q, q_token_stride, q_head_stride, lay, ptid);
  const int row0 = ptid / 4;
  const int quarter = ptid % 4;
  auto lookup = [&](FP8Tile &t, int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int key = job.key_begin + it * kTileK + row0 + 32 * pass;
      t.page[pass] = key < job.block_end ? tile_page(job, cache, it, key) : -1;
    }
  };
  // The cache is read once: evict-first in L2 (H200, fp8 B32 H16 46.1 ->
  // 44.1 us, B128 H128 579 -> 569; the bf16 cp.async stream measured slower
  // with it at B64 and B128 and keeps the default).
  const unsigned long long stream = nv::l2_evict_first_policy();
  auto fetch = [&](FP8Tile &t, int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int page = t.page[pass];
      const u8 *src = cache.row8(page < 0 ? 0 : page, job.key_begin + it * kTileK + row0 + 32 * pass) + quarter * 16;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl) {
        if (page >= 0)
          nv::load_global_16(t.chunk[pass][sl].w, src + sl * 64, stream);
        else
          t.chunk[pass][sl] = Raw16{{0u, 0u, 0u, 0u}};
      }
    }
  };
  auto put = [&](const FP8Tile &t, int it) {
    if (it >= kStages)
      sm90::mbarrier_wait(lay.empty(it % kStages), (it / kStages - 1) & 1);
    const u32 dst = lay.stage(it);
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int r = row0 + 32 * pass;
#pragma unroll
      for (int sl = 0; sl < kSlabs; ++sl)
        store_widened(dst + sl * kSlabBytes, r, 2 * quarter, t.chunk[pass][sl]);
    }
    sm90::fence_proxy_async();
    sm90::mbarrier_arrive(lay.full(it % kStages));
  };
  // Two tiles by two, so that each buffer is a named variable (registers).
  FP8Tile even, odd;
  if (num_tiles > 0) {
    lookup(even, 0);
    fetch(even, 0);
  }
  if (num_tiles > 1) {
    lookup(odd, 1);
    fetch(odd, 1);
  }
  for (int it = 0; it < num_tiles; it += 2) {
    put(even, it);
    if (it + 2 < num_tiles) {
      lookup(even, it + 2);
      fetch(even, it + 2);
    }
    if (it + 1 < num_tiles) {
      put(odd, it + 1);
      if (it + 3 < num_tiles) {
        lookup(odd, it + 3);
        fetch(odd, it + 3);
      }
    }
  }
}

// 64-row blocks on an fp8 cache: the stage halves hold fp16 operands, as
// for a 16-bit cache, widened by the producer warps in place. A half's raw
// fp8 rows (columns 0..255 or 256..575) land in the top of the half's own
// region, in 128-byte swizzled slabs of 64 rows (TMA boxes of the cache
// read as 16-bit pairs; the last box of the second half is zero past
// column 575). Raw chunks 0..7 of a row widen below the raw slabs (the
// half's first two fp16 slabs) and go first; the rest are read into
// registers and, once every producer thread has read its own, written over
// the raw bytes. With a tensor map of a cache of 64-key pages, a whole
// tile's raw halves come by TMA, issued by the consumer that frees the
// half (as for a 16-bit cache) on the half's raw barrier (full barriers 1
// and 5, unused by halves that complete as one); other tiles, and every
// tile without a map, by the producer's cp.async.
constexpr int kBarWiden = 12;
MLAGEN_DEVICE int raw_boxes(int half) { return half == 0 ? 2 : 3; }
MLAGEN_DEVICE u32 raw_slabs(u32 stage, int half) { return stage + (half == 0 ? 2 : 6) * kSlabBytes; }
MLAGEN_DEVICE u32 raw_barrier(const Layout &lay, int it, int half) { return lay.full(it % kStages, 4 * half + 1); }
// 16-byte chunk c of row r of a half's raw bytes.
MLAGEN_DEVICE u32 raw_chunk(u32 raw, int r, int c) { return raw + (c / 8) * kSlabBytes + swizzled(r, c % 8); }

// The producer asks L2 for tile it + 2's raw bytes as it starts tile it,
// so that the copy issued when tile it's halves are freed (free_half) finds
// them there: the raw copy is on each half's path from free to ready (B128
// H128 380.9-383.5 -> 371.5-374.2 us; 3 and 5 tiles ahead gained less).
// The 16-bit kernel lost with L2 prefetches (decode-wgmma.md): it is
// power-bound, this one latency-bound.
constexpr int kRawPrefetchTiles = 2;
MLAGEN_DEVICE void issue_raw_half(const Layout &lay, const void *kv_map, int it, int half, int page) {
  const u32 raw = raw_slabs(lay.stage(it), half), bar = raw_barrier(lay, it, half);
  sm90::mbarrier_arrive_expect_tx(bar, raw_boxes(half) * kSlabBytes);
  for (int j = 0; j < raw_boxes(half); ++j)
    sm90::tma_load_3d(raw + j * kSlabBytes, kv_map, 128 * half + 64 * j, 0, page, bar);
}

MLAGEN_DEVICE void produce_fp8_halves(const Job &job, const PagedCache &cache, const void *q,
                                      long long q_token_stride, long long q_head_stride, const void *kv_map,
                                      const Layout &lay, int num_tiles, int ptid) {
  if (num_tiles == 0)
    return;
  const bool tma = kv_map != nullptr;
  if (tma && ptid == 0)
    for (int it = 0; it < min_int(num_tiles, kStages); ++it)
      if (fills_page(job, it)) {
        const int k0 = job.key_begin + it * kTileK;
        const int page = tile_page(job, cache, it, k0);
        issue_raw_half(lay, kv_map, it, first_half(it), page);
        issue_raw_half(lay, kv_map, it, first_half(it) ^ 1, page);
      }
  produce_q_fp16(job, q, q_token_stride, q_head_stride, lay, ptid);
  // Bit 2 (it % kStages) + half: the parity of that region's next raw or
  // empty phase. Each phase is one tile that uses the barrier (with TMA,
  // the consumers release a half only for a tile the producer copies).
  u32 raw_parity = 0, empty_parity = 0;
  for (int e = 0; e < 2 * num_tiles; ++e) {
    const int it = e / 2, half = first_half(it) ^ (e % 2);
    const int region = 2 * (it % kStages) + half;
    const u32 stage = lay.stage(it), raw = raw_slabs(stage, half);
    const int chunks = half == 0 ? 16 : 20; // raw 16-byte chunks of a row
    if (tma && ptid == 32 && e % 2 == 0 && it + kRawPrefetchTiles < num_tiles &&
        fills_page(job, it + kRawPrefetchTiles)) { // warp 1: warp 0's lane 0 issued the first tiles
      const int ahead = cache.page_of(job.key_begin + (it + kRawPrefetchTiles) * kTileK);
      for (int h = 0; h < 2; ++h)
        for (int j = 0; j < raw_boxes(h); ++j)
          sm90::tma_prefetch_3d(kv_map, 128 * h + 64 * j, 0, ahead);
    }
    if (tma && fills_page(job, it)) {
      sm90::mbarrier_wait(raw_barrier(lay, it, half), (raw_parity >> region) & 1);
      raw_parity ^= 1u << region;
    } else {
      if (it >= kStages) {
        sm90::mbarrier_wait(lay.empty(it % kStages, half), (empty_parity >> region) & 1);
        empty_parity ^= 1u << region;
      }
      const int k0 = job.key_begin + it * kTileK;
      for (int i = ptid; i < kTileK * chunks; i += 128) {
        const int r = i / chunks, c = i % chunks, key = k0 + r;
        const bool valid = key < job.block_end;
        // A row past the keys reads nothing and is zero-filled.
        const u8 *src = cache.row8(valid ? cache.page_of(key) : 0, valid ? key : 0) + 256 * half + 16 * c;
        nv::cp_async_16_l2_128(raw_chunk(raw, r, c), src, valid);
      }
      nv::cp_async_commit();
      nv::cp_async_wait<0>();
      sm90::named_barrier_sync(kBarWiden, 128); // every thread's copies landed
    }
    // Two threads a row: thread t widens chunks 4 (t % 2) .. + 3 of row
    // t / 2 first, then holds its share of the rest (chunks 8.., 4 or 6).
    const int r = ptid / 2, side = ptid % 2;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int c = 4 * side + k;
      widen_raw_chunk(stage, half, r, c, load_shared_16(raw_chunk(raw, r, c)));
    }
    const int held = (chunks - 8) / 2, c0 = 8 + held * side;
    Raw16 keep[6];
#pragma unroll
    for (int k = 0; k < 6; ++k)
      if (k < held)
        keep[k] = load_shared_16(raw_chunk(raw, r, c0 + k));
    sm90::named_barrier_sync(kBarWiden, 128); // the raw bytes are read
#pragma unroll
    for (int k = 0; k < 6; ++k)
      if (k < held)
        widen_raw_chunk(stage, half, r, c0 + k, keep[k]);
    sm90::fence_proxy_async(); // read by wgmma (the async proxy)
    // The half's first slab barrier stands for the half.
    sm90::mbarrier_arrive(lay.full(it % kStages, 4 * half));
  }
}

// fp8 operands (kFP8Operands): Q and the tiles are copied raw. 16-byte
// chunk c of a row lands in slab c / 8 at swizzled chunk c % 8.
MLAGEN_DEVICE u32 fp8_operand_at(u32 slabs, int slab_bytes, int row, int chunk) {
  return slabs + (chunk / 8) * slab_bytes + swizzled(row, chunk % 8);
}

// fp8 Q in 8-byte copies (fp8 q rows are only 8-byte aligned; bf16 q is
// split by the consumers, `split_q`), then the tiles: thread t copies
// 16-byte chunks t % 4 + 4 s of rows t / 4 and t / 4 + 32 (a warp reads 64
// contiguous bytes of 8 rows a copy, asking L2 for whole 128-byte lines as
// `produce` does); each row's page is looked up a tile ahead.
MLAGEN_DEVICE void produce_fp8_operands(const Job &job, const PagedCache &cache, const void *q,
                                        long long q_token_stride, long long q_head_stride, const Layout &lay,
                                        int num_tiles, int ptid) {
  if (num_tiles == 0)
    return;
  if (!kSplitQuery) {
    constexpr int kPieces = kHeadDimQK / 8; // 8-byte pieces of a q row
    for (int i = ptid; i < kRowsN * kPieces; i += 128) {
      const int row = i / kPieces, piece = i % kPieces;
      const int g = job.row0 + row;
      const bool valid = is_real_row(g);
      const u8 *src = valid ? q_row(q, g, q_token_stride, q_head_stride) + piece * 8 : cache.row8(0, 0);
      nv::cp_async_8(fp8_operand_at(lay.q, kQSlabBytes, row, piece / 2) + (piece % 2) * 8, src, valid);
    }
    sm90::cp_async_arrive(lay.q_full());
  }
  const int row0 = ptid / 4;
  const int quarter = ptid % 4;
  int page[2];
  auto lookup = [&](int it) {
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int key = job.key_begin + it * kTileK + row0 + 32 * pass;
      page[pass] = key < job.block_end ? tile_page(job, cache, it, key) : -1;
    }
  };
  lookup(0);
  // A chunk of a split request streams evict-first from L2 (H200, fp8 B64
  // H16 58.7 -> 57.1 us, B32 43.2 -> 38.6-39.9, B16 32.0 -> 29.7: what
  // else is in L2 stays); a whole request keeps plain copies (B128 92.1
  // against 94 evict-first, 98 with an explicit evict_normal policy).
  // 32-row producers spilled with the policy register.
  const nv::L2Stream stream = nv::l2_stream(kRowsN == 16 && job.slot != -1);
  for (int it = 0; it < num_tiles; ++it) {
    if (it >= kStages)
      sm90::mbarrier_wait(lay.empty(it % kStages), (it / kStages - 1) & 1);
    const u32 dst = lay.stage(it);
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int r = row0 + 32 * pass;
      const bool valid = page[pass] >= 0;
      // A row past the keys reads nothing and is zero-filled.
      const u8 *src = cache.row8(valid ? page[pass] : 0, job.key_begin + it * kTileK + r) + quarter * 16;
#pragma unroll
      for (int s = 0; s < kHeadDimQK / 64; ++s)
        nv::cp_async_16_l2_128(fp8_operand_at(dst, kSlabBytes, r, quarter + 4 * s), src + s * 64, valid, stream);
    }
    sm90::cp_async_arrive(lay.full(it % kStages));
    if (it + 1 < num_tiles)
      lookup(it + 1);
  }
  sm90::cp_async_wait_all(); // no copy outlives the thread
}
