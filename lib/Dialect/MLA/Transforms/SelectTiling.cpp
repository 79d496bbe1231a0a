//===- SelectTiling.cpp - tile sizes, warps and stages per target ---------===//
#include "DecodeSupport.h"
#include "TargetTable.h"

#include "mlagen/Dialect/MLA/Transforms/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/MathExtras.h"

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
  // The head dims are the K of Q.K^T and the N of P.V.
  if (op.getQkHeadDim() % target.mma.k != 0 ||
      op.getVHeadDim() % target.mma.n != 0)
    return op.emitOpError()
           << "'qk_head_dim' (" << op.getQkHeadDim()
           << ") must be a multiple of " << stringifyArch(*arch)
           << "'s MMA depth (" << target.mma.k << ") and 'v_head_dim' ("
           << op.getVHeadDim() << ") of its width (" << target.mma.n << ")";

  std::optional<int32_t> pinnedTileQ = op.getTileQ();
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

  MLIRContext *ctx = op.getContext();
  op.setArchAttr(ArchAttr::get(ctx, *arch));
  op.setTilingAttr(TilingAttr::get(ctx, tileQ, tileK, tileQ / target.mma.m,
                                   target.waveSize, stages, target.mma.m,
                                   target.mma.n, target.mma.k));
  return success();
}

/// The q heads the decode kernel computes on `target`: q_heads rounded up
/// to the target's quantum by repeating whole heads, so a count must
/// divide the quantum or be a multiple of it.
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

  // A block owns whole 16-row MMA tiles, a power of two of them.
  const int32_t rowTiles = (op.getQLen() * *heads + 15) / 16;
  int32_t headsPerBlock =
      std::min<int32_t>(16 * static_cast<int32_t>(llvm::PowerOf2Ceil(rowTiles)),
                        target.decode.maxHeadsPerBlock);
  std::optional<int32_t> pinnedTileK = op.getTileK();
  int32_t tileK = pinnedTileK.value_or(target.decode.tileK);
  int32_t stages = target.decode.stages;
  MLIRContext *ctx = op.getContext();
  auto tiling = [&] {
    return DecodeTilingAttr::get(ctx, *heads, headsPerBlock, tileK,
                                 target.decode.warps, target.waveSize, stages);
  };
  auto sharedBytes = [&] { return getDecodeSharedBytes(op, tiling(), target); };
  auto fits = [&] { return sharedBytes() <= target.sharedBytesLimit; };
  // As for prefill: pipelining first, then keys per step, then rows.
  while (!fits() && stages > 1)
    --stages;
  const int32_t minTileK = std::max(kMinTile, target.mma.k);
  while (!fits() && !pinnedTileK && tileK > minTileK)
    tileK /= 2;
  while (!fits() && headsPerBlock > kMinTile)
    headsPerBlock /= 2;
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
  }
};

} // namespace
