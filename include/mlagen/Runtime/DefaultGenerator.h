//===- DefaultGenerator.h - the generator the C API uses -------*- C++ -*-===//
//
// The runtime library links no compiler. A library that bundles one
// (libmlagen.so: runtime + MLIR compiler) installs its factory once, when it
// is loaded, and runtimes created through the C API use it:
//
//   static const bool installed = mlagen::setDefaultSourceGenerator(
//       &mlagen::compiler::createMLIRSourceGenerator);
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_DEFAULTGENERATOR_H
#define MLAGEN_RUNTIME_DEFAULTGENERATOR_H

#include "mlagen/Runtime/SourceGenerator.h"

#include <memory>

namespace mlagen {

using SourceGeneratorFactory = std::unique_ptr<SourceGenerator> (*)();

// Replaces the installed factory (null uninstalls). Returns true, so that
// it can initialize a static. Thread-safe.
bool setDefaultSourceGenerator(SourceGeneratorFactory factory);

// A generator from the installed factory; null when none is installed.
std::unique_ptr<SourceGenerator> createDefaultSourceGenerator();

} // namespace mlagen

#endif // MLAGEN_RUNTIME_DEFAULTGENERATOR_H
