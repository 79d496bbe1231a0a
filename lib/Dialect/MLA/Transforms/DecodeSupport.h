//===- DecodeSupport.h - what the decode template implements ----*- C++ -*-===//
#ifndef MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_DECODESUPPORT_H
#define MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_DECODESUPPORT_H

#include "TargetTable.h"

#include "mlagen/Dialect/MLA/IR/MLAOps.h"

namespace mlagen::mla {

/// The entry points templates/kernels/mla_decode.hip defines.
inline constexpr llvm::StringLiteral kDecodeEntry = "mlagen_decode";
inline constexpr llvm::StringLiteral kDecodeReduceEntry =
    "mlagen_decode_reduce";

/// Emits an error naming the field if `op` is a valid variant that
/// templates/kernels/mla_decode.hip does not implement yet. Legalize reports
/// these first; prepare-emission repeats the check.
mlir::LogicalResult checkDecodeSupported(DecodeOp op);

/// Whether `tiling` selects sm_90a's warp-specialised wgmma kernel
/// (mla_decode.hip's kWarpgroupDecode): 64-key tiles, two or more stages,
/// and 8 warps for 16 or 32 rows a block, or 12 warps (two consumer
/// warpgroups) for 64 rows (an fp8 cache widened to fp16 by the producer),
/// or for an fp8 cache multiplied as e4m3 (16 or 32 rows of fp8 q, 16 of
/// bf16 q).
bool isWarpgroupDecode(DecodeOp op, DecodeTilingAttr tiling,
                       const TargetInfo &target);

/// Whether sm_90a's wgmma kernel with `tiling` multiplies e4m3 as stored
/// (mla_decode.hip's kFP8Operands): raw tiles of 128-column slabs, from an
/// fp8 cache read with fp8 q, or with bf16 q on 12 warps (16 rows, each q
/// row split into e4m3 hi + lo; with 8 warps the tiles are widened to fp16).
bool isFP8OperandDecode(DecodeOp op, DecodeTilingAttr tiling);

/// The most key chunks of one request that mlagen_decode merges inside a
/// thread-block cluster, through distributed shared memory, instead of
/// through mlagen_decode_reduce; 1: none. 2 for sm_90a's 16-row wgmma
/// kernels (not batch-invariant, not an fp8 cache widened to fp16, whose
/// stream goes through L1): a pair's leader receives its partner's fp32 part
/// (16 rows) in 32 KB of its own beside the stages, and clusters of 2 tile
/// every H100/H200 GPC.
int64_t getDecodeClusterParts(DecodeOp op, DecodeTilingAttr tiling,
                              const TargetInfo &target);

/// Dynamic shared memory mlagen_decode uses with `tiling` on `target`, by
/// the formula of DECODE_CONTRACT.md: the wgmma kernel's exact bytes, else
/// the kernel's tiles (a Q tile on NVIDIA, `stages` KV tiles, two P tiles,
/// all 16-bit with padded rows) plus fp32 row maxima per key granule and
/// row sums per warp.
int64_t getDecodeSharedBytes(DecodeOp op, DecodeTilingAttr tiling,
                             const TargetInfo &target);

/// Emits an error if `tiling` breaks a rule of the kernel on `target`
/// (wave size, MMA depth, warps, rows per block, registers, shared memory;
/// DECODE_CONTRACT.md, "Kernel owner's answers").
mlir::LogicalResult checkDecodeTiling(DecodeOp op, DecodeTilingAttr tiling,
                                      const TargetInfo &target);

} // namespace mlagen::mla

#endif // MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_DECODESUPPORT_H
