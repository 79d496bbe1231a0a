//===- FuzzVariant.cpp - variant files: parse, verify, pipeline, emit -----===//
//
// `mlagen variants.mlir` reads text a person wrote: parse it as an `mla`
// module, verify it, read its signatures, run the whole pipeline and the
// HIP emitter. Bad input must end in a diagnostic, never a crash.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Dialect/MLA/IR/MLADialect.h"
#include "mlagen/Target/HIP/HIPEmitter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

using namespace mlir;

// LLVM's BumpPtrAllocator poisons new slabs in the (instrumented) header
// copies compiled here and unpoisons allocations in the uninstrumented
// copies inside Debian's MLIR libraries: with user poisoning on, every
// parse reports a false use-after-poison.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<mlagen::mla::MLADialect>();
  // Diagnostics are the expected outcome: swallow them, quickly.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  if (!module || failed(verify(*module)))
    return 0;
  std::vector<mlagen::Signature> signatures;
  mlagen::Status read =
      mlagen::signaturesFromModule(*module, signatures, {mlagen::Arch::SM90A});
  for (const mlagen::Signature &sig : signatures)
    (void)sig.validate();
  (void)read;
  PassManager pm(&context);
  mlagen::buildPipeline(pm, mlagen::Arch::SM90A);
  if (failed(pm.run(*module)))
    return 0;
  std::string source;
  llvm::raw_string_ostream os(source);
  (void)mlagen::emitHIP(*module, os);
  return 0;
}
