//===- PrebuiltKernels.h - code objects built ahead of time ----*- C++ -*-===//
//
// The seam for AOT bundles: a Runtime consults each PrebuiltKernels in
// RuntimeOptions::prebuilt, then the bundles of RuntimeOptions::bundlePaths,
// after its memory cache and before the disk cache (memory -> bundle ->
// disk -> compile), with or without a generator. openBundle() reads the
// directories `mlagen` writes.
//
// What a Runtime accepts from one: a code object of the signature's arch.
// A Runtime with a generator also requires the generator and compiler
// identities a code object names (when it names them) to be the ones it
// would build with itself, as its cache keys do: a kernel from older
// templates or another compiler version is skipped with a warning saying
// so, and built afresh. A Runtime without a generator takes what is there.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_PREBUILTKERNELS_H
#define MLAGEN_RUNTIME_PREBUILTKERNELS_H

#include "mlagen/Runtime/Runtime.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlagen {

class PrebuiltKernels {
public:
  virtual ~PrebuiltKernels() = default;
  // The code object built for `sig` (sig.arch included), if this holds
  // one. Called from any thread. A bundle built by another generator
  // version is the bundle's to refuse: it knows what built it.
  virtual bool find(const Signature &sig, CodeObject &out) const = 0;
  // Names it in messages, e.g. "bundle /opt/kernels".
  virtual std::string description() const { return "prebuilt kernels"; }
  // The archs it holds code for; empty when it cannot say. A Runtime on a
  // device skips one that holds nothing for the device's arch.
  virtual std::vector<Arch> archs() const { return {}; }
};

// Opens the bundle in `dir`: manifest.json and the code objects `mlagen`
// wrote beside it. Reads the manifest only; each code object is read when
// first found and checked against the manifest's size and XXH3-128, and a
// damaged one is reported through `onWarning` (null: stderr) and not used.
// InvalidArgument names the file and the fault of a missing or malformed
// manifest; Unsupported says which manifest format the bundle has.
Status openBundle(const std::string &dir,
                  std::function<void(const std::string &)> onWarning,
                  std::shared_ptr<const PrebuiltKernels> &out);

} // namespace mlagen

#endif // MLAGEN_RUNTIME_PREBUILTKERNELS_H
