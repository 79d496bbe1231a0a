//===- TranslateRegistration.cpp - mlir-translate --mla-to-hip ------------===//
#include "mlagen/Dialect/MLA/IR/MLADialect.h"
#include "mlagen/Target/HIP/HIPEmitter.h"

#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

void mlagen::registerMLAToHIPTranslation() {
  static TranslateFromMLIRRegistration registration(
      "mla-to-hip",
      "print a prepared mla.prefill or mla.decode as a HIP translation unit",
      [](Operation *op, raw_ostream &os) -> LogicalResult {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module to translate");
        return emitHIP(module, os);
      },
      [](DialectRegistry &registry) { registry.insert<mla::MLADialect>(); });
}
