using sm90::u64;

constexpr int kRowsN = kHeadsPerBlock;
// fp8 operands on 12 warps: two consume_fp8 consumers over alternate tiles
// (consumer c takes tiles c, c + 2, ...; its own P slab, row floats and
// named barrier), merged by their row maxima at the end: one consumer's
// products then run under the other's softmax.
constexpr bool kPairedTiles = kRowsN <= 32 && kNumWarps == 12;
constexpr int kConsumers = kRowsN == 64 || kPairedTiles ? 2 : 1;
constexpr int kConsumerThreads = 128 * kConsumers;
constexpr int kSlabs = kHeadDimQK / 64;      // 9 slabs of 64 columns; V is the first 8
constexpr int kVSlabs = kHeadDimV / 64;
constexpr int kSlabBytes = kTileK * 128;     // [64 keys][128 bytes]
// fp8 q with an fp8 cache (consume_fp8): the tensor cores multiply e4m3 as
// it is stored (wgmma k32), so Q and the tiles land raw, a slab holding 128
// columns (576 = 4.5 slabs, the last half used); P goes as e4m3 too.
// bf16 q on an fp8 cache, 16 rows on 12 warps (kSplitQuery), takes the same
// kernel: the consumers split each q row, scaled by a power of two, into
// e4m3 `hi` plus the e4m3 of its rounding residue `lo` (about 8 significant
// bits together, as bf16 has), stack Q_lo's rows under Q_hi's in each slab
// so that one N = 32 product a k-step gives both (K read once), and undo
// the row's scale on S^T. (Otherwise the producer widens the tiles to fp16:
// `produce_fp8`. At 32 rows hi and lo would share S^T's accumulators, which
// lost too much where logits are large: bench/notes/decode-fp8.md.) 64-row
// blocks of bf16 q (two consumers, Q as M) multiply fp16: the producer
// widens the tiles in place (`produce_fp8_halves`).
constexpr bool kFP8Operands = kCacheFP8 && (kRowsN != 64 || kQueryFP8) && (kQueryFP8 || kNumWarps == 12);
// fp8 q at 64 rows (consume_seesaw_fp8): two consumers, tile t's S (Q as M)
// and P computed by consumer t % 2 and added by both, each to its half of
// O's columns (FlashMLA's seesaw on e4m3 operands).
constexpr bool kSeesawFP8 = kFP8Operands && kRowsN == 64;
constexpr bool kSplitQuery = kFP8Operands && !kQueryFP8;
static_assert(!kSplitQuery || kRowsN == 16, "bf16 q is split into e4m3 at 16 rows");
constexpr int kQSlabRows = kSplitQuery ? 2 * kRowsN : kRowsN; // split q: hi rows, then lo rows
constexpr int kQSlabBytes = kQSlabRows * 128;                   // [rows][128 bytes]
static_assert(!kPairedTiles || kFP8Operands, "paired consumers multiply fp8 operands");
constexpr int kStageSlabs = kFP8Operands ? ceil_div(kHeadDimQK, 128) : kSlabs;
constexpr int kStageBytes = kStageSlabs * kSlabBytes;
constexpr int kQBytes = kStageSlabs * kQSlabBytes;
constexpr int kPBytes = kRowsN * 128; // [rows][64 keys]
constexpr int kPSlabs = kPairedTiles || kSeesawFP8 ? 2 : 1; // paired: a consumer's own tiles; seesaw: tile % 2
constexpr int kOutStride = kHeadDimV + 4; // fp32 staging of O, conflict-free writes
constexpr int kPackedWords = kHeadDimV / 2 + 4; // 16-bit staging of O (words), conflict-free likewise
constexpr int kStagedLse = kRowsN * kOutStride; // a grid pair's row LSEs, after its staged fp32 rows
// 64 rows (consume_rows) release a stage in two halves: slabs 0..3 (V's
// columns 0..255, consumer 0's) and 4..8 (V's columns 256..511 and K's
// last 64).
constexpr bool kSplitStages = kRowsN == 64 && !kFP8Operands;
// q_full, then per stage its full barriers (one per slab for split stages,
// so that S starts on the first slabs while the rest stream in) and its
// empty barriers (one per half for split stages).
constexpr int kFullPerStage = kSplitStages ? kSlabs : 1;
constexpr int kEmptyPerStage = kSplitStages ? 2 : 1;
constexpr int kNumBarriers = 1 + (kFullPerStage + kEmptyPerStage) * kStages;
// Six floats a row: one consumer's per-warp row maxima (at the end, row
// sums), row maxima and row totals (paired consumers: each its own);
// consume_rows's maxima, rescale factors and sums.
// kSplitQuery: then each q row's unscale (2^-e of its split).
constexpr int kConsumerRowFloats = 6 * kRowsN;
constexpr int kRowFloats = kConsumerRowFloats * kPSlabs + (kSplitQuery ? kRowsN : 0);
// 1024 bytes of alignment slack (the dynamic shared base is only 16-byte
// aligned), Q, the stages, P, row floats, barriers. DecodeSupport.cpp's
// getDecodeSharedBytes has the same sum.
// Merging in the cluster (kClusterParts 2; DECODE_CONTRACT.md): both blocks
// of a request's pair stage their normalised O and row LSEs (a part) in
// their stage buffers; each copies the half of its part that the other
// writes into the other's receive area, a region of its own so that the
// copy need not wait for the other's products, in st.async stores that
// count their bytes on the other's merge_recv.
constexpr int kPartBytes = kRowsN * kOutStride * 4 + kRowsN * 4;
static_assert(kClusterParts == 1 || (kClusterParts == 2 && kWarpgroupDecode && kRowsN == 16 && !kSplitStages &&
                                     (kFP8Operands || !kCacheFP8)),
              "cluster merging: pairs, on the 16-row wgmma kernels whose tiles bypass L1");
static_assert(kPartBytes <= kStages * kStageBytes, "a part is staged in the stage buffers");
constexpr int kMergeBytes = kClusterParts > 1 ? kPartBytes + 8 : 0; // receive area, merge_recv
constexpr u32 kReceivedBytes = (kRowsN * kHeadDimV / 2 + kRowsN) * 4; // half the partner's rows, its LSEs
static_assert(kReceivedBytes <= kPartBytes, "the partner's half lands in the receive area");
constexpr int kSharedBytesUsed =
    1024 + kQBytes + kStages * kStageBytes + kPSlabs * kPBytes + 4 * kRowFloats + 8 * kNumBarriers + kMergeBytes;
static_assert(!kWarpgroupDecode || kSharedBytesUsed <= kSharedBytes, "tiles exceed kSharedBytes");
static_assert(!kWarpgroupDecode || kRowsN * kOutStride * 4 <= kStages * kStageBytes,
              "O staging fits the stage buffers");
// merge_staged_pair's: the rows, their LSEs, a state word (and padding) and
// the merge's weights and scales.
static_assert(!kWarpgroupDecode || (kStagedLse + kRowsN + 4 + 3 * kRowsN) * 4 <= kStages * kStageBytes,
              "a pair's staged rows and merge state fit the stage buffers");
static_assert(kHeadDimQK % 64 == 0 && kHeadDimV % 64 == 0, "whole 64-column slabs");
typedef sm90::Wgmma<MmaElem, kRowsN> WgmmaS;
typedef sm90::Wgmma<MmaElem, kRowsN> WgmmaO;

// Named barriers (0 is the block's): 1 for one consumer's warps; with 64
// rows, kBarOut (both consumers' products done, row sums written) and the
// hand-overs of consume_rows.
// Paired consumers: 1 + c for consumer c's warps, kBarPair (both
// consumers' row maxima and totals published) and kBarHanded (consumer 1's
// share of O staged).
// kBarQuery: both consumers' split of q (kSplitQuery) stored.
enum {
  kBarPair = 3,
  kBarHanded = 4,
  kBarOut = 6,
  kBarScale0 = 7,
  kBarScale1 = 8,
  kBarPa = 9,
  kBarPb = 10,
  kBarQuery = 11,
};

struct Layout {
  u32 q, kv, p;
  float *red;   // one consumer: [warp][kRowsN] row maxima per tile, row sums at the end,
                // then [kRowsN] row maxima (paired) and totals; paired consumers: one such
                // block of kConsumerRowFloats each; consume_rows: its row maxima, rescale
                // factors and row sums
  float *total; // [kRowsN]: row sums at the end (`consume`, consume_fp8's consumer 0)
  float *q_unscale; // [kRowsN] (kSplitQuery): what undoes each q row's scale on S^T
  u32 bars;
  MLAGEN_DEVICE u32 q_full() const { return bars; }
  MLAGEN_DEVICE u32 full(int stage, int slab = 0) const { return bars + 8 * (1 + stage * kFullPerStage + slab); }
  MLAGEN_DEVICE u32 empty(int stage, int half = 0) const {
    return bars + 8 * (1 + kStages * kFullPerStage + stage * kEmptyPerStage + half);
  }
  MLAGEN_DEVICE u32 merge_recv() const { return bars + 8 * kNumBarriers; }
  MLAGEN_DEVICE u32 received() const { return bars - kPartBytes; } // the partner's part
  // A merge pair's row LSEs, in the place of warp 0's row sums (read by
  // the same threads just before).
  MLAGEN_DEVICE float *part_lse() const { return red; }
  MLAGEN_DEVICE u32 stage(int it) const { return kv + (it % kStages) * kStageBytes; }
};

MLAGEN_DEVICE void store_shared_u16(u32 addr, u32 v) {
  asm volatile("st.shared.u16 [%0], %1;" ::"r"(addr), "h"((unsigned short)v) : "memory");
}
MLAGEN_DEVICE void store_shared_u32x2(u32 addr, u32 x, u32 y) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(addr), "r"(x), "r"(y) : "memory");
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled slab.
MLAGEN_DEVICE u32 swizzled(int row, int chunk) { return row * 128 + ((chunk ^ (row % 8)) * 16); }

// The half of tile it's stage freed first: an even tile's owner (consumer
// 0) frees slabs 0..3 right after its own product, while consumer 1 reads
// slabs 4..8 last; an odd tile's are freed the other way round.
MLAGEN_DEVICE int first_half(int it) { return kSplitStages ? it % 2 : 0; }
