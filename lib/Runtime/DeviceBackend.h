//===- DeviceBackend.h - one GPU, reached through its driver ---*- C++ -*-===//
//
// A DeviceBackend wraps the driver API of one device (CUDA or HIP), loaded
// with dlopen. It loads code objects and launches them; the memory helpers
// serve tests and tools. All members are thread-safe: the drivers are, and
// the one mutable state, CUDA's launch graphs, is behind a lock.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DEVICEBACKEND_H
#define MLAGEN_LIB_RUNTIME_DEVICEBACKEND_H

#include "mlagen/Runtime/Runtime.h"

#include <memory>
#include <string>
#include <vector>

namespace mlagen {

// A code object loaded on the device: its first entry, then the functions
// of CodeObject::extraEntries in order.
struct DeviceFunction {
  void *module = nullptr;
  void *function = nullptr;
  std::vector<void *> extraFunctions;

  // The i-th extra entry as a function of its own, for launch().
  DeviceFunction extra(size_t i) const {
    return {module, extraFunctions[i], {}};
  }
};

struct LaunchGeometry {
  unsigned grid[3] = {1, 1, 1};
  unsigned threadsPerBlock = 0;
  unsigned sharedBytes = 0;
  // Programmatic dependent launch (sm_90): the kernel's blocks may start
  // before the previous kernel in the stream has finished, which hides the
  // launch gap between the two. The kernel must call grid_dependency_wait()
  // (prelude) before it touches global memory. Other backends, and drivers
  // without cuLaunchKernelEx, launch as usual.
  bool earlyStart = false;
  // Thread-block clusters of this many blocks along x (sm_90); grid[0] is a
  // multiple of it. Backends without clusters refuse a value above 1.
  unsigned clusterX = 1;
};

// A 3-D tensor of 16-bit elements in global memory, read in boxes into
// shared memory with the 128-byte swizzle: sizes and box in elements,
// innermost first; strides of dimensions 1 and 2 in bytes.
struct TensorMapRequest {
  const void *base = nullptr;
  unsigned long long sizes[3] = {};
  unsigned long long strides[2] = {};
  unsigned box[3] = {};
};

class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;

  virtual BackendKind kind() const = 0;
  // The kernels this device runs by default: sm_90a on a 9.0 device,
  // otherwise the portable sm_80 kernels on NVIDIA.
  virtual Arch arch() const = 0;
  // Whether this device runs kernels of `arch`: its own; NVIDIA devices
  // from 9.0 on also run the portable sm_80 kernels, compiled for their
  // own SASS (portableTarget()).
  virtual bool runs(Arch arch) const { return arch == this->arch(); }
  // The NVRTC target the portable sm_80 kernels are compiled for here:
  // "sm_80" on every 8.x device (their SASS runs on all of them), the
  // device's own ("sm_90", "sm_100", "sm_120") from 9.0 on, where sm_80
  // SASS does not run. Empty on other backends.
  virtual std::string portableTarget() const { return ""; }
  // "cuda device 0: NVIDIA H100 80GB HBM3 (sm_90a)"
  virtual std::string description() const = 0;

  // Loads `code` and finds its entries; opts in to more than the default
  // dynamic shared memory where the driver requires it.
  virtual Status load(const CodeObject &code, DeviceFunction &out) = 0;
  virtual void unload(DeviceFunction &function) = 0;
  // Enqueues one launch; `params` is the kernel's argument pointer array.
  virtual Status launch(const DeviceFunction &function,
                        const LaunchGeometry &geometry, void *stream,
                        void **params) = 0;
  // Enqueues `first`, then `second`, with one argument array (a split-KV
  // step and its reduce). CUDA makes the pair one graph launch, at about
  // one launch's host time, where the stream is idle (no work queued, not
  // being captured); otherwise, and on other backends, they are launched
  // one after the other.
  virtual Status launchPair(const DeviceFunction &first,
                            const LaunchGeometry &firstGeometry,
                            const DeviceFunction &second,
                            const LaunchGeometry &secondGeometry,
                            void *stream, void **params) {
    if (Status status = launch(first, firstGeometry, stream, params); !status)
      return status;
    return launch(second, secondGeometry, stream, params);
  }

  // Describes `request` as a tensor map for bulk tensor copies (sm_90 TMA)
  // in `map`'s 128 bytes. Unsupported where the driver has none (HIP, CUDA
  // before 12.0): callers then copy without one.
  virtual Status encodeTensorMap(const TensorMapRequest &request,
                                 void *map) const {
    (void)request;
    (void)map;
    return Status(StatusCode::Unsupported,
                  description() + " has no tensor maps");
  }

  // Whether work enqueued on `stream` now is being captured into a graph
  // rather than run (a replay may then meet other data). True where the
  // backend cannot tell, so callers only skip work when it surely runs now.
  virtual bool capturing(void *stream) const {
    (void)stream;
    return true;
  }

  virtual Status allocate(size_t bytes, void *&ptr) = 0;
  virtual Status release(void *ptr) = 0;
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual Status synchronize() = 0;
};

// NoBackend says what is missing ("libcuda.so.1 not found", "cuInit failed:
// CUDA_ERROR_NO_DEVICE"); Unsupported names a device mlagen cannot target.
Status openCudaBackend(int device, std::unique_ptr<DeviceBackend> &out);
Status openHipBackend(int device, std::unique_ptr<DeviceBackend> &out);
// CUDA, HIP or, for Auto, the first that opens; for Auto the NoBackend
// message gives both reasons: "no GPU backend: <cuda>; <hip>".
Status openDeviceBackend(BackendKind kind, int device,
                         std::unique_ptr<DeviceBackend> &out);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DEVICEBACKEND_H
