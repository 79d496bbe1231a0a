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

/// The absorbed MLA decode tiling select-tiling starts from before
/// shrinking it to fit shared memory (templates/DECODE_CONTRACT.md).
struct DecodeTarget {
  int32_t tileK, stages, warps;
  int32_t maxHeadsPerBlock; // q rows a block owns, at most
  // Decode q heads are padded to a multiple of this (AMD: 16, its MFMA
  // tile and what its engines expect); 1 pads nothing.
  int32_t headQuantum;
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

} // namespace mlagen::mla

#endif // MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_TARGETTABLE_H
