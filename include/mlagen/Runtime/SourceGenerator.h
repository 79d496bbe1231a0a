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
#include <vector>

namespace mlagen {

// A further extern "C" kernel of the same code object, launched after the
// first on the same stream (decode: mlagen_decode_reduce).
struct KernelEntry {
  std::string name;
  int threadsPerBlock = 0;
  int sharedBytes = 0;  // dynamic shared memory per block
  int rowsPerBlock = 0; // q rows (token x head) one block covers
  bool operator==(const KernelEntry &) const = default;
};

// Self-contained device source and the launch geometry the passes chose.
struct GeneratedKernel {
  std::string source;     // one translation unit, no #include
  std::string entryName;  // extern "C" __global__ function
  int threadsPerBlock = 0;
  int sharedBytes = 0;    // dynamic shared memory per block
  // Query rows per block. Prefill: grid.x = ceil(max_q / tileQ); decode:
  // rows (q_len x padded heads) per block, grid.y = ceil(rows / tileQ).
  int tileQ = 0;
  // Decode (DECODE_CONTRACT.md): keys per inner step, the planner's chunk
  // granularity, and the q heads the kernel computes (AMD pads them to 16).
  int tileK = 0;
  int paddedHeads = 0;
  // Decode: the most key chunks of one request the kernel merges inside a
  // thread-block cluster instead of through the reduce; 1 merges none.
  int clusterParts = 1;
  // Decode: blocks an SM holds, as the launch bounds promise (0: not stated).
  int blocksPerSM = 0;
  std::vector<KernelEntry> extraEntries;
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
