//===- TargetTable.h - what the passes know about each GPU ------*- C++ -*-===//
#ifndef MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_TARGETTABLE_H
#define MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_TARGETTABLE_H

#include "mlagen/Dialect/MLA/IR/MLAAttrs.h"

#include <cstdint>

namespace mlagen::mla {

/// The M x N x K of the matrix instruction the kernel is built on.
struct MMAShape {
  int32_t m, n, k;
  bool operator==(const MMAShape &) const = default;
};

/// Keys per step, warps (or waves) and KV buffers of a decode block.
struct DecodeTiles {
  int32_t tileK, warps, stages;
};

/// The absorbed MLA decode tilings select-tiling starts from before
/// shrinking one to fit shared memory: the kernel owner's defaults per q
/// rows per block (templates/DECODE_CONTRACT.md, "Kernel owner's answers").
struct DecodeTarget {
  // Defaults for blocks of 16, 32 and 64 q rows (kHeadsPerBlock).
  DecodeTiles byRows[3];
  int32_t maxHeadsPerBlock; // q rows a block owns, at most (16, 32 or 64)
  // Decode q heads are padded to a multiple of this (AMD: 16, its MFMA
  // tile and what its engines expect); 1 pads nothing.
  int32_t headQuantum;

  /// The defaults for blocks of `headsPerBlock` (16, 32 or 64) rows.
  const DecodeTiles &tilesFor(int32_t headsPerBlock) const {
    return byRows[headsPerBlock >= 64 ? 2 : headsPerBlock >= 32 ? 1 : 0];
  }
};

struct TargetInfo {
  Arch arch;
  int32_t waveSize;         // threads per warp or wavefront
  int64_t sharedBytesLimit; // dynamic shared memory (LDS) one block may use
  MMAShape mma;
  // The prefill tiling select-tiling starts from before shrinking it to fit
  // shared memory; warps follow as tileQ / mma.m.
  int32_t tileQ, tileK, stages;
  DecodeTarget decode;
};

const TargetInfo &getTargetInfo(Arch arch);

/// sm_90a's warp-specialised prefill kernel (templates/kernels/prefill.hip,
/// warpgroup_mma) is tiled in wgmma granules of 64 x 64 x 16; the table's
/// mma row stays the mma.sync fallback's.
inline constexpr MMAShape kWarpgroupMMA{64, 64, 16};

} // namespace mlagen::mla

#endif // MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_TARGETTABLE_H
