//===- Passes.h - passes over mla variants ----------------------*- C++ -*-===//
#ifndef MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_H
#define MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_H

#include "mlagen/Dialect/MLA/IR/MLAOps.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace mlagen::mla {

#define GEN_PASS_DECL
#include "mlagen/Dialect/MLA/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mlagen/Dialect/MLA/Transforms/Passes.h.inc"

} // namespace mlagen::mla

#endif // MLAGEN_DIALECT_MLA_TRANSFORMS_PASSES_H
