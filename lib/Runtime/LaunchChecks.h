//===- LaunchChecks.h - argument checks every launch shares ----*- C++ -*-===//
//
// The checks a launch makes of its device pointers before anything reaches
// the GPU, with one wording for every op: a null required pointer, and a
// pointer off the alignment of the loads the kernel makes from it (a
// misaligned access faults the whole GPU context, not just the launch).
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_LAUNCHCHECKS_H
#define MLAGEN_LIB_RUNTIME_LAUNCHCHECKS_H

#include "mlagen/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace mlagen {

inline Status invalidArgument(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

struct DevicePointer {
  const char *name;
  const void *ptr;
  unsigned alignment; // bytes the kernel moves it in
  bool required = true;
  const char *whyRequired = ""; // appended to "<name> is null"
};

// How the kernel uses the memory, for the message: "loads" (read by the
// attention kernels) or "moves" (copied by the cache ops).
Status checkDevicePointers(std::initializer_list<DevicePointer> pointers,
                           const char *verb);

// A split-KV op's planSlots: -1 (unknown) or the plan's slot count.
Status checkPlanSlots(int planSlots);

// An element stride as the caller gave it; 0 selects `contiguous`.
struct StrideArg {
  const char *name;
  int64_t given, contiguous;
};

// Resolves `stride` into `out`: >= 0 and a multiple of 8 elements, so
// that rows the kernel moves in 16-byte vectors stay aligned.
Status resolveStride(const StrideArg &stride, long long &out);

// resolveStride of strides[i] into out[i], the first failure returned.
template <size_t N>
Status resolveStrides(const StrideArg (&strides)[N], long long (&out)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (Status status = resolveStride(strides[i], out[i]); !status)
      return status;
  return Status::ok();
}

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_LAUNCHCHECKS_H
