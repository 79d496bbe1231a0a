//===- PrebuiltKernels.h - code objects built ahead of time ----*- C++ -*-===//
//
// The seam for AOT bundles: a Runtime consults each PrebuiltKernels in
// RuntimeOptions::prebuilt after its memory cache and before the disk cache
// (memory -> bundle -> disk -> compile), with or without a generator. A
// bundle reader (the output of `mlagen build`) implements it.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_PREBUILTKERNELS_H
#define MLAGEN_RUNTIME_PREBUILTKERNELS_H

#include "mlagen/Runtime/Runtime.h"

namespace mlagen {

class PrebuiltKernels {
public:
  virtual ~PrebuiltKernels() = default;
  // The code object built for `sig` (sig.arch included), if this holds
  // one. Called from any thread. A bundle built by another generator
  // version is the bundle's to refuse: it knows what built it.
  virtual bool find(const Signature &sig, CodeObject &out) const = 0;
};

} // namespace mlagen

#endif // MLAGEN_RUNTIME_PREBUILTKERNELS_H
