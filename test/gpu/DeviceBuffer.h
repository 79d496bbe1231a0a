//===- DeviceBuffer.h - device memory for GPU tests ------------*- C++ -*-===//
#ifndef MLAGEN_TEST_GPU_DEVICEBUFFER_H
#define MLAGEN_TEST_GPU_DEVICEBUFFER_H

#include "CatchStatus.h"
#include "DeviceBackend.h"

#include <vector>

namespace mlagen::test {

// Device memory from the test's own backend handle: the CUDA primary
// context (or HIP device) is the one the Runtime launches on.
class DeviceBuffer {
public:
  DeviceBuffer(DeviceBackend &backend, size_t bytes)
      : backend_(backend), bytes_(bytes) {
    REQUIRE(backend_.allocate(bytes_ ? bytes_ : 1, ptr_));
  }
  template <typename T>
  DeviceBuffer(DeviceBackend &backend, const std::vector<T> &host)
      : DeviceBuffer(backend, host.size() * sizeof(T)) {
    upload(host);
  }
  ~DeviceBuffer() {
    Status status = backend_.release(ptr_);
    (void)status;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  template <typename T> void upload(const std::vector<T> &host) {
    REQUIRE(host.size() * sizeof(T) == bytes_);
    REQUIRE(backend_.copyToDevice(ptr_, host.data(), bytes_));
  }
  template <typename T> std::vector<T> download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    REQUIRE(backend_.copyToHost(host.data(), ptr_, bytes_));
    return host;
  }
  template <typename T = void> T *get() const { return static_cast<T *>(ptr_); }

private:
  DeviceBackend &backend_;
  size_t bytes_;
  void *ptr_ = nullptr;
};

} // namespace mlagen::test

#endif // MLAGEN_TEST_GPU_DEVICEBUFFER_H
