//===- CudaBackend.cpp - NVIDIA GPUs through libcuda.so.1 -----------------===//
//
// The driver API, not the runtime API: libcuda.so.1 is the one library every
// NVIDIA machine has, and its primary context is the one CUDA runtime users
// (PyTorch, vLLM) already share.
//
//===----------------------------------------------------------------------===//

#include "CudaPairGraphs.h"
#include "DeviceBackend.h"
#include "DriverAPI.h"
#include "DynamicLibrary.h"

#include <cstdlib>
#include <memory>
#include <string>

namespace mlagen {
namespace {

// Kernels may use 48 KiB of dynamic shared memory without opting in.
constexpr int kDefaultSharedBytes = 48 * 1024;

// MLAGEN_EARLY_START=0 launches every kernel after the previous one has
// finished (for profilers, or to rule programmatic dependent launch out).
bool earlyStartDisabled() {
  const char *text = std::getenv("MLAGEN_EARLY_START");
  return text && std::string(text) == "0";
}

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
std::string describeError(const cu::API &api, cu::Result rc) {
  const char *name = nullptr, *text = nullptr;
  api.getErrorName(rc, &name);
  api.getErrorString(rc, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(rc)) +
         (text ? std::string(" (") + text + ")" : "");
}

class CudaBackend final : public DeviceBackend {
public:
  // `sm`: compute capability as 10 * major + minor (90 for 9.0).
  CudaBackend(const cu::API &api, int ordinal, cu::Device device,
              cu::Context context, int sm, std::string name,
              int maxSharedBytes)
      : api_(api), ordinal_(ordinal), device_(device), context_(context),
        arch_(sm == 90 ? Arch::SM90A : Arch::SM80),
        portableTarget_(sm / 10 == 8 ? "sm_80" : "sm_" + std::to_string(sm)),
        name_(std::move(name)), maxSharedBytes_(maxSharedBytes),
        earlyStart_(sm >= 90 && api.launchKernelEx && !earlyStartDisabled()) {
    if (CudaPairGraphs::usable(api_))
      pairGraphs_ = std::make_unique<CudaPairGraphs>(api_, earlyStart_);
  }

  ~CudaBackend() override {
    {
      ContextScope scope(api_, context_);
      pairGraphs_.reset();
    }
    api_.devicePrimaryCtxRelease(device_);
  }

  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return arch_; }
  bool runs(Arch arch) const override {
    return arch == arch_ || arch == Arch::SM80;
  }
  std::string portableTarget() const override { return portableTarget_; }
  std::string description() const override {
    std::string kernels = archName(arch_);
    if (arch_ == Arch::SM80 && portableTarget_ != "sm_80")
      kernels += " kernels as " + portableTarget_;
    return "cuda device " + std::to_string(ordinal_) + ": " + name_ + " (" +
           kernels + ")";
  }

  Status load(const CodeObject &code, DeviceFunction &out) override {
    std::vector<KernelEntry> entries = {
        {code.entryName, code.threadsPerBlock, code.sharedBytes, code.tileQ}};
    entries.insert(entries.end(), code.extraEntries.begin(),
                   code.extraEntries.end());
    for (const KernelEntry &entry : entries)
      if (entry.sharedBytes > maxSharedBytes_)
        return Status(StatusCode::Unsupported,
                      entry.name + " needs " +
                          std::to_string(entry.sharedBytes) +
                          " bytes of shared memory; " + description() +
                          " allows " + std::to_string(maxSharedBytes_));
    ContextScope scope(api_, context_);
    cu::Module module = nullptr;
    if (cu::Result rc = api_.moduleLoadData(&module, code.binary.data()))
      return error("cuModuleLoadData", rc);
    std::vector<cu::Function> functions;
    for (const KernelEntry &entry : entries) {
      cu::Function function = nullptr;
      cu::Result rc =
          api_.moduleGetFunction(&function, module, entry.name.c_str());
      if (rc == 0 && entry.sharedBytes > kDefaultSharedBytes)
        rc = api_.funcSetAttribute(
            function, cu::kFunctionAttributeMaxDynamicSharedSizeBytes,
            entry.sharedBytes);
      if (rc != 0) {
        api_.moduleUnload(module);
        return error("loading " + entry.name, rc);
      }
      functions.push_back(function);
    }
    out = {module, functions[0],
           std::vector<void *>(functions.begin() + 1, functions.end())};
    return Status::ok();
  }

  void unload(DeviceFunction &function) override {
    if (!function.module)
      return;
    ContextScope scope(api_, context_);
    if (pairGraphs_)
      pairGraphs_->forget(function.module);
    api_.moduleUnload(function.module);
    function = {};
  }

  Status launch(const DeviceFunction &function, const LaunchGeometry &g,
                void *stream, void **params) override {
    ContextScope scope(api_, context_);
    if (g.clusterX > 1 && !api_.launchKernelEx)
      return Status(StatusCode::Unsupported,
                    "a launch in thread-block clusters needs cuLaunchKernelEx "
                    "(CUDA >= 12), which this driver lacks");
    if ((g.earlyStart && earlyStart_) || g.clusterX > 1) {
      cu::LaunchAttribute attributes[2] = {};
      unsigned count = 0;
      if (g.earlyStart && earlyStart_) {
        attributes[count].id =
            cu::kLaunchAttributeProgrammaticStreamSerialization;
        attributes[count++].value.programmaticStreamSerializationAllowed = 1;
      }
      if (g.clusterX > 1) {
        attributes[count].id = cu::kLaunchAttributeClusterDimension;
        attributes[count++].value.clusterDim = {g.clusterX, 1, 1};
      }
      const cu::LaunchConfig config = {
          g.grid[0], g.grid[1], g.grid[2], g.threadsPerBlock, 1, 1,
          g.sharedBytes, stream, attributes, count};
      if (cu::Result rc =
              api_.launchKernelEx(&config, function.function, params, nullptr))
        return error("cuLaunchKernelEx", rc);
      return Status::ok();
    }
    if (cu::Result rc = api_.launchKernel(
            function.function, g.grid[0], g.grid[1], g.grid[2],
            g.threadsPerBlock, 1, 1, g.sharedBytes, stream, params, nullptr))
      return error("cuLaunchKernel", rc);
    return Status::ok();
  }

  Status launchPair(const DeviceFunction &first,
                    const LaunchGeometry &firstGeometry,
                    const DeviceFunction &second,
                    const LaunchGeometry &secondGeometry, void *stream,
                    void **params) override {
    // Under capture the two launches become the caller's graph's nodes
    // (and the stream must not be queried).
    if (pairGraphs_ && !capturing(stream)) {
      ContextScope scope(api_, context_);
      cu::Result rc = 0;
      if (pairGraphs_->launch(first, firstGeometry, second, secondGeometry,
                              stream, params, rc))
        return rc ? error("cuGraphLaunch", rc) : Status::ok();
    }
    return DeviceBackend::launchPair(first, firstGeometry, second,
                                     secondGeometry, stream, params);
  }

  bool capturing(void *stream) const override {
    ContextScope scope(api_, context_);
    int status = 1;
    return !api_.streamIsCapturing ||
           api_.streamIsCapturing(stream, &status) != 0 || status != 0;
  }

  Status encodeTensorMap(const TensorMapRequest &request,
                         void *map) const override {
    if (!api_.tensorMapEncodeTiled)
      return Status(StatusCode::Unsupported,
                    "the driver has no cuTensorMapEncodeTiled (CUDA < 12.0)");
    // The driver checks the address against the current context: without
    // this, a caller with no current context (a C++ engine thread; torch
    // makes one current) got CUDA_ERROR_INVALID_CONTEXT and cp.async.
    ContextScope scope(api_, context_);
    const unsigned elementStrides[3] = {1, 1, 1};
    if (cu::Result rc = api_.tensorMapEncodeTiled(
            map, cu::kTensorMapDataTypeUint16, 3,
            const_cast<void *>(request.base), request.sizes, request.strides,
            request.box, elementStrides, cu::kTensorMapInterleaveNone,
            cu::kTensorMapSwizzle128B, cu::kTensorMapL2Promotion256B,
            cu::kTensorMapOOBFillNone))
      return error("cuTensorMapEncodeTiled", rc);
    return Status::ok();
  }

  Status allocate(size_t bytes, void *&ptr) override {
    ContextScope scope(api_, context_);
    cu::DevicePtr device = 0;
    if (cu::Result rc = api_.memAlloc(&device, bytes))
      return error("cuMemAlloc", rc);
    ptr = reinterpret_cast<void *>(device);
    return Status::ok();
  }

  Status release(void *ptr) override {
    ContextScope scope(api_, context_);
    if (cu::Result rc = api_.memFree(reinterpret_cast<cu::DevicePtr>(ptr)))
      return error("cuMemFree", rc);
    return Status::ok();
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    ContextScope scope(api_, context_);
    if (cu::Result rc =
            api_.memcpyHtoD(reinterpret_cast<cu::DevicePtr>(dst), src, bytes))
      return error("cuMemcpyHtoD", rc);
    return Status::ok();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    ContextScope scope(api_, context_);
    if (cu::Result rc =
            api_.memcpyDtoH(dst, reinterpret_cast<cu::DevicePtr>(src), bytes))
      return error("cuMemcpyDtoH", rc);
    return Status::ok();
  }

  Status synchronize() override {
    ContextScope scope(api_, context_);
    if (cu::Result rc = api_.ctxSynchronize())
      return error("cuCtxSynchronize", rc);
    return Status::ok();
  }

private:
  // Makes the primary context current for one call and restores the
  // caller's afterwards; free when it is current already (the usual case).
  class ContextScope {
  public:
    ContextScope(const cu::API &api, cu::Context context) : api_(api) {
      cu::Context current = nullptr;
      if (api.ctxGetCurrent(&current) == 0 && current == context)
        return;
      pushed_ = api.ctxPushCurrent(context) == 0;
    }
    ~ContextScope() {
      cu::Context ignored = nullptr;
      if (pushed_)
        api_.ctxPopCurrent(&ignored);
    }

  private:
    const cu::API &api_;
    bool pushed_ = false;
  };

  Status error(const std::string &what, cu::Result rc) const {
    return Status(StatusCode::DriverError,
                  what + " failed: " + describeError(api_, rc));
  }

  cu::API api_;
  int ordinal_;
  cu::Device device_;
  cu::Context context_;
  Arch arch_;
  std::string portableTarget_;
  std::string name_;
  int maxSharedBytes_;
  bool earlyStart_; // LaunchGeometry::earlyStart is honoured
  // Null where the driver lacks graphs or MLAGEN_LAUNCH_GRAPHS=0.
  std::unique_ptr<CudaPairGraphs> pairGraphs_;
};

Status bindDriver(const DynamicLibrary &lib, cu::API &api) {
  // Versioned names: the unsuffixed ones are the 32-bit-era ABI.
  for (Status status : {
           lib.bind("cuInit", api.init),
           lib.bind("cuDeviceGetCount", api.deviceGetCount),
           lib.bind("cuDeviceGet", api.deviceGet),
           lib.bind("cuDeviceGetAttribute", api.deviceGetAttribute),
           lib.bind("cuDeviceGetName", api.deviceGetName),
           lib.bind("cuDevicePrimaryCtxRetain", api.devicePrimaryCtxRetain),
           lib.bind("cuDevicePrimaryCtxRelease_v2",
                    api.devicePrimaryCtxRelease),
           lib.bind("cuCtxGetCurrent", api.ctxGetCurrent),
           lib.bind("cuCtxPushCurrent_v2", api.ctxPushCurrent),
           lib.bind("cuCtxPopCurrent_v2", api.ctxPopCurrent),
           lib.bind("cuCtxSynchronize", api.ctxSynchronize),
           lib.bind("cuModuleLoadData", api.moduleLoadData),
           lib.bind("cuModuleUnload", api.moduleUnload),
           lib.bind("cuModuleGetFunction", api.moduleGetFunction),
           lib.bind("cuFuncSetAttribute", api.funcSetAttribute),
           lib.bind("cuLaunchKernel", api.launchKernel),
           lib.bind("cuMemAlloc_v2", api.memAlloc),
           lib.bind("cuMemFree_v2", api.memFree),
           lib.bind("cuMemcpyHtoD_v2", api.memcpyHtoD),
           lib.bind("cuMemcpyDtoH_v2", api.memcpyDtoH),
           lib.bind("cuGetErrorName", api.getErrorName),
           lib.bind("cuGetErrorString", api.getErrorString),
       })
    if (!status)
      return status;
  // Optional: null where this driver lacks them.
  auto optional = [&](const char *name, auto &function) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        lib.lookup(name));
  };
  optional("cuLaunchKernelEx", api.launchKernelEx);
  optional("cuTensorMapEncodeTiled", api.tensorMapEncodeTiled);
  optional("cuStreamIsCapturing", api.streamIsCapturing);
  optional("cuStreamQuery", api.streamQuery);
  // Launch graphs (CudaPairGraphs::usable wants them all).
  optional("cuGraphCreate", api.graphCreate);
  optional("cuGraphDestroy", api.graphDestroy);
  optional("cuGraphAddKernelNode_v2", api.graphAddKernelNode);
  optional("cuGraphKernelNodeSetAttribute", api.graphKernelNodeSetAttribute);
  optional("cuGraphAddDependencies_v2", api.graphAddDependencies);
  optional("cuGraphInstantiateWithFlags", api.graphInstantiate);
  optional("cuGraphExecDestroy", api.graphExecDestroy);
  optional("cuGraphExecKernelNodeSetParams_v2",
           api.graphExecKernelNodeSetParams);
  optional("cuGraphLaunch", api.graphLaunch);
  return Status::ok();
}

} // namespace

Status openCudaBackend(int ordinal, std::unique_ptr<DeviceBackend> &out) {
  DynamicLibrary lib;
  if (Status status = DynamicLibrary::open({"libcuda.so.1"}, lib); !status)
    return status;
  cu::API api;
  if (Status status = bindDriver(lib, api); !status)
    return status;

  auto noBackend = [&](const std::string &what, cu::Result rc) {
    return Status(StatusCode::NoBackend, lib.path() + ": " + what +
                                             " failed: " +
                                             describeError(api, rc));
  };
  if (cu::Result rc = api.init(0))
    return noBackend("cuInit", rc);
  int count = 0;
  if (cu::Result rc = api.deviceGetCount(&count))
    return noBackend("cuDeviceGetCount", rc);
  if (ordinal < 0 || ordinal >= count)
    return Status(StatusCode::NoBackend,
                  "cuda device " + std::to_string(ordinal) +
                      " requested; the driver sees " + std::to_string(count));
  cu::Device device = 0;
  if (cu::Result rc = api.deviceGet(&device, ordinal))
    return noBackend("cuDeviceGet", rc);

  int major = 0, minor = 0, maxShared = 0;
  char name[256] = {};
  if (cu::Result rc = api.deviceGetAttribute(
          &major, cu::kAttributeComputeCapabilityMajor, device))
    return noBackend("cuDeviceGetAttribute", rc);
  api.deviceGetAttribute(&minor, cu::kAttributeComputeCapabilityMinor, device);
  api.deviceGetAttribute(&maxShared, cu::kAttributeMaxSharedMemoryPerBlockOptin,
                         device);
  api.deviceGetName(name, sizeof(name) - 1, device);

  // sm_90a kernels run only on 9.0; the portable sm_80 kernels on every
  // device from 8.0 on (sm_80 SASS on 8.x, the device's own SASS after).
  if (major < 8)
    return Status(StatusCode::Unsupported,
                  "cuda device " + std::to_string(ordinal) + " (" + name +
                      ") has compute capability " + std::to_string(major) +
                      "." + std::to_string(minor) +
                      "; mlagen needs 8.0 or later (sm_80 kernels; sm_90a "
                      "on 9.0)");

  cu::Context context = nullptr;
  if (cu::Result rc = api.devicePrimaryCtxRetain(&context, device))
    return noBackend("cuDevicePrimaryCtxRetain", rc);
  out = std::make_unique<CudaBackend>(api, ordinal, device, context,
                                      10 * major + minor, name, maxShared);
  return Status::ok();
}

Status openDeviceBackend(BackendKind kind, int device,
                         std::unique_ptr<DeviceBackend> &out) {
  switch (kind) {
  case BackendKind::CUDA:
    return openCudaBackend(device, out);
  case BackendKind::HIP:
    return openHipBackend(device, out);
  case BackendKind::None:
    return Status(StatusCode::NoBackend, "no GPU backend: compile-only");
  case BackendKind::Auto:
    break;
  }
  Status cuda = openCudaBackend(device, out);
  if (cuda || cuda.code() != StatusCode::NoBackend)
    return cuda;
  Status hip = openHipBackend(device, out);
  if (hip || hip.code() != StatusCode::NoBackend)
    return hip;
  return Status(StatusCode::NoBackend,
                "no GPU backend: " + cuda.message() + "; " + hip.message());
}

} // namespace mlagen

