//===- ParallelFor.h - run a body over indices on a few threads -*- C++ -*-===//
//
// Shared by Runtime::getKernels and buildBundle: compiles are independent
// and each takes seconds, so they are spread over threads, each taking the
// next index until none is left.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_PARALLELFOR_H
#define MLAGEN_LIB_RUNTIME_PARALLELFOR_H

#include <cstddef>
#include <functional>

namespace mlagen {

// Calls body(i) once for every i < count, on at most `jobs` threads at once
// (jobs <= 0: one per core) and never more threads than indices; the calling
// thread is one of them. Returns once every call has returned; if a call
// throws, no further index is started and the first exception is rethrown.
void parallelFor(size_t count, int jobs,
                 const std::function<void(size_t)> &body);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PARALLELFOR_H
