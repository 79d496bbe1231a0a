//===- SelectTiling.cpp - tile sizes, warps and stages per target ---------===//
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
  }
};

} // namespace
