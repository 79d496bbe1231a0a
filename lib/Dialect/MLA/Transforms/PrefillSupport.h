//===- PrefillSupport.h - what the prefill template implements --*- C++ -*-===//
#ifndef MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_PREFILLSUPPORT_H
#define MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_PREFILLSUPPORT_H

#include "mlagen/Dialect/MLA/IR/MLAOps.h"

namespace mlagen::mla {

/// Emits an error naming the field if `op` is a valid variant that
/// templates/kernels/prefill.hip does not implement yet. Legalize reports
/// these first; prepare-emission repeats the check so that no pass order
/// lets an unsupported variant reach the emitter.
mlir::LogicalResult checkPrefillSupported(PrefillOp op);

} // namespace mlagen::mla

#endif // MLAGEN_LIB_DIALECT_MLA_TRANSFORMS_PREFILLSUPPORT_H
