//===- HIPEmitter.h - print a prepared variant as HIP source ----*- C++ -*-===//
//
// The emitter only prints: every decision is already an attribute, set by
// mla-legalize, mla-select-tiling and mla-prepare-emission. It fills the
// placeholders of an embedded kernel template (templates/CONTRACT.md) with
// the target's prelude and a constexpr config. What it cannot print is a
// diagnostic on the op, and nothing is written to the stream then.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TARGET_HIP_HIPEMITTER_H
#define MLAGEN_TARGET_HIP_HIPEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlagen {
namespace mla {
class DecodeOp;
class ExpandPageIndicesOp;
class GatherCacheOp;
class KVCacheWriteOp;
class MergeAttnStatesOp;
class PrefillOp;
class ReshapeAndCacheOp;
class PagedDecodeOp;
} // namespace mla

/// Prints `op`, prepared by mla-prepare-emission, as one self-contained HIP
/// translation unit defining the kernel `launch.entry`.
mlir::LogicalResult emitHIP(mla::PrefillOp op, llvm::raw_ostream &os);

/// Prints `op` (templates/DECODE_CONTRACT.md): one translation unit
/// defining `launch.entry` and `reduce_launch.entry`.
mlir::LogicalResult emitHIP(mla::DecodeOp op, llvm::raw_ostream &os);

/// Prints a prepared merge_attn_states variant from
/// templates/kernels/merge_attn_states.hip.
mlir::LogicalResult emitHIP(mla::MergeAttnStatesOp op, llvm::raw_ostream &os);

/// Prints a prepared expand_page_indices variant from
/// templates/kernels/expand_page_indices.hip.
mlir::LogicalResult emitHIP(mla::ExpandPageIndicesOp op,
                            llvm::raw_ostream &os);

/// Prints a prepared kv_cache_write variant from
/// templates/kernels/kv_cache_write.hip.
mlir::LogicalResult emitHIP(mla::KVCacheWriteOp op, llvm::raw_ostream &os);

/// Prints a prepared reshape_and_cache variant from
/// templates/kernels/reshape_and_cache.hip.
mlir::LogicalResult emitHIP(mla::ReshapeAndCacheOp op, llvm::raw_ostream &os);

/// Prints a prepared gather_cache variant from
/// templates/kernels/gather_cache.hip.
mlir::LogicalResult emitHIP(mla::GatherCacheOp op, llvm::raw_ostream &os);

/// Prints a prepared paged_decode variant (both entries) from
/// templates/kernels/paged_decode.hip.
mlir::LogicalResult emitHIP(mla::PagedDecodeOp op, llvm::raw_ostream &os);

/// Prints the single variant (mla.prefill, mla.decode,
/// mla.merge_attn_states, mla.expand_page_indices, mla.kv_cache_write,
/// mla.reshape_and_cache, mla.gather_cache or mla.paged_decode) of
/// `module`.
mlir::LogicalResult emitHIP(mlir::ModuleOp module, llvm::raw_ostream &os);

/// Registers `--mla-to-hip` with mlir-translate.
void registerMLAToHIPTranslation();

} // namespace mlagen

#endif // MLAGEN_TARGET_HIP_HIPEMITTER_H
