//===- SelectTiling.cpp - tile sizes, warps and stages per target ---------===//
#include "DecodeSupport.h"
#include "TargetTable.h"

#include "mlagen/Dialect/MLA/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>

namespace mlagen::mla {
#define GEN_PASS_DEF_MLASELECTTILINGPASS
#include "mlagen/Dialect/MLA/Transforms/Passes.h.inc"
} // namespace mlagen::mla

using namespace mlir;
using namespace mlagen::mla;

namespace {

/// The smallest tile_q and tile_k tried: the template's 16-row blocks.
constexpr int32_t kMinTile = 16;

LogicalResult selectTiling(PrefillOp op, std::optional<Arch> defaultArch) {
  if (op.getTilingAttr())
    return success();
  std::optional<Arch> arch = op.getArch() ? op.getArch() : defaultArch;
  if (!arch)
    return op.emitOpError() << "has no 'arch': name one on the variant or run "
                               "mla-select-tiling{arch=...}";
  const TargetInfo &target = getTargetInfo(*arch);
  // Head dims, multiples of 16 (the verifier), suit every target: the
  // template runs a 16-column tail of a 32-deep MFMA 16 deep.

  std::optional<int32_t> pinnedTileQ = op.getTileQ();
  MLIRContext *ctx = op.getContext();
  // sm_90a: the warp-specialised wgmma kernel where its rules hold (head
  // dims of at least one 64-element swizzle slab, the last one possibly
  // partial, v in no more slabs than qk; O in registers, two K/V stages,
  // one to three consumer warpgroups): tile_k 128, else 80 or 64 to fit
  // (d256: 80, as FlashAttention-3, for the wider S products).
  // A v head dim past 128 that is not a multiple of 32 (144, 176, ...)
  // would run P.V in 16-column products, which spill.
  const int32_t vDim = op.getVHeadDim();
  // Head dim 64 with a soft cap and a window spills in two consumer
  // warpgroups' 240 registers (ptxas, CUDA 13); one consumer has 255.
  const bool cappedNarrow = op.getSoftCapValue() > 0.0f &&
                            op.getQkHeadDim() <= 64 && op.getWindowAttr();
  // Head dim 64 otherwise: three consumers of 160 registers (192 rows),
  // whose products hide more of each other's softmax, which at this
  // width costs as much as the products (FlashAttention-3 does the same;
  // H200: 0.86x -> 0.95x cuDNN at B4 S4096). A window spills there, and
  // so does any wider head (d256: 1.9 KB), so only these take a pinned
  // tile_q of 192. (fp16 spilled there until its rows that see few keys
  // stopped multiplying P's rounding residue, fortieth stop.)
  const bool narrow = op.getQkHeadDim() == 64 && vDim == 64 &&
                      op.getSoftCapValue() == 0.0f && !op.getWindowAttr() &&
                      (op.getQType() == DType::BF16 ||
                       op.getQType() == DType::F16);
  if (*arch == Arch::SM90A && op.fitsWarpgroupKernel() &&
      (vDim <= 128 || vDim % 32 == 0) &&
      (!pinnedTileQ || *pinnedTileQ == 64 || *pinnedTileQ == 128 ||
       (*pinnedTileQ == 192 && narrow))) {
    const int32_t wgTileQ =
        pinnedTileQ.value_or(cappedNarrow ? 64 : narrow ? 192 : 128);
    for (int32_t wgTileK : {128, 80, 64}) {
      if (op.getSharedBytes(wgTileQ, wgTileK, 2, /*warpgroupKernel=*/true) >
          target.sharedBytesLimit)
        continue;
      op.setArchAttr(ArchAttr::get(ctx, *arch));
      op.setTilingAttr(TilingAttr::get(
          ctx, wgTileQ, wgTileK, 4 * (wgTileQ / 64 + 1), target.waveSize, 2,
          kWarpgroupMMA.m, kWarpgroupMMA.n, kWarpgroupMMA.k));
      return success();
    }
  }

  int32_t tileQ = pinnedTileQ.value_or(target.tileQ);
  int32_t tileK = target.tileK, stages = target.stages;
  auto sharedBytes = [&] { return op.getSharedBytes(tileQ, tileK, stages); };
  auto fits = [&] { return sharedBytes() <= target.sharedBytesLimit; };
  // Give up the cheapest thing first: K/V pipelining, then keys per step,
  // then query rows per block (more blocks, more K/V reloads).
  while (!fits() && stages > 1)
    --stages;
  // tile_k is the N of Q.K^T and the K of P.V.
  int32_t minTileK = std::max({kMinTile, target.mma.n, target.mma.k});
  while (!fits() && tileK > minTileK)
    tileK /= 2;
  while (!fits() && !pinnedTileQ && tileQ > kMinTile)
    tileQ /= 2;
  if (!fits())
    return op.emitOpError()
           << "no tiling fits " << stringifyArch(*arch) << "'s "
           << target.sharedBytesLimit
           << " bytes of shared memory: the smallest, tile_q = " << tileQ
           << (pinnedTileQ ? " (pinned)" : "") << ", tile_k = " << tileK
           << ", stages = " << stages << ", needs " << sharedBytes();

  op.setArchAttr(ArchAttr::get(ctx, *arch));
  op.setTilingAttr(TilingAttr::get(ctx, tileQ, tileK, tileQ / target.mma.m,
                                   target.waveSize, stages, target.mma.m,
                                   target.mma.n, target.mma.k));
  return success();
}

/// The heads per token of the kernel's row numbering on `target`
/// (kNumHeads): q_heads, or on AMD q_heads padded to the quantum, which
/// the issue allows only where the quantum is a multiple of the count.
/// Padded heads read zero q and write nothing (kNumQHeads = q_heads).
FailureOr<int32_t> padHeads(DecodeOp op, const TargetInfo &target) {
  const int32_t heads = op.getQHeads(), quantum = target.decode.headQuantum;
  if (heads % quantum == 0)
    return heads;
  if (quantum % heads == 0)
    return quantum;
  return op.emitOpError() << "'q_heads' (" << heads << ") cannot be padded on "
                          << stringifyArch(target.arch)
                          << ": decode there pads q heads to " << quantum
                          << ", so the count must divide " << quantum
                          << " or be a multiple of it";
}

/// q rows a decode block owns, by the kernel owner's rule: 16 if a
/// request's rows (q_len x heads) fit in 16, 32 if in 32, else 64; capped
/// by the target.
int32_t selectHeadsPerBlock(int32_t rows, const TargetInfo &target) {
  const int32_t headsPerBlock = rows <= 16 ? 16 : rows <= 32 ? 32 : 64;
  return std::min(headsPerBlock, target.decode.maxHeadsPerBlock);
}

LogicalResult selectDecodeTiling(DecodeOp op, std::optional<Arch> defaultArch) {
  if (op.getTilingAttr())
    return success();
  std::optional<Arch> arch = op.getArch() ? op.getArch() : defaultArch;
  if (!arch)
    return op.emitOpError() << "has no 'arch': name one on the variant or run "
                               "mla-select-tiling{arch=...}";
  const TargetInfo &target = getTargetInfo(*arch);
  FailureOr<int32_t> heads = padHeads(op, target);
  if (failed(heads))
    return failure();

  std::optional<int32_t> pinnedTileK = op.getTileK();
  // tile_k stays a multiple of 16 and of the MMA depth (32 on gfx950).
  const int32_t tileKStep = std::max(kMinTile, target.mma.k);
  int32_t headsPerBlock = selectHeadsPerBlock(op.getQLen() * *heads, target);
  // A pinned tile_q may only shrink the block: more blocks a request, each
  // reading every key, for batches too small to fill the GPU.
  const std::optional<int32_t> pinnedTileQ = op.getTileQ();
  if (pinnedTileQ) {
    if (*pinnedTileQ > headsPerBlock)
      return op.emitOpError()
             << "'tile_q' (" << *pinnedTileQ << ") exceeds the "
             << headsPerBlock << " q rows a block takes here (q_len x "
             << *heads << " heads, at most " << target.decode.maxHeadsPerBlock
             << " on " << stringifyArch(*arch) << ")";
    headsPerBlock = *pinnedTileQ;
  }
  int32_t tileK = 0, warps = 0, stages = 0;
  MLIRContext *ctx = op.getContext();
  auto tiling = [&] {
    return DecodeTilingAttr::get(ctx, *heads, headsPerBlock, tileK, warps,
                                 target.waveSize, stages);
  };
  auto sharedBytes = [&] { return getDecodeSharedBytes(op, tiling(), target); };
  auto fits = [&] { return sharedBytes() <= target.sharedBytesLimit; };
  // sm_90a: the warp-specialised wgmma kernel (templates/kernels/
  // mla_decode.hip, warpgroup_mma), selected by 64-key tiles, two stages
  // and a producer warpgroup beside one consumer warpgroup (16 or 32 rows:
  // 8 warps) or two (12 warps: 64 rows of a 16-bit cache, or an fp8 cache
  // multiplied as e4m3, whose consumers take tiles in turn; otherwise the
  // producer widens an fp8 cache to fp16, through registers at 16 or 32
  // rows and in place in each stage half at 64). An fp8 cache at 64 rows
  // takes the two-consumer kernel with bf16 q and pages of 64 keys, whose
  // raw halves come by TMA (H200 B128 H128: 423 us, 561 in 32-row blocks
  // widened through registers), and other pages 32-row blocks; fp8 q
  // multiplies e4m3 at 64 rows too, two consumers in FlashMLA's seesaw.
  const bool fp8Cache = op.getKvType() == DType::F8E4M3;
  if (*arch == Arch::SM90A && pinnedTileK.value_or(64) == 64) {
    if (fp8Cache && headsPerBlock == 64 && op.getQType() != DType::F8E4M3 &&
        op.getPageSize() != 64) {
      if (pinnedTileQ)
        return op.emitOpError()
               << "'tile_q' 64 with bf16 q on an fp8 cache needs pages of 64 "
                  "keys on sm_90a; 32 or 16 q rows a block serve the rest";
      headsPerBlock = 32;
    }
    tileK = 64;
    // An fp8 cache read with fp8 q, or with bf16 q at 16 rows (split into
    // e4m3 hi + lo), is multiplied as e4m3 in tiles of 40 KB (not 72 KB of
    // fp16): three stages (H200, fp8 q B64 H16: 60.4 us, 62.0 with four,
    // 65.5 with five) and two consumers taking tiles in turn (12 warps;
    // H200, fp8 q B128 H16 89.0 us against 96.1 with one, B128 H128 364
    // against 425; bf16 q B128 H16 92 against 123 widened). bf16 q at 32
    // rows stays widened: its hi and lo products share accumulators there
    // (registers), and rows of large logits lost too much (H200, q rows
    // up to 2^3: output error 4.3e-2).
    // fp8 q at 64 rows: the seesaw (consume_seesaw_fp8) in four stages,
    // which its fp32 staging of O at the end needs.
    const bool e4m3 = fp8Cache && (op.getQType() == DType::F8E4M3 ||
                                   headsPerBlock == 16);
    warps = headsPerBlock == 64 || e4m3 ? 12 : 8;
    stages = e4m3 ? (headsPerBlock == 64 ? 4 : 3) : 2;
    if (fits()) {
      op.setArchAttr(ArchAttr::get(ctx, *arch));
      op.setTilingAttr(tiling());
      return success();
    }
  }
  // From the defaults for this many rows, give up keys per step first
  // (NVIDIA keeps its two stages: one exposes the load latency), then
  // stages, then rows per block (more blocks, each reading every key) with
  // the defaults of the smaller block.
  for (;; headsPerBlock /= 2) {
    const DecodeTiles &tiles = target.decode.tilesFor(headsPerBlock);
    tileK = pinnedTileK.value_or(tiles.tileK);
    warps = tiles.warps;
    stages = tiles.stages;
    // An fp8 cache streams through registers on NVIDIA too (loads of the
    // next tile in flight during this one's math), so one bf16 tile
    // suffices: 16-row blocks then fit twice on an SM.
    if (fp8Cache && !isCDNA(*arch))
      stages = 1;
    while (!fits() && !pinnedTileK && tileK > tileKStep)
      tileK -= tileKStep;
    while (!fits() && stages > 1)
      --stages;
    if (fits() || headsPerBlock <= kMinTile || pinnedTileQ)
      break;
  }
  if (!fits())
    return op.emitOpError()
           << "no decode tiling fits " << stringifyArch(*arch) << "'s "
           << target.sharedBytesLimit
           << " bytes of shared memory: the smallest, heads_per_block = "
           << headsPerBlock << ", tile_k = " << tileK
           << (pinnedTileK ? " (pinned)" : "") << ", stages = " << stages
           << ", needs " << sharedBytes();

  op.setArchAttr(ArchAttr::get(ctx, *arch));
  op.setTilingAttr(tiling());
  return success();
}

struct SelectTilingPass
    : mlagen::mla::impl::MLASelectTilingPassBase<SelectTilingPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Arch> defaultArch;
    if (!arch.empty() && !(defaultArch = symbolizeArch(arch))) {
      InFlightDiagnostic diag = module.emitError()
                                << "mla-select-tiling: unknown arch '" << arch
                                << "', expected one of ";
      llvm::interleaveComma(
          llvm::seq_inclusive<uint32_t>(0, getMaxEnumValForArch()), diag,
          [&](uint32_t value) {
            diag << stringifyArch(*symbolizeArch(value));
          });
      return signalPassFailure();
    }
    for (PrefillOp op : module.getOps<PrefillOp>())
      if (failed(selectTiling(op, defaultArch)))
        signalPassFailure();
    for (DecodeOp op : module.getOps<DecodeOp>())
      if (failed(selectDecodeTiling(op, defaultArch)))
        signalPassFailure();
    // Elementwise ops have no tiling; they only need their target.
    auto setArch = [&](auto op) {
      if (op.getArch())
        return;
      if (!defaultArch) {
        op.emitOpError() << "has no 'arch': name one on the variant or run "
                            "mla-select-tiling{arch=...}";
        signalPassFailure();
        return;
      }
      op.setArchAttr(ArchAttr::get(op.getContext(), *defaultArch));
    };
    for (ExpandPageIndicesOp op : module.getOps<ExpandPageIndicesOp>())
      setArch(op);
    for (KVCacheWriteOp op : module.getOps<KVCacheWriteOp>())
      setArch(op);
    for (ReshapeAndCacheOp op : module.getOps<ReshapeAndCacheOp>())
      setArch(op);
    for (GatherCacheOp op : module.getOps<GatherCacheOp>())
      setArch(op);
    // Paged decode's tiling follows from its shape (PagedDecodeOp::getTileK).
    for (PagedDecodeOp op : module.getOps<PagedDecodeOp>())
      setArch(op);
    for (MergeAttnStatesOp op : module.getOps<MergeAttnStatesOp>()) {
      if (op.getArch())
        continue;
      if (!defaultArch) {
        op.emitOpError() << "has no 'arch': name one on the variant or run "
                            "mla-select-tiling{arch=...}";
        signalPassFailure();
        continue;
      }
      op.setArchAttr(ArchAttr::get(op.getContext(), *defaultArch));
    }
  }
};

} // namespace
