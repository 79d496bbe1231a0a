//===- KernelCache.h - the in-memory cache, one slot per signature -*- C++ -*-===//
//
// Slots are created on the first request for a signature and never removed,
// so a Kernel pointer handed out stays valid for the Runtime's life. A hit
// costs a shared lock, a hash of the signature's fields and an atomic load;
// a miss builds under the slot's own mutex, so one signature builds once
// while others proceed.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_KERNELCACHE_H
#define MLAGEN_LIB_RUNTIME_KERNELCACHE_H

#include "mlagen/Runtime/Runtime.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace mlagen {

struct SignatureHash {
  size_t operator()(const Signature &sig) const;
};

class KernelCache {
public:
  struct Slot {
    std::mutex build;             // held while generating, compiling, loading
    bool hasCode = false;         // guarded by `build`
    CodeObject code;              // guarded by `build`; fixed once hasCode
    std::unique_ptr<Kernel> kernel;          // guarded by `build`
    std::atomic<const Kernel *> ready{nullptr}; // kernel, once loaded
  };

  // The slot of `sig`, or null.
  Slot *find(const Signature &sig) const;
  Slot &findOrCreate(const Signature &sig);

private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<Signature, std::unique_ptr<Slot>, SignatureHash> slots_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_KERNELCACHE_H
