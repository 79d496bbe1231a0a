//===- MLADialect.h - the mla dialect ---------------------------*- C++ -*-===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLADIALECT_H
#define MLAGEN_DIALECT_MLA_IR_MLADIALECT_H

#include "mlir/IR/Dialect.h"

#include "mlagen/Dialect/MLA/IR/MLADialect.h.inc"

#endif // MLAGEN_DIALECT_MLA_IR_MLADIALECT_H
