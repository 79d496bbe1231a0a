//===- Library.cpp - libmlagen.so: the C API with the MLIR generator ------===//
//
// The runtime links no compiler; this shared library bundles both, and
// installs the MLIR pipeline as the generator of every runtime that the C
// API creates, so FFI hosts (Python) JIT-compile kernels on a cache miss.
//
//===----------------------------------------------------------------------===//
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/DefaultGenerator.h"

static const bool installed =
    mlagen::setDefaultSourceGenerator(&mlagen::createMLIRSourceGenerator);
