//===- RuntimeInternal.h - entry points beyond Runtime.h -------*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_RUNTIMEINTERNAL_H
#define MLAGEN_LIB_RUNTIME_RUNTIMEINTERNAL_H

#include "DeviceBackend.h"
#include "mlagen/Runtime/Runtime.h"

namespace mlagen {

// The Runtime that returned `kernel` (the C API launches through it); null
// for a Kernel no Runtime made.
Runtime *owningRuntime(const Kernel &kernel);

// Runtime::create on a given backend rather than one opened from
// options.backend: tests launch on a recording fake; null opens as usual.
Status createRuntimeWithBackend(RuntimeOptions options,
                                std::unique_ptr<DeviceBackend> backend,
                                std::unique_ptr<Runtime> &out);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_RUNTIMEINTERNAL_H
