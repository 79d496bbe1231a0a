//===- MLAAttrs.h - enums and attributes of the mla dialect -----*- C++ -*-===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLAATTRS_H
#define MLAGEN_DIALECT_MLA_IR_MLAATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "mlagen/Dialect/MLA/IR/MLAEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mlagen/Dialect/MLA/IR/MLAAttrs.h.inc"

namespace mlagen::mla {

/// AMD CDNA (HIP, wave64, MFMA) as opposed to NVIDIA (wave32, mma.sync).
inline bool isCDNA(Arch arch) {
  return arch == Arch::GFX90A || arch == Arch::GFX942 || arch == Arch::GFX950;
}

} // namespace mlagen::mla

#endif // MLAGEN_DIALECT_MLA_IR_MLAATTRS_H
