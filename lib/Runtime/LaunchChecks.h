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

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_LAUNCHCHECKS_H
