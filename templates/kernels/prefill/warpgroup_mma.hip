using sm90::u64;

// Checked only when this kernel is the one selected (kWarpSpecialized).
constexpr int kConsumers = kTileQ / 64;
static_assert(!kWarpSpecialized || (kConsumers >= 1 && kConsumers <= 3),
              "sm_90a wgmma: one to three consumer warpgroups of 64 query rows");
static_assert(!kWarpSpecialized || kHeadDimQK % 16 == 0 && kHeadDimV % 16 == 0,
              "sm_90a wgmma: head dims are whole 16-element wgmma steps");
static_assert(!kWarpSpecialized || kTileK == 64 || kTileK == 80 || kTileK == 96 || kTileK == 128,
              "sm_90a wgmma: kTileK is 64, 80, 96 or 128");
static_assert(!kWarpSpecialized || kHeadDimV <= 256,
              "sm_90a wgmma: a warpgroup keeps 64 x kHeadDimV fp32 outputs in registers");
// S of tile j is issued while P V of tile j - 1 still reads its V buffer.
static_assert(!kWarpSpecialized || kStages >= 2, "sm_90a wgmma: at least two K/V stages");

// Two or three consumers take turns issuing their matrix products (turn_begin).
constexpr bool kPingPong = kConsumers >= 2;
// Named barriers: 0 is the block's, 1 + wg the consumers' turns, and
// kOutputBarrier + wg a warpgroup's own (its output staged).
constexpr int kOutputBarrier = 4;
// Register budgets (the producer gives its share to the consumers):
// 128 * 24 + 256 * 240 <= 64K, or 128 * 24 + 384 * 160 with three
// consumers. The producer's loop needs few.
constexpr int kProducerRegs = 24;
constexpr int kConsumerRegs = kConsumers == 3 ? 160 : 240;

// Each tile is stored as 64-column slabs of [rows][64] elements (128-byte
// rows), slab after slab, every slab 1024-byte aligned. A head dim that is
// not a multiple of 64 (80, 96, ...) leaves the last slab partly unused:
// no product reads past the head dim.
constexpr int kSlabsQK = ceil_div(kHeadDimQK, 64);
constexpr int kSlabsV = ceil_div(kHeadDimV, 64);
static_assert(!kWarpSpecialized || kSlabsV <= kSlabsQK, "sm_90a wgmma: O is staged in Q's slabs");
constexpr int kQBytes = kTileQ * kSlabsQK * 128;
constexpr int kKBytes = kTileK * kSlabsQK * 128;
constexpr int kVBytes = kTileK * kSlabsV * 128;
constexpr int kNumBarriers = 1 + 4 * kStages; // q_full, k_full[], v_full[], k_empty[], v_empty[]
// 1024 bytes of alignment slack (the dynamic shared base is only 16-byte
// aligned), then the tiles, then the barriers.
// (PrefillOp::getSharedBytes computes the same for the host.)
constexpr int kSharedBytesUsed = 1024 + kQBytes + kStages * (kKBytes + kVBytes) + 8 * kNumBarriers;
static_assert(!kWarpSpecialized || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");

constexpr int kQKSteps = kHeadDimQK / 16;
constexpr int kPVSteps = kTileK / 16;
// Q as wgmma A fragments in registers, so that S = Q K^T reads only K from
// shared memory (its bandwidth is shared with the cp.async fills), when Q,
// S, P and O fit in about 208 of the consumers' 240 registers and no soft
// cap needs more. (fp16 kept Q in shared memory while its few-keys path
// still multiplied P's rounding residue; not re-measured since.)
constexpr bool kQInRegisters =
    4 * kQKSteps + kTileK / 2 + kTileK / 4 + kHeadDimV / 2 <= kConsumerRegs - 32 && kSoftCap == 0.0f && kInputBF16;
// wgmma N of O += P V: 128 or 64 columns; a head dim that is not a
// multiple of 64 in one product up to 128 (80, 96, 112: narrower chunks
// spill at 80 and 112), else in chunks of 32 or 16.
// (Another kernel compiles this code unused: 16 divides any head dim.)
constexpr int kOChunkN = !kWarpSpecialized      ? 16
                         : kHeadDimV % 128 == 0 ? 128
                         : kHeadDimV % 64 == 0  ? 64
                         : kHeadDimV <= 128     ? kHeadDimV
                         : kHeadDimV % 32 == 0  ? 32
                                                : 16;
constexpr int kOChunks = kHeadDimV / kOChunkN;
// A warpgroup whose rows see only the first half of their last tile's keys
// (d64's three consumers: 192 rows against 128-key tiles; a sequence's end)
// computes S and P V of that tile on that half alone: m64n64 products, half
// the P V steps. Three consumers on 128-key tiles only: there it gains
// (H200, d64 B8 S2048 335 -> 352 TFLOP/s with the skipped tiles below);
// kernels of two consumers ran 1-2.5% slower with it (d80, d96, d128)
// though their first warpgroup computed less, and 64-key tiles (m64n32) are
// never chosen for three consumers, so no device test would reach them.
constexpr bool kHalfTiles = kTileK == 128 && kConsumers == 3;
constexpr int kSHalfN = kHalfTiles ? kTileK / 2 : 64; // (64: a valid N where unused)
static_assert(!kHalfTiles || kSHalfN % 16 == 0, "a half tile is whole P V steps");
typedef sm90::Wgmma<Elem, kOChunkN> WgmmaO;

struct Barriers {
  u32 base;
  MLAGEN_DEVICE u32 q_full() const { return base; }
  MLAGEN_DEVICE u32 k_full(int stage) const { return base + 8 * (1 + stage); }
  MLAGEN_DEVICE u32 v_full(int stage) const { return base + 8 * (1 + kStages + stage); }
  MLAGEN_DEVICE u32 k_empty(int stage) const { return base + 8 * (1 + 2 * kStages + stage); }
  MLAGEN_DEVICE u32 v_empty(int stage) const { return base + 8 * (1 + 3 * kStages + stage); }
};

// Whether 16-byte chunk `chunk` (of 8) of slab `slab` holds columns of a
// kCols-wide row: all of them but in a partial last slab.
template <int kCols>
MLAGEN_DEVICE bool chunk_in_row(int slab, int chunk) {
  return slab < kCols / 64 || 8 * chunk < kCols % 64;
}

// cp.async of a kRows x kCols global tile into swizzled slabs at `dst`,
// zero-filling rows at or past rows_valid. Eight producer threads cover one
// 128-byte slab row; since 16 rows per pass keep r % 8, each thread's
// swizzled column is fixed.
template <int kRows, int kCols>
MLAGEN_DEVICE void load_tile(u32 dst, const u16 *src, long long src_stride, int rows_valid, int ptid) {
  static_assert(kRows % 16 == 0, "16 rows per pass");
  const int row = ptid / 8;
  const int chunk = ptid % 8;
  const u16 *const tile = src;
  dst += row * 128 + ((chunk ^ (row % 8)) * 16);
  src += row * src_stride + chunk * 8;
#pragma unroll
  for (int pass = 0; pass < kRows / 16; ++pass) {
    const bool valid = row + pass * 16 < rows_valid;
#pragma unroll
    for (int slab = 0; slab < ceil_div(kCols, 64); ++slab)
      if (chunk_in_row<kCols>(slab, chunk))
        nv::cp_async_16(dst + slab * kRows * 128 + pass * 16 * 128,
                        valid ? src + pass * 16 * src_stride + slab * 64 : tile, valid);
  }
}

// The same by kCopiers threads (a warp) in a rolled loop, for a copy that
// runs once per block beside the bulk copies: the producer has 24 registers.
template <int kRows, int kCols, int kCopiers>
MLAGEN_DEVICE void load_tile_rolled(u32 dst, const u16 *src, long long src_stride, int rows_valid, int ptid) {
  const int chunk = ptid % 8;
#pragma unroll 1
  for (int r = ptid / 8; r < kRows; r += kCopiers / 8) {
    const bool valid = r < rows_valid;
    const u16 *from = src + (valid ? r * src_stride : 0) + chunk * 8;
    const u32 to = dst + r * 128 + ((chunk ^ (r % 8)) * 16);
#pragma unroll
    for (int slab = 0; slab < ceil_div(kCols, 64); ++slab)
      if (chunk_in_row<kCols>(slab, chunk))
        nv::cp_async_16(to + slab * kRows * 128, from + slab * 64, valid);
  }
}

// K and V by bulk tensor copies when the host passes tensor maps: bf16
// only, since with fp16 (Q read from shared memory, P's rounding residues)
// ptxas spills a few bytes of the 24-register producer with them.
constexpr bool kBulkCopies = kInputBF16;

// The tensor maps of k and v (mlagen_prefill_params::k_map, v_map), or null.
struct TensorMaps {
  const void *k;
  const void *v;
};

// Bulk copies: warp 0 streams the K tiles and warp 1 the V tiles, each
// waiting only for its own buffers' release; lane 0 issues. K rows past the
// sequence are the next sequence's keys (or zeros): the consumers' mask
// replaces their scores with -inf. V rows there are multiplied by P = 0,
// and 0 x NaN is not 0, so a V tile that ends past the sequence (only ever
// the last) is copied by the warp with cp.async, which zero-fills them.
MLAGEN_DEVICE void produce_bulk(const Task &task, const TensorMaps &maps, u32 k_smem, u32 v_smem,
                                const Barriers &bars, int first_tile, int num_tiles, int warp, int lane) {
  const bool keys = warp == 0;
  const int bulk_tiles =
      keys || (first_tile + num_tiles) * kTileK <= task.seq.len_k ? num_tiles : num_tiles - 1;
  // The role's buffers and barriers as bases plus a stride per stage, so
  // that the loop fits the producer's 24 registers.
  const void *map = keys ? maps.k : maps.v;
  const u32 buffer = keys ? k_smem : v_smem;
  const u32 tile_bytes = keys ? kKBytes : kVBytes;
  const int slabs = keys ? kSlabsQK : kSlabsV; // past the head dim: zero-filled
  const u32 full = keys ? bars.k_full(0) : bars.v_full(0);
  const u32 empty = keys ? bars.k_empty(0) : bars.v_empty(0);
  if (lane == 0)
    sm90::prefetch_tensor_map(map);
  int row = task.k_row0 + first_tile * kTileK;
  for (int it = 0; it < bulk_tiles; ++it, row += kTileK) {
    const int stage = it % kStages;
    if (it >= kStages)
      sm90::mbarrier_wait(empty + 8 * stage, (it / kStages - 1) & 1);
    if (lane == 0) {
      sm90::mbarrier_arrive_expect_tx(full + 8 * stage, tile_bytes);
      for (int slab = 0; slab < slabs; ++slab)
        sm90::tma_load_3d(buffer + stage * tile_bytes + slab * kTileK * 128, map, 64 * slab, task.kv_head, row,
                          full + 8 * stage);
    }
  }
  if (bulk_tiles == num_tiles)
    return;
  const int it = num_tiles - 1;
  const int stage = it % kStages;
  if (it >= kStages)
    sm90::mbarrier_wait(bars.v_empty(stage), (it / kStages - 1) & 1);
  const int k0 = (first_tile + it) * kTileK;
  load_tile_rolled<kTileK, kHeadDimV, 32>(v_smem + stage * kVBytes, task.v + k0 * task.v_stride, task.v_stride,
                                          task.seq.len_k - k0, lane);
  sm90::cp_async_wait_all();
  __syncwarp();
  if (lane == 0)
    sm90::mbarrier_arrive(bars.v_full(stage));
}

// K and V tiles by cp.async from all producer threads.
MLAGEN_DEVICE void produce(const Task &task, u32 k_smem, u32 v_smem, const Barriers &bars, int first_tile,
                           int num_tiles, int ptid) {
  for (int it = 0; it < num_tiles; ++it) {
    const int stage = it % kStages;
    // Buffers are reused once both consumers are done with the tile kStages
    // back: K once its S is computed, V once its P V is (so the next K
    // streams in half an iteration earlier than with one release per tile).
    if (it >= kStages)
      sm90::mbarrier_wait(bars.k_empty(stage), (it / kStages - 1) & 1);
    const int k0 = (first_tile + it) * kTileK;
    load_tile<kTileK, kHeadDimQK>(k_smem + stage * kKBytes, task.k + k0 * task.k_stride, task.k_stride,
                                  task.seq.len_k - k0, ptid);
    sm90::cp_async_arrive(bars.k_full(stage));
    if (it >= kStages)
      sm90::mbarrier_wait(bars.v_empty(stage), (it / kStages - 1) & 1);
    load_tile<kTileK, kHeadDimV>(v_smem + stage * kVBytes, task.v + k0 * task.v_stride, task.v_stride,
                                 task.seq.len_k - k0, ptid);
    sm90::cp_async_arrive(bars.v_full(stage));
  }
}

// Row r of this thread (warp row group + 8 r) holds s[4 j + 2 r + {0, 1}],
// keys 8 j + 2 quad + {0, 1} of the tile, j < kS / 4. The helpers below
// take kS = kTileK / 2 accumulators, or kSHalfN / 2 for the first half of a
// tile's keys (kHalfTiles).

// Max and sum of one row's elements through 8 independent partial
// results: short dependency chains, where a running max / sum would take
// kRowElems dependent steps.
static_assert(kTileK >= 32, "kTileK is at least 32");
template <int kS>
MLAGEN_DEVICE float row_max(const float (&s)[kS], int r) {
  static_assert(kS >= 16, "8 partial maxima of a row's kS / 2 elements");
  constexpr int kRowElems = kS / 2;
  float t[8];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    t[k] = s[4 * (k / 2) + 2 * r + k % 2];
#pragma unroll
  for (int i = 8; i < kRowElems; ++i)
    t[i % 8] = fmaxf(t[i % 8], s[4 * (i / 2) + 2 * r + i % 2]);
  return fmaxf(fmaxf(fmaxf(t[0], t[1]), fmaxf(t[2], t[3])), fmaxf(fmaxf(t[4], t[5]), fmaxf(t[6], t[7])));
}
template <int kS>
MLAGEN_DEVICE float row_sum(const float (&s)[kS], int r) {
  static_assert(kS >= 16, "8 partial sums of a row's kS / 2 elements");
  constexpr int kRowElems = kS / 2;
  float t[8];
#pragma unroll
  for (int k = 0; k < 8; ++k)
    t[k] = s[4 * (k / 2) + 2 * r + k % 2];
#pragma unroll
  for (int i = 8; i < kRowElems; ++i)
    t[i % 8] += s[4 * (i / 2) + 2 * r + i % 2];
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

// Sets the invisible elements of a tile to -inf: key k0 + c is visible to
// row i iff key_begin(i) <= k0 + c < key_end(i); with c = 8 j + e % 2 +
// 2 quad the comparisons are against constants.
template <int kS>
MLAGEN_DEVICE void apply_mask(float (&s)[kS], const Sequence &seq, int row0, int k0, int quad) {
  int lo[2], hi[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    lo[r] = seq.key_begin(row0 + 8 * r) - k0 - 2 * quad;
    hi[r] = seq.key_end(row0 + 8 * r) - k0 - 2 * quad;
  }
#pragma unroll
  for (int i = 0; i < kS; ++i) {
    const int r = (i % 4) / 2;
    const int c = (i / 4) * 8 + i % 2;
    if (c < lo[r] || c >= hi[r])
      s[i] = kNegInf;
  }
}

// Adds the ALiBi bias to a tile: element i is key k0 + 2 quad + c of row
// row0 + 8 r, so its distance is a per-row base plus the constant c.
template <int kS>
MLAGEN_DEVICE void apply_alibi(float (&s)[kS], const Sequence &seq, const Logits &logits, int row0, int k0,
                               int quad) {
  int base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r)
    base[r] = k0 + 2 * quad - seq.diagonal(row0 + 8 * r);
#pragma unroll
  for (int i = 0; i < kS; ++i)
    s[i] = logits.biased(s[i], base[(i % 4) / 2] + (i / 4) * 8 + i % 2);
}

// Online softmax of one S tile held as wgmma accumulators: soft cap, ALiBi, mask
// (only tiles that need one, behind a real branch), the two row states of
// this thread, s -> unnormalised probabilities; returns the O rescale factors.
template <int kS>
MLAGEN_DEVICE void softmax(float (&s)[kS], RowState (&rows)[2], float (&alpha)[2], const Task &task,
                           const QueryRows &warp_rows, int row0, int k0, int quad) {
  const Sequence &seq = task.seq;
  if (kSoftCap > 0.0f) {
#pragma unroll
    for (int i = 0; i < kS; ++i)
      s[i] = task.logits.score(s[i]);
  }
  if (kAlibi)
    apply_alibi(s, seq, task.logits, row0, k0, quad);
  if (warp_rows.needs_mask(seq, k0))
    apply_mask(s, seq, row0, k0, quad);
  float base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float tile_max = row_max(s, r);
    tile_max = fmaxf(tile_max, shfl_xor(tile_max, 1));
    tile_max = fmaxf(tile_max, shfl_xor(tile_max, 2));
    alpha[r] = rows[r].update(tile_max * task.logits.unit, base[r]);
  }
#pragma unroll
  for (int i = 0; i < kS; ++i)
    s[i] = task.logits.exp2_shifted(s[i], base[(i % 4) / 2]);
#pragma unroll
  for (int r = 0; r < 2; ++r)
    rows[r].sum += row_sum(s, r);
}

// S = Q K^T of one tile (not waited for), over its first 2 kS keys (all of
// them, or half: kHalfTiles). Descriptors advance by adding the byte offset
// / 16 to their base (addresses stay below 256 KiB, so the 14-bit address
// field never carries).
template <int kS>
MLAGEN_DEVICE void issue_qk(float (&s)[kS], u64 q_desc, u64 k_desc) {
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks) {
    // Step ks: slab ks / 4, 32 bytes per 16 columns within the 128-byte row.
    const u64 a = q_desc + ((ks / 4) * kTileQ * 128 + (ks % 4) * 32) / 16;
    const u64 b = k_desc + ((ks / 4) * kTileK * 128 + (ks % 4) * 32) / 16;
    sm90::Wgmma<Elem, 2 * kS>::template ss<0>(s, a, b, ks > 0);
  }
}

// The same with Q from registers.
template <int kS>
MLAGEN_DEVICE void issue_qk(float (&s)[kS], const u32 (&q)[kQKSteps][4], u64 k_desc) {
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks)
    sm90::Wgmma<Elem, 2 * kS>::template rs<0>(s, q[ks], k_desc + ((ks / 4) * kTileK * 128 + (ks % 4) * 32) / 16,
                                              ks > 0);
}

// This warp's 16 rows of the swizzled Q tile as A fragments, k-step by
// k-step: ldmatrix lane l addresses row l % 8 + 8 (l / 8 % 2) at column
// 8 (l / 16) of the step.
MLAGEN_DEVICE void load_q_fragments(u32 (&q)[kQKSteps][4], u32 q_smem, int row0, int lane) {
  const int row = row0 + lane % 8 + 8 * (lane / 8 % 2);
#pragma unroll
  for (int ks = 0; ks < kQKSteps; ++ks) {
    const int col = ks * 16 + 8 * (lane / 16);
    nv::ldmatrix_x4(q[ks], q_smem + (col / 64) * kTileQ * 128 + row * 128 + (((col % 64) / 8) ^ (row % 8)) * 16);
  }
}

// O += P V of one tile (not waited for), over its first 16 kSteps keys.
template <int kSteps = kPVSteps>
MLAGEN_DEVICE void issue_pv(float (&o)[kOChunks][kOChunkN / 2], const u32 (&p)[kPVSteps][4], u64 v_desc) {
#pragma unroll
  for (int ps = 0; ps < kSteps; ++ps) {
#pragma unroll
    for (int c = 0; c < kOChunks; ++c) {
      // V is [key][column]: keys 16 ps.. start 16 rows of 128 bytes on;
      // chunk c starts at column c kOChunkN: slab c kOChunkN / 64 (slabs
      // are kTileK rows apart), byte 2 (c kOChunkN % 64) of its rows.
      const int col = c * kOChunkN;
      const u64 b = v_desc + ((col / 64) * kTileK * 128 + (col % 64) * 2 + ps * 16 * 128) / 16;
      WgmmaO::rs<1>(o[c], p[ps], b, 1);
    }
  }
}

// P = S (probabilities) as 16-bit A fragments: accumulator chunks 2 ps and
// 2 ps + 1 (keys 16 ps..) are exactly the A fragment of keys 16 ps..16 ps + 15.
template <int kS>
MLAGEN_DEVICE void pack_p(u32 (&p)[kPVSteps][4], const float (&s)[kS]) {
#pragma unroll
  for (int ps = 0; ps < kS / 8; ++ps)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      p[ps][j] = pack2<Elem>(s[8 * ps + 2 * j], s[8 * ps + 2 * j + 1]);
}

using sm90::fence_array;

// Turn-taking of the consumers' matrix products (kPingPong): a warpgroup
// waits for its turn (named barrier 1 + wg), issues, then hands the turn
// to the next in a ring. Every warpgroup takes the same number of turns
// (one per tile, plus one).
MLAGEN_DEVICE void turn_begin(int wg) {
  if (kPingPong)
    sm90::named_barrier_sync(1 + wg, 256);
}
MLAGEN_DEVICE void turn_end(int wg) {
  if (kPingPong)
    sm90::named_barrier_arrive(1 + (wg + 1) % kConsumers, 256);
}

// One consumer warpgroup: computes its 64 rows against the block's tiles
// [t_begin, t_end) and only releases the others.
//
// S of tile j and P V of tile j - 1 are issued together; the softmax of
// tile j runs while P V still does. P is rounded to 16 bits for P V, as
// FlashAttention and cuDNN round it, at every row. (Rows that see at most
// 128 keys used to multiply P's rounding residue too, in a loop of their
// own: half of this kernel's compile time, for error no larger than the
// peers'; bench/notes/prefill-sm90a.md.)
template <bool kHalfLast>
MLAGEN_DEVICE void consume(const Task &task, u32 q_smem, u32 k_smem, u32 v_smem, const Barriers &bars,
                           int first_tile, int num_tiles, int t_begin, int t_end, int wg, int warp_in_wg,
                           int lane) {
  const Sequence &seq = task.seq;
  const int group = lane / 4;
  const int quad = lane % 4;
  const int warp_q0 = task.q0 + wg * 64 + warp_in_wg * 16;
  const QueryRows warp_rows = {warp_q0, min_int(warp_q0 + 15, max_int(warp_q0, seq.len_q - 1))};
  const u64 q_desc = sm90::smem_desc_sw128(q_smem + wg * 64 * 128, 16);
  const u64 k_desc0 = sm90::smem_desc_sw128(k_smem, 16);
  const u64 v_desc0 = sm90::smem_desc_sw128(v_smem, kTileK * 128); // LBO: next 64 columns
  auto k_desc = [&](int it) { return k_desc0 + (it % kStages) * (kKBytes / 16); };
  auto v_desc = [&](int it) { return v_desc0 + (it % kStages) * (kVBytes / 16); };

  float o[kOChunks][kOChunkN / 2];
#pragma unroll
  for (int c = 0; c < kOChunks; ++c)
#pragma unroll
    for (int i = 0; i < kOChunkN / 2; ++i)
      o[c][i] = 0.0f;
  RowState rows[2];

  // One arrival per consumer warp and buffer use.
  auto release_k = [&](int it) {
    if (lane == 0)
      sm90::mbarrier_arrive(bars.k_empty(it % kStages));
  };
  auto release_v = [&](int it) {
    if (lane == 0)
      sm90::mbarrier_arrive(bars.v_empty(it % kStages));
  };
  // Callers follow with fence_proxy_async: cp.async wrote the tiles through
  // the generic proxy, wgmma reads them through the async proxy.
  auto wait_full = [&](u32 bar, int it) { sm90::mbarrier_wait(bar, (it / kStages) & 1); };
  auto rescale_o = [&](const float (&alpha)[2]) {
    // Once the row maxima settle, alpha is exactly 1 for the whole warp.
    if (all_lanes(alpha[0] == 1.0f && alpha[1] == 1.0f))
      return;
#pragma unroll
    for (int c = 0; c < kOChunks; ++c)
#pragma unroll
      for (int i = 0; i < kOChunkN / 2; ++i)
        o[c][i] *= alpha[(i % 4) / 2];
  };
  // A tile outside this warpgroup's rows' keys (masked for all of them) is
  // only released; with turn-taking its turn is passed on first, so that
  // every warpgroup takes num_tiles + 1 turns however few tiles it computes.
  auto skip_tile = [&](int it) {
    turn_begin(wg);
    turn_end(wg);
    wait_full(bars.k_full(it % kStages), it);
    wait_full(bars.v_full(it % kStages), it);
    release_k(it);
    release_v(it);
  };
  for (int it = 0; it < t_begin; ++it)
    skip_tile(it);
  if (t_begin < t_end) {
    float s[kTileK / 2];
    u32 p[kPVSteps][4];
    float alpha[2];
    sm90::mbarrier_wait(bars.q_full(), 0);
    constexpr bool kQRegs = kQInRegisters;
    u32 q_frag[kQRegs ? kQKSteps : 1][4];
    if (kQRegs) {
      load_q_fragments(reinterpret_cast<u32(&)[kQKSteps][4]>(q_frag), q_smem, wg * 64 + warp_in_wg * 16, lane);
    }
    // S of tile it into acc (not waited for): all of its keys into s, or
    // the first half into s_half (half_last: no row sees the rest).
    auto qk = [&](auto &acc, int it) {
      if (kQRegs)
        issue_qk(acc, reinterpret_cast<const u32(&)[kQKSteps][4]>(q_frag), k_desc(it));
      else
        issue_qk(acc, q_desc, k_desc(it));
    };
    wait_full(bars.k_full(t_begin % kStages), t_begin);
    sm90::fence_proxy_async();
    turn_begin(wg);
    sm90::wgmma_fence();
    qk(s, t_begin);
    sm90::wgmma_commit();
    turn_end(wg);
    sm90::wgmma_wait<0>();
    fence_array(s);
    release_k(t_begin);
    softmax(s, rows, alpha, task, warp_rows, warp_q0 + group, (first_tile + t_begin) * kTileK, quad);
    pack_p(p, s);
    // Common path: S of tile it (into acc, s or s_half) with P V of tile
    // it - 1, then tile it's softmax. A half tile's S has registers of its
    // own: written into half of s, it made ptxas serialise the products
    // (C7511).
    auto step = [&](auto &acc, int it) {
      sm90::wgmma_fence();
      qk(acc, it);
      sm90::wgmma_commit();
      issue_pv(o, p, v_desc(it - 1));
      sm90::wgmma_commit();
      turn_end(wg);
      sm90::wgmma_wait<1>(); // S of tile it; P V of tile it - 1 may still run
      fence_array(acc);
      release_k(it);
      softmax(acc, rows, alpha, task, warp_rows, warp_q0 + group, (first_tile + it) * kTileK, quad);
      sm90::wgmma_wait<0>();
      fence_array(o);
      fence_array(p);
      release_v(it - 1);
      rescale_o(alpha);
      pack_p(p, acc); // a half tile's P: only its first kSHalfN / 16 steps
    };
    auto wait_step = [&](int it) {
      wait_full(bars.k_full(it % kStages), it);
      wait_full(bars.v_full((it - 1) % kStages), it - 1);
      sm90::fence_proxy_async();
      turn_begin(wg);
    };
    // kHalfLast: the last tile's step is taken apart, below.
    for (int it = t_begin + 1; it < t_end - kHalfLast; ++it) {
      wait_step(it);
      step(s, it);
    }
    if (kHalfLast) {
      float s_half[kSHalfN / 2];
      wait_step(t_end - 1);
      step(s_half, t_end - 1);
    }
    const int last = t_end - 1;
    wait_full(bars.v_full(last % kStages), last);
    sm90::fence_proxy_async();
    turn_begin(wg);
    sm90::wgmma_fence();
    // A half tile's P covers its first kSHalfN keys (pack_p wrote p[0 ..
    // kSHalfN / 16); the rest of p is the previous tile's, not read).
    issue_pv<kHalfLast ? kSHalfN / 16 : kPVSteps>(o, p, v_desc(last));
    sm90::wgmma_commit();
    turn_end(wg);
    sm90::wgmma_wait<0>();
    fence_array(o);
    release_v(last);
  }
  for (int it = max_int(t_begin, t_end); it < num_tiles; ++it)
    skip_tile(it);
  if (t_begin >= t_end && num_tiles > 0) { // no tile of its own: the turn a last product would take
    turn_begin(wg);
    turn_end(wg);
  }
  if (kPingPong && wg == 0 && num_tiles > 0)
    sm90::named_barrier_sync(1, 256); // the turn the last warpgroup handed over
  // A warpgroup without tiles never waited for Q, yet stages into its Q rows
  // below: its last turn comes after the turn of the warpgroup holding the
  // block's last row, which has tiles and waited for Q first, so Q's copies
  // have landed by now.

  // o[c][4 j + e] = O[row group + 8 (e / 2)][c kOChunkN + 8 j + 2 quad + e % 2].
  // O goes out through this warpgroup's 64 rows of the Q tile, free once its
  // products are done (O fits: kSlabsV <= kSlabsQK), in Q's swizzle (the
  // 4-byte stores of a warp hit 32 banks), then as 16-byte row chunks. Stores
  // straight from the fragments wrote 16 bytes of each of eight rows a warp
  // instruction (B32 H16 S512 192/128: 248 TFLOP/s with them, 270 now, 301
  // with no output at all).
  const u32 o_smem = q_smem + wg * 64 * 128;
  const int wg_row0 = warp_in_wg * 16 + group; // this thread's rows within the warpgroup's 64
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = rows[r].sum;
    total += shfl_xor(total, 1);
    total += shfl_xor(total, 2);
    const int row = wg_row0 + 8 * r;
    const float scale = RowState::output_scale(total);
#pragma unroll
    for (int c = 0; c < kOChunks; ++c)
#pragma unroll
      for (int j = 0; j < kOChunkN / 8; ++j) {
        const int col = c * kOChunkN + j * 8; // + 2 quad
        nv::store_shared_u32(o_smem + (col / 64) * kTileQ * 128 + row * 128 + ((((col % 64) / 8) ^ (row % 8)) * 16) +
                                 4 * quad,
                             pack2<Elem>(o[c][4 * j + 2 * r] * scale, o[c][4 * j + 2 * r + 1] * scale));
      }
    const int query = warp_q0 + group + 8 * r;
    if (kReturnLSE && task.lse && quad == 0 && query < seq.len_q)
      task.lse[query] = rows[r].lse(total);
  }
  sm90::named_barrier_sync(kOutputBarrier + wg, 128);
  constexpr int kRowChunks = kHeadDimV / 8;
  const int rows_valid = min_int(64, seq.len_q - (task.q0 + wg * 64));
  const int thread_in_wg = warp_in_wg * 32 + lane;
#pragma unroll 4
  for (int at = thread_in_wg; at < 64 * kRowChunks; at += 128) {
    const int row = at / kRowChunks, chunk = at % kRowChunks;
    if (row < rows_valid)
      nv::copy_shared_to_global_16(task.out + (wg * 64 + row) * task.out_stride + chunk * 8,
                                   o_smem + (chunk / 8) * kTileQ * 128 + row * 128 + (((chunk % 8) ^ (row % 8)) * 16));
  }
}

MLAGEN_DEVICE void attend(const Task &task, const TensorMaps &maps, u16 *smem) {
  const Sequence &seq = task.seq;
  const u32 raw = nv::shared_address(smem);
  const u32 q_smem = (raw + 1023) & ~1023u;
  const u32 k_smem = q_smem + kQBytes;
  const u32 v_smem = k_smem + kStages * kKBytes;
  const Barriers bars = {v_smem + kStages * kVBytes};

  const int tid = thread_index();
  const int warp = tid / 32;
  const int lane = tid % 32;

  const int rows_q = min_int(kTileQ, seq.len_q - task.q0);
  const QueryRows block_rows = {task.q0, task.q0 + rows_q - 1};
  const int key_begin = block_rows.key_begin(seq);
  const int key_end = block_rows.key_end(seq);
  const int first_tile = key_begin / kTileK;
  const int num_tiles = key_end > key_begin ? ceil_div(key_end, kTileK) - first_tile : 0;

  const bool bulk = kBulkCopies && maps.k != nullptr;
  if (tid == 0) {
    sm90::mbarrier_init(bars.q_full(), 128);
    for (int s = 0; s < kStages; ++s) {
      sm90::mbarrier_init(bars.k_full(s), bulk ? 1 : 128);
      sm90::mbarrier_init(bars.v_full(s), bulk ? 1 : 128);
      sm90::mbarrier_init(bars.k_empty(s), 4 * kConsumers); // one arrival per consumer warp
      sm90::mbarrier_init(bars.v_empty(s), 4 * kConsumers);
    }
    sm90::mbarrier_init_fence();
  }
  block_barrier();

  if (warp < 4) {
    if (kConsumers >= 2)
      sm90::setmaxnreg_dec<kProducerRegs>();
    if (num_tiles == 0)
      return;
    load_tile<kTileQ, kHeadDimQK>(q_smem, task.q, task.q_stride, rows_q, tid);
    sm90::cp_async_arrive(bars.q_full());
    if (!bulk)
      produce(task, k_smem, v_smem, bars, first_tile, num_tiles, tid);
    else if (warp < 2)
      produce_bulk(task, maps, k_smem, v_smem, bars, first_tile, num_tiles, warp, lane);
    sm90::cp_async_wait_all(); // no copies outlive the thread
    return;
  }
  if (kConsumers >= 2)
    sm90::setmaxnreg_inc<kConsumerRegs>();
  const int wg = warp / 4 - 1;
  const int warp_in_wg = warp % 4;
  if (kPingPong && wg == kConsumers - 1 && num_tiles > 0)
    sm90::named_barrier_arrive(1, 256); // warpgroup 0 takes the first turn

  // This warpgroup's rows and the block tiles they see. One or three
  // consumers compute only those (three pass their turns on for the
  // others: on 192 rows against 128-key tiles a causal block's first
  // warpgroup skips a tile this way; H200, d64 B8 S2048 335 -> 346 TFLOP/s).
  // Two consumers walk every tile (rows past the sequence: masked work, the
  // same turns): computing only their own made those kernels 1-3% slower
  // (d80, d128, Llama, MLA at S512), though with 128 rows against 128-key
  // tiles it skipped nothing there.
  constexpr bool kEveryTile = kConsumers == 2;
  const int wg_q0 = task.q0 + wg * 64;
  const QueryRows wg_rows = {wg_q0, min_int(wg_q0 + 63, seq.len_q - 1)};
  int t_begin = 0, t_end = 0;
  if (wg_q0 < seq.len_q && wg_rows.key_end(seq) > wg_rows.key_begin(seq)) {
    t_begin = kEveryTile ? 0 : wg_rows.key_begin(seq) / kTileK - first_tile;
    t_end = kEveryTile ? num_tiles : ceil_div(wg_rows.key_end(seq), kTileK) - first_tile;
  } else if (kEveryTile) {
    t_end = num_tiles;
  }
  // Its rows see only the first half of their last tile (kHalfTiles). The
  // first tile's S is always whole, so a half tile is a loop step's: one
  // tile of its own is never half.
  const bool half_last = kHalfTiles && t_end - t_begin >= 2 &&
                         wg_rows.key_end(seq) - (first_tile + t_end - 1) * kTileK <= kTileK / 2;
  if (half_last)
    consume<true>(task, q_smem, k_smem, v_smem, bars, first_tile, num_tiles, t_begin, t_end, wg, warp_in_wg,
                  lane);
  else
    consume<false>(task, q_smem, k_smem, v_smem, bars, first_tile, num_tiles, t_begin, t_end, wg, warp_in_wg,
                   lane);
}
