//===- LaunchChecks.cpp - argument checks every launch shares -------------===//
#include "LaunchChecks.h"

#include <cstdint>

namespace mlagen {

Status checkDevicePointers(std::initializer_list<DevicePointer> pointers,
                           const char *verb) {
  for (const DevicePointer &p : pointers) {
    if (!p.ptr) {
      if (p.required)
        return invalidArgument(std::string(p.name) + " is null" +
                               p.whyRequired);
      continue;
    }
    if (reinterpret_cast<uintptr_t>(p.ptr) % p.alignment != 0)
      return invalidArgument(std::string(p.name) + " must be " +
                             std::to_string(p.alignment) +
                             "-byte aligned (the kernel " + verb + " it in " +
                             std::to_string(p.alignment) + "-byte units)");
  }
  return Status::ok();
}

Status checkPlanSlots(int planSlots) {
  if (planSlots < -1)
    return invalidArgument("plan_slots must be >= 0, or -1 for unknown (got " +
                           std::to_string(planSlots) + ")");
  return Status::ok();
}

Status resolveStride(const StrideArg &stride, long long &out) {
  if (stride.given < 0)
    return invalidArgument(std::string(stride.name) +
                           " must be >= 0, 0 meaning contiguous (got " +
                           std::to_string(stride.given) + ")");
  out = stride.given ? stride.given : stride.contiguous;
  if (out % 8 != 0)
    return invalidArgument(std::string(stride.name) +
                           " must be a multiple of 8 elements, so rows stay "
                           "16-byte aligned (got " +
                           std::to_string(out) + ")");
  return Status::ok();
}

} // namespace mlagen
