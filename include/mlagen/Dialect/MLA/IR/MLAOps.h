//===- MLAOps.h - operations of the mla dialect -----------------*- C++ -*-===//
#ifndef MLAGEN_DIALECT_MLA_IR_MLAOPS_H
#define MLAGEN_DIALECT_MLA_IR_MLAOPS_H

#include "mlagen/Dialect/MLA/IR/MLAAttrs.h"
#include "mlagen/Dialect/MLA/IR/MLADialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#define GET_OP_CLASSES
#include "mlagen/Dialect/MLA/IR/MLAOps.h.inc"

#endif // MLAGEN_DIALECT_MLA_IR_MLAOPS_H
