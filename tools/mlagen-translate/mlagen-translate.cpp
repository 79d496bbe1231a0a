//===- mlagen-translate.cpp - print mla variants as HIP source ------------===//
#include "mlagen/Target/HIP/HIPEmitter.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlagen::registerMLAToHIPTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "mlagen translation driver\n"));
}
