//===- KernelSet.cpp - Runtime::getKernels: a set of kernels at once ------===//
//
// An engine starting up asks for every kernel its model needs. Cold, each is
// a compile of seconds on one core (NVRTC's optimiser and ptxas run one
// thread an entry), so getKernel one after another costs their sum; the
// runtime already lets any number of threads fetch at once (a lock per
// signature), so the set is spread over threads and costs about its slowest.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Runtime/Runtime.h"
#include "ParallelFor.h"

#include <exception>

namespace mlagen {

Status Runtime::getKernels(const std::vector<Signature> &sigs,
                           std::vector<const Kernel *> &out, int jobs) {
  out.assign(sigs.size(), nullptr);
  std::vector<Status> results(sigs.size());
  parallelFor(sigs.size(), jobs, [&](size_t i) {
    try { // as one on a worker thread would end the process
      results[i] = getKernel(sigs[i], out[i]);
    } catch (const std::exception &e) {
      results[i] = Status(StatusCode::Internal, e.what());
    } catch (...) {
      results[i] = Status(StatusCode::Internal, "unknown exception");
    }
  });
  for (size_t i = 0; i < sigs.size(); ++i)
    if (!results[i])
      return Status(results[i].code(), "kernel " + std::to_string(i) + " ('" +
                                           sigs[i].canonical() +
                                           "'): " + results[i].message());
  return Status::ok();
}

} // namespace mlagen
