//===- Pipeline.h - from a Signature to HIP source through MLIR -*- C++ -*-===//
//
// The compiler library: it turns a runtime Signature into an `mla` module,
// runs the pass pipeline and prints HIP source. It implements the runtime's
// SourceGenerator, so a JIT host gets kernels without knowing about MLIR.
// Every entry point reports bad input as a diagnostic or a Status; none
// aborts.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_COMPILER_PIPELINE_H
#define MLAGEN_COMPILER_PIPELINE_H

#include "mlagen/Runtime/Signature.h"
#include "mlagen/Runtime/SourceGenerator.h"
#include "mlagen/Runtime/Status.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"

#include <memory>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace mlagen {

/// A module holding the one variant `sig` describes, as written: not yet
/// verified or legalized. Loads the mla dialect into `context`. Returns null,
/// with an error on `context`, if a field cannot be represented at all.
mlir::OwningOpRef<mlir::ModuleOp> buildVariantModule(mlir::MLIRContext &context,
                                                     const Signature &sig);

/// Appends one Signature per mla.prefill and mla.decode of `module`, in
/// order (the input of `mlagen build variants.mlir`); a variant with no arch
/// gives one per arch of `defaultArchs`. Appends none if a variant has no
/// arch and there are no defaults, or if it is a paged prefill.
Status signaturesFromModule(mlir::ModuleOp module,
                            std::vector<Signature> &signatures,
                            llvm::ArrayRef<Arch> defaultArchs = {});

/// Parses a variants file (a module of mla.prefill and mla.decode ops) and
/// appends its signatures as signaturesFromModule does; parse and verifier
/// errors become an InvalidSignature status naming the file and line.
Status loadVariantFile(const std::string &path,
                       llvm::ArrayRef<Arch> defaultArchs,
                       std::vector<Signature> &signatures);

/// mla-legalize, mla-select-tiling{arch}, mla-prepare-emission: after it,
/// emitHIP prints each variant. `arch` is the target of variants that name
/// none.
void buildPipeline(mlir::OpPassManager &pm, Arch arch);

/// Builds, verifies, runs the pipeline on and emits `sig` in an MLIR context
/// of its own, so concurrent calls are safe. Diagnostics become the message:
/// InvalidSignature (the variant breaks a rule), Unsupported (valid, but no
/// template or target implements it) or GeneratorError (emission failed).
Status generateHIP(const Signature &sig, GeneratedKernel &kernel);

/// A SourceGenerator over generateHIP. Its identity names the pipeline
/// version and the hash of the embedded templates.
std::unique_ptr<SourceGenerator> createMLIRSourceGenerator();

} // namespace mlagen

#endif // MLAGEN_COMPILER_PIPELINE_H
