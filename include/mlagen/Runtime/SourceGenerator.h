//===- SourceGenerator.h - where the runtime gets HIP source ----*- C++ -*-===//
//
// The runtime does not know how kernels are generated: it asks a
// SourceGenerator. The compiler library implements one with the MLIR
// pipeline (mlagen/Compiler/Pipeline.h); an AOT-only deployment needs none.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_SOURCEGENERATOR_H
#define MLAGEN_RUNTIME_SOURCEGENERATOR_H

#include "mlagen/Runtime/Signature.h"
#include "mlagen/Runtime/Status.h"

#include <string>

namespace mlagen {

// Self-contained device source and the launch geometry the passes chose.
struct GeneratedKernel {
  std::string source;     // one translation unit, no #include
  std::string entryName;  // extern "C" __global__ function
  int threadsPerBlock = 0;
  int sharedBytes = 0;    // dynamic shared memory per block
  int tileQ = 0;          // query rows per block (grid.x = ceil(max_q/tileQ))
};

class SourceGenerator {
public:
  virtual ~SourceGenerator() = default;
  virtual Status generate(const Signature &sig, GeneratedKernel &out) = 0;
  // Names the generator and its template content (a hash); part of every
  // cache key so that a template change never reuses an old code object.
  virtual std::string identity() const = 0;
};

} // namespace mlagen

#endif // MLAGEN_RUNTIME_SOURCEGENERATOR_H
