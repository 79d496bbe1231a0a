//===- mlagen-opt.cpp - parse, verify and transform mla variants ----------===//
#include "mlagen/Dialect/MLA/IR/MLADialect.h"
#include "mlagen/Dialect/MLA/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlagen::mla::registerMLAPasses();
  mlir::DialectRegistry registry;
  registry.insert<mlagen::mla::MLADialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mlagen optimizer driver\n", registry));
}
