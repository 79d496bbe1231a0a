//===- HipBackend.cpp - AMD GPUs through libamdhip64 ----------------------===//
//
// Module API only (hipModuleLoadData / hipModuleLaunchKernel): it takes an
// hsaco from hiprtc or clang and needs no HIP headers to call.
//
//===----------------------------------------------------------------------===//

#include "DeviceBackend.h"
#include "DriverAPI.h"
#include "DynamicLibrary.h"

#include <cctype>
#include <cstring>
#include <vector>

namespace mlagen {
namespace {

std::string describeError(const hip::API &api, hip::Error rc) {
  const char *text = api.getErrorString(rc);
  return text ? text : "HIP error " + std::to_string(rc);
}

class HipBackend final : public DeviceBackend {
public:
  HipBackend(const hip::API &api, int device, Arch arch, std::string name)
      : api_(api), device_(device), arch_(arch), name_(std::move(name)) {}

  BackendKind kind() const override { return BackendKind::HIP; }
  Arch arch() const override { return arch_; }
  std::string description() const override {
    return "hip device " + std::to_string(device_) + ": " + name_ + " (" +
           archName(arch_) + ")";
  }

  // AMD needs no opt-in for dynamic LDS: the launch asks for it.
  Status load(const CodeObject &code, DeviceFunction &out) override {
    DeviceScope scope(api_, device_);
    hip::Module module = nullptr;
    if (hip::Error rc = api_.moduleLoadData(&module, code.binary.data()))
      return error("hipModuleLoadData", rc);
    std::vector<std::string> names = {code.entryName};
    for (const KernelEntry &entry : code.extraEntries)
      names.push_back(entry.name);
    std::vector<void *> functions;
    for (const std::string &name : names) {
      hip::Function function = nullptr;
      if (hip::Error rc =
              api_.moduleGetFunction(&function, module, name.c_str())) {
        api_.moduleUnload(module);
        return error("hipModuleGetFunction " + name, rc);
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
    DeviceScope scope(api_, device_);
    api_.moduleUnload(function.module);
    function = {};
  }

  Status launch(const DeviceFunction &function, const LaunchGeometry &g,
                void *stream, void **params) override {
    DeviceScope scope(api_, device_);
    if (g.clusterX > 1)
      return Status(StatusCode::Unsupported,
                    "the HIP backend launches no thread-block clusters (asked "
                    "for " +
                        std::to_string(g.clusterX) + " blocks)");
    if (hip::Error rc = api_.moduleLaunchKernel(
            function.function, g.grid[0], g.grid[1], g.grid[2],
            g.threadsPerBlock, 1, 1, g.sharedBytes, stream, params, nullptr))
      return error("hipModuleLaunchKernel", rc);
    return Status::ok();
  }

  bool capturing(void *stream) const override {
    DeviceScope scope(api_, device_);
    int status = 1;
    return !api_.streamIsCapturing ||
           api_.streamIsCapturing(stream, &status) != 0 || status != 0;
  }

  Status allocate(size_t bytes, void *&ptr) override {
    DeviceScope scope(api_, device_);
    if (hip::Error rc = api_.malloc(&ptr, bytes))
      return error("hipMalloc", rc);
    return Status::ok();
  }

  Status release(void *ptr) override {
    DeviceScope scope(api_, device_);
    if (hip::Error rc = api_.free(ptr))
      return error("hipFree", rc);
    return Status::ok();
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    DeviceScope scope(api_, device_);
    if (hip::Error rc = api_.memcpyHtoD(dst, const_cast<void *>(src), bytes))
      return error("hipMemcpyHtoD", rc);
    return Status::ok();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    DeviceScope scope(api_, device_);
    if (hip::Error rc = api_.memcpyDtoH(dst, const_cast<void *>(src), bytes))
      return error("hipMemcpyDtoH", rc);
    return Status::ok();
  }

  Status synchronize() override {
    DeviceScope scope(api_, device_);
    if (hip::Error rc = api_.deviceSynchronize())
      return error("hipDeviceSynchronize", rc);
    return Status::ok();
  }

private:
  // The current device is per-thread state of the caller: switch to ours
  // for one call only, and only when it differs.
  class DeviceScope {
  public:
    DeviceScope(const hip::API &api, int device) : api_(api) {
      if (api.getDevice(&previous_) == 0 && previous_ != device)
        switched_ = api.setDevice(device) == 0;
    }
    ~DeviceScope() {
      if (switched_)
        api_.setDevice(previous_);
    }

  private:
    const hip::API &api_;
    int previous_ = -1;
    bool switched_ = false;
  };

  Status error(const std::string &what, hip::Error rc) const {
    return Status(StatusCode::DriverError,
                  what + " failed: " + describeError(api_, rc));
  }

  hip::API api_;
  int device_;
  Arch arch_;
  std::string name_;
};

// hipDeviceProp_t differs between ROCm releases, and no header is used to
// build: find gcnArchName ("gfx942:sramecc+:xnack-") by its content. It is
// the only field that holds a NUL-preceded "gfx" + hex digits token.
std::string findGcnArchName(const std::vector<char> &properties) {
  for (size_t i = 0; i + 8 < properties.size(); ++i) {
    if ((i != 0 && properties[i - 1] != '\0') ||
        std::strncmp(&properties[i], "gfx", 3) != 0)
      continue;
    size_t end = i + 3;
    while (end < properties.size() &&
           std::isalnum(static_cast<unsigned char>(properties[end])))
      ++end;
    if (end > i + 3 && end < properties.size() &&
        (properties[end] == '\0' || properties[end] == ':'))
      return std::string(&properties[i], end - i);
  }
  return "";
}

Status bindHip(const DynamicLibrary &lib, hip::API &api) {
  for (Status status : {
           lib.bind("hipInit", api.init),
           lib.bind("hipGetDeviceCount", api.getDeviceCount),
           lib.bind("hipGetDevice", api.getDevice),
           lib.bind("hipSetDevice", api.setDevice),
           lib.bind("hipGetDeviceProperties", api.getDeviceProperties),
           lib.bind("hipModuleLoadData", api.moduleLoadData),
           lib.bind("hipModuleUnload", api.moduleUnload),
           lib.bind("hipModuleGetFunction", api.moduleGetFunction),
           lib.bind("hipModuleLaunchKernel", api.moduleLaunchKernel),
           lib.bind("hipMalloc", api.malloc),
           lib.bind("hipFree", api.free),
           lib.bind("hipMemcpyHtoD", api.memcpyHtoD),
           lib.bind("hipMemcpyDtoH", api.memcpyDtoH),
           lib.bind("hipDeviceSynchronize", api.deviceSynchronize),
           lib.bind("hipGetErrorString", api.getErrorString),
       })
    if (!status)
      return status;
  api.streamIsCapturing = reinterpret_cast<decltype(api.streamIsCapturing)>(
      lib.lookup("hipStreamIsCapturing"));
  return Status::ok();
}

} // namespace

Status openHipBackend(int device, std::unique_ptr<DeviceBackend> &out) {
  DynamicLibrary lib;
  if (Status status = DynamicLibrary::open(
          {"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so.7"}, lib);
      !status)
    return status;
  hip::API api;
  if (Status status = bindHip(lib, api); !status)
    return status;

  auto noBackend = [&](const std::string &what, hip::Error rc) {
    return Status(StatusCode::NoBackend, lib.path() + ": " + what +
                                             " failed: " +
                                             describeError(api, rc));
  };
  if (hip::Error rc = api.init(0))
    return noBackend("hipInit", rc);
  int count = 0;
  if (hip::Error rc = api.getDeviceCount(&count))
    return noBackend("hipGetDeviceCount", rc);
  if (device < 0 || device >= count)
    return Status(StatusCode::NoBackend,
                  "hip device " + std::to_string(device) +
                      " requested; the driver sees " + std::to_string(count));

  std::vector<char> properties(16384, '\0'); // far larger than any layout
  if (hip::Error rc = api.getDeviceProperties(properties.data(), device))
    return noBackend("hipGetDeviceProperties", rc);
  std::string name(properties.data(), strnlen(properties.data(), 255));
  std::string gcnArch = findGcnArchName(properties);
  Arch arch;
  if (!parseArch(gcnArch, arch) || !isAMD(arch))
    return Status(StatusCode::Unsupported,
                  "hip device " + std::to_string(device) + " (" + name +
                      ") is " + (gcnArch.empty() ? "an unknown gfx" : gcnArch) +
                      "; mlagen targets gfx90a, gfx942 and gfx950");
  out = std::make_unique<HipBackend>(api, device, arch, name);
  return Status::ok();
}

} // namespace mlagen
