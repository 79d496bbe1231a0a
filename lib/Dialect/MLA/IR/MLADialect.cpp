//===- MLADialect.cpp - the mla dialect -----------------------------------===//
#include "mlagen/Dialect/MLA/IR/MLADialect.h"
#include "mlagen/Dialect/MLA/IR/MLAOps.h"

using namespace mlagen::mla;

#include "mlagen/Dialect/MLA/IR/MLADialect.cpp.inc"

void MLADialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "mlagen/Dialect/MLA/IR/MLAOps.cpp.inc"
      >();
}
