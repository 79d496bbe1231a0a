//===- RecordingBackend.h - a fake device that records launches -*- C++ -*-===//
//
// For unit tests of one runtime op's launch path without a GPU: the fake
// device loads any code object, records each launch's geometry, stream and
// parameter block (every mlagen entry takes one struct, `Params`), and has
// no memory. FakeRuntime<Params> is a Runtime on it with the counting
// generator of TestSupport.h.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_RECORDINGBACKEND_H
#define MLAGEN_TEST_COMMON_RECORDINGBACKEND_H

#include "CatchStatus.h"
#include "DeviceBackend.h"
#include "MemorylessBackend.h"
#include "RuntimeInternal.h"
#include "TestSupport.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace mlagen::test {

template <typename T> T *fakeAddress(uintptr_t address) {
  return reinterpret_cast<T *>(address);
}

template <typename Params> struct RecordedLaunch {
  LaunchGeometry geometry;
  void *stream = nullptr;
  Params params{};
};

template <typename Params> struct LaunchLog {
  std::mutex mutex;
  std::vector<RecordedLaunch<Params>> launches;
  // Set: the device encodes tensor maps (bytes 0xA5), recording each request.
  bool tensorMaps = false;
  std::vector<TensorMapRequest> tensorMapRequests;
};

template <typename Params> class RecordingBackend final : public MemorylessBackend {
public:
  explicit RecordingBackend(std::shared_ptr<LaunchLog<Params>> log)
      : log_(std::move(log)) {}
  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return Arch::SM90A; }
  std::string description() const override { return "fake recording device"; }
  Status load(const CodeObject &, DeviceFunction &out) override {
    out = {fakeAddress<void>(0x1000), kFunction, {}};
    return Status::ok();
  }
  void unload(DeviceFunction &) override {}
  Status encodeTensorMap(const TensorMapRequest &request,
                         void *map) const override {
    if (!log_->tensorMaps)
      return DeviceBackend::encodeTensorMap(request, map);
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->tensorMapRequests.push_back(request);
    std::memset(map, 0xA5, kTensorMapBytes);
    return Status::ok();
  }
  Status launch(const DeviceFunction &function, const LaunchGeometry &geometry,
                void *stream, void **params) override {
    REQUIRE(function.function == kFunction);
    RecordedLaunch<Params> record{geometry, stream, {}};
    std::memcpy(&record.params, params[0], sizeof(Params));
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->launches.push_back(record);
    return Status::ok();
  }

private:
  inline static void *const kFunction = fakeAddress<void>(0x3000);
  static constexpr size_t kTensorMapBytes = 128; // a CUtensorMap
  std::shared_ptr<LaunchLog<Params>> log_;
};

template <typename Params> struct FakeRuntime {
  std::shared_ptr<LaunchLog<Params>> log =
      std::make_shared<LaunchLog<Params>>();
  std::shared_ptr<CountingGenerator> generator =
      std::make_shared<CountingGenerator>();
  std::unique_ptr<Runtime> runtime;

  FakeRuntime() {
    generator->threadsPerBlock = 256;
    RuntimeOptions options;
    options.generator = generator;
    options.diskCache = false;
    // The fake generator's source is never compiled: the fake device loads
    // whatever it gets.
    REQUIRE(createRuntimeWithBackend(
        std::move(options), std::make_unique<RecordingBackend<Params>>(log),
        runtime));
  }
};

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_RECORDINGBACKEND_H
