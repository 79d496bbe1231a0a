//===- PrepareEmission.cpp - everything the HIP emitter prints ------------===//
#include "DecodeSupport.h"
#include "PrefillSupport.h"
#include "TargetTable.h"

#include "mlagen/Dialect/MLA/Transforms/Passes.h"

namespace mlagen::mla {
#define GEN_PASS_DEF_MLAPREPAREEMISSIONPASS
#include "mlagen/Dialect/MLA/Transforms/Passes.h.inc"
} // namespace mlagen::mla

using namespace mlir;
using namespace mlagen::mla;

namespace {

/// The entry point templates/kernels/prefill.hip defines (CONTRACT.md).
constexpr llvm::StringLiteral kPrefillEntry = "mlagen_prefill";
/// The kernel's grid.y is one block per query head: CUDA's limit on y.
constexpr int32_t kMaxGridY = 65535;

LogicalResult prepareForEmission(PrefillOp op) {
  if (failed(checkPrefillSupported(op)))
    return failure();
  if (op.getQHeads() > kMaxGridY)
    return op.emitOpError()
           << "'q_heads' (" << op.getQHeads() << ") exceeds the " << kMaxGridY
           << " blocks a grid's y dimension can launch";
  TilingAttr tiling = op.getTilingAttr();
  if (!tiling)
    return op.emitOpError()
           << "has no 'tiling': run mla-select-tiling before emission";

  // The verifier guarantees an arch wherever there is a tiling. A tiling
  // written by hand is checked against the target like a chosen one.
  Arch arch = *op.getArch();
  const TargetInfo &target = getTargetInfo(arch);
  if (tiling.getWaveSize() != target.waveSize)
    return op.emitOpError()
           << "'tiling' wave_size (" << tiling.getWaveSize() << ") is not "
           << stringifyArch(arch) << "'s (" << target.waveSize << ")";
  MMAShape mma{tiling.getMmaM(), tiling.getMmaN(), tiling.getMmaK()};
  if (mma != target.mma && !(arch == Arch::SM90A && mma == kWarpgroupMMA))
    return op.emitOpError()
           << "'tiling' MMA shape " << mma.m << "x" << mma.n << "x" << mma.k
           << " is not " << stringifyArch(arch) << "'s (" << target.mma.m << "x"
           << target.mma.n << "x" << target.mma.k << ")";
  int64_t sharedBytes = op.getSharedBytes(tiling);
  if (sharedBytes > target.sharedBytesLimit)
    return op.emitOpError()
           << "'tiling' needs " << sharedBytes << " bytes of shared memory, "
           << stringifyArch(arch) << " has " << target.sharedBytesLimit;

  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kPrefillEntry,
                                   tiling.getWarps() * tiling.getWaveSize(),
                                   sharedBytes));
  return success();
}

LogicalResult prepareForEmission(DecodeOp op) {
  if (failed(checkDecodeSupported(op)))
    return failure();
  DecodeTilingAttr tiling = op.getTilingAttr();
  if (!tiling)
    return op.emitOpError()
           << "has no 'tiling': run mla-select-tiling before emission";
  // The verifier guarantees an arch wherever there is a tiling; a tiling
  // written by hand is held to the kernel's rules like a chosen one.
  const TargetInfo &target = getTargetInfo(*op.getArch());
  if (failed(checkDecodeTiling(op, tiling, target)))
    return failure();

  MLIRContext *ctx = op.getContext();
  const int32_t threads = tiling.getWarps() * tiling.getWaveSize();
  op.setLaunchAttr(LaunchAttr::get(ctx, kDecodeEntry, threads,
                                   getDecodeSharedBytes(op, tiling, target)));
  // The reduce runs the same block size, a row per 128 threads, and
  // needs no shared memory.
  op.setReduceLaunchAttr(LaunchAttr::get(ctx, kDecodeReduceEntry, threads, 0));
  return success();
}

/// The entry point templates/kernels/merge_attn_states.hip defines.
constexpr llvm::StringLiteral kMergeAttnStatesEntry =
    "mlagen_merge_attn_states";
/// Threads per block of the merge: a thread per 16-byte vector.
constexpr int32_t kMergeAttnStatesThreads = 256;

LogicalResult prepareForEmission(MergeAttnStatesOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kMergeAttnStatesEntry,
                                   kMergeAttnStatesThreads, 0));
  return success();
}

/// The entry point templates/kernels/expand_page_indices.hip defines; a
/// thread per token.
constexpr llvm::StringLiteral kExpandPageIndicesEntry =
    "mlagen_expand_page_indices";
constexpr int32_t kExpandPageIndicesThreads = 256;

LogicalResult prepareForEmission(ExpandPageIndicesOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kExpandPageIndicesEntry,
                                   kExpandPageIndicesThreads, 0));
  return success();
}

/// The entry point templates/kernels/kv_cache_write.hip defines; a thread
/// per 16-byte vector.
constexpr llvm::StringLiteral kKVCacheWriteEntry = "mlagen_kv_cache_write";
constexpr int32_t kKVCacheWriteThreads = 256;

LogicalResult prepareForEmission(KVCacheWriteOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kKVCacheWriteEntry,
                                   kKVCacheWriteThreads, 0));
  return success();
}

/// The entry point templates/kernels/reshape_and_cache.hip defines; a
/// thread per 16-byte vector of a key or a value head.
constexpr llvm::StringLiteral kReshapeAndCacheEntry =
    "mlagen_reshape_and_cache";
constexpr int32_t kReshapeAndCacheThreads = 256;

LogicalResult prepareForEmission(ReshapeAndCacheOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kReshapeAndCacheEntry,
                                   kReshapeAndCacheThreads, 0));
  return success();
}

/// The entry point templates/kernels/gather_cache.hip defines; a thread per
/// 8-element vector of a gathered key or value head.
constexpr llvm::StringLiteral kGatherCacheEntry = "mlagen_gather_cache";
constexpr int32_t kGatherCacheThreads = 256;

LogicalResult prepareForEmission(GatherCacheOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kGatherCacheEntry,
                                   kGatherCacheThreads, 0));
  return success();
}

/// The entry points templates/kernels/paged_decode.hip defines.
constexpr llvm::StringLiteral kPagedDecodeEntry = "mlagen_paged_decode";
constexpr llvm::StringLiteral kPagedDecodeReduceEntry =
    "mlagen_paged_decode_reduce";

LogicalResult prepareForEmission(PagedDecodeOp op) {
  if (!op.getArch())
    return op.emitOpError()
           << "has no 'arch': run mla-select-tiling before emission";
  Arch arch = *op.getArch();
  if (op.getKvType() == DType::F8E4M3 && arch == Arch::GFX90A)
    return op.emitOpError() << "gfx90a has no fp8 conversion instructions";
  const TargetInfo &target = getTargetInfo(arch);
  int64_t sharedBytes = op.getSharedBytes();
  if (sharedBytes > target.sharedBytesLimit)
    return op.emitOpError() << "needs " << sharedBytes
                            << " bytes of shared memory, "
                            << stringifyArch(arch) << " has "
                            << target.sharedBytesLimit;
  op.setLaunchAttr(LaunchAttr::get(op.getContext(), kPagedDecodeEntry,
                                   PagedDecodeOp::kThreads, sharedBytes));
  op.setReduceLaunchAttr(LaunchAttr::get(op.getContext(),
                                         kPagedDecodeReduceEntry,
                                         PagedDecodeOp::kThreads, 0));
  return success();
}

struct PrepareEmissionPass
    : mlagen::mla::impl::MLAPrepareEmissionPassBase<PrepareEmissionPass> {
  void runOnOperation() override {
    for (PrefillOp op : getOperation().getOps<PrefillOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (DecodeOp op : getOperation().getOps<DecodeOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (MergeAttnStatesOp op : getOperation().getOps<MergeAttnStatesOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (ExpandPageIndicesOp op :
         getOperation().getOps<ExpandPageIndicesOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (KVCacheWriteOp op : getOperation().getOps<KVCacheWriteOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (ReshapeAndCacheOp op : getOperation().getOps<ReshapeAndCacheOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (GatherCacheOp op : getOperation().getOps<GatherCacheOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
    for (PagedDecodeOp op : getOperation().getOps<PagedDecodeOp>())
      if (failed(prepareForEmission(op)))
        signalPassFailure();
  }
};

} // namespace
