//===- MemorylessBackend.h - fake devices without memory --------*- C++ -*-===//
//
// The memory half of DeviceBackend for unit tests' fake devices: nothing can
// be allocated or copied (Unsupported), and synchronize succeeds. A fake
// implements only what it is about (kind, arch, load, launch).
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_MEMORYLESSBACKEND_H
#define MLAGEN_TEST_COMMON_MEMORYLESSBACKEND_H

#include "DeviceBackend.h"

namespace mlagen::test {

class MemorylessBackend : public DeviceBackend {
public:
  Status allocate(size_t, void *&) override { return noMemory(); }
  Status release(void *) override { return noMemory(); }
  Status copyToDevice(void *, const void *, size_t) override {
    return noMemory();
  }
  Status copyToHost(void *, const void *, size_t) override {
    return noMemory();
  }
  Status synchronize() override { return Status::ok(); }

private:
  static Status noMemory() {
    return Status(StatusCode::Unsupported, "fake device has no memory");
  }
};

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_MEMORYLESSBACKEND_H
