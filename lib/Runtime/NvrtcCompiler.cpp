//===- NvrtcCompiler.cpp - cubins for sm_80 / sm_90a with NVRTC -----------===//
//
// The portable sm_80 kernels are compiled for sm_80 by default, whose SASS
// runs on every 8.x device; for a device from 9.0 on, whose runtime names
// its own target (sm_90, sm_100, sm_120), for that target instead.
//
// NVRTC is called through dlsym'd pointers rather than hiprtc's NVIDIA path:
// that path is a set of inline renames over the same functions, it returns
// PTX where a cubin is wanted (nvrtcGetCUBIN is needed anyway), and it would
// make building depend on cuda.h and nvrtc.h. NVRTC needs no GPU, so a
// CPU-only machine with CUDA installed builds cubins too.
//
//===----------------------------------------------------------------------===//

#include "DeviceCompiler.h"
#include "DriverAPI.h"
#include "DynamicLibrary.h"

#include <cstdlib>
#include <vector>

namespace mlagen {
namespace {

class NvrtcCompiler final : public DeviceCompiler {
public:
  NvrtcCompiler(const nvrtc::API &api, int major, int minor,
                std::string portableTarget)
      : api_(api), version_(std::to_string(major) + "." + std::to_string(minor)),
        portableTarget_(std::move(portableTarget)),
        splitThreads_(splitThreadsFromEnvironment()) {}

  std::string identity() const override { return "nvrtc " + version_; }

  std::string flags(Arch arch) const override {
    std::string joined;
    for (const std::string &option : options(arch))
      joined += (joined.empty() ? "" : " ") + option;
    return joined;
  }

  Status checkTarget(Arch arch) const override {
    if (arch == Arch::SM80 || arch == Arch::SM90A)
      return Status::ok();
    return Status(StatusCode::Unsupported,
                  std::string("nvrtc cannot target ") + archName(arch) +
                      ": it compiles for NVIDIA GPUs only");
  }

  Status compile(const GeneratedKernel &kernel, Arch arch,
                 std::string &binary) override {
    if (Status status = checkTarget(arch); !status)
      return status;
    nvrtc::Program program = nullptr;
    if (nvrtc::Result rc =
            api_.createProgram(&program, kernel.source.c_str(),
                               (kernel.entryName + ".cu").c_str(), 0, nullptr,
                               nullptr))
      return failure("nvrtcCreateProgram", rc, "");

    std::vector<std::string> owned = options(arch);
    std::vector<const char *> argv;
    for (const std::string &option : owned)
      argv.push_back(option.c_str());
    nvrtc::Result rc =
        api_.compileProgram(program, static_cast<int>(argv.size()), argv.data());
    std::string log = programLog(program);
    size_t size = 0;
    if (rc == 0)
      rc = api_.getCUBINSize(program, &size);
    if (rc == 0) {
      binary.assign(size, '\0');
      rc = api_.getCUBIN(program, binary.data());
    }
    api_.destroyProgram(&program);
    if (rc != 0)
      return failure(std::string("compiling ") + kernel.entryName + " for " +
                         archName(arch) +
                         (target(arch) != archName(arch)
                              ? " (as " + target(arch) + ")"
                              : ""),
                     rc, log);
    return Status::ok();
  }

private:
  std::string target(Arch arch) const {
    return arch == Arch::SM80 ? portableTarget_ : archName(arch);
  }

  std::vector<std::string> options(Arch arch) const {
    std::vector<std::string> list = {"--gpu-architecture=" + target(arch),
                                     "-std=c++17", "-default-device"};
    if (splitThreads_ > 1)
      list.push_back("--split-compile=" + std::to_string(splitThreads_));
    return list;
  }

  // MLAGEN_NVRTC_SPLIT_COMPILE: 1..64 threads; anything else keeps 2.
  static int splitThreadsFromEnvironment() {
    const char *text = std::getenv("MLAGEN_NVRTC_SPLIT_COMPILE");
    if (!text || !*text)
      return 2;
    char *end = nullptr;
    const long threads = std::strtol(text, &end, 10);
    return *end == '\0' && threads >= 1 && threads <= 64 ? static_cast<int>(threads) : 2;
  }

  std::string programLog(nvrtc::Program program) const {
    size_t size = 0;
    if (api_.getProgramLogSize(program, &size) != 0 || size <= 1)
      return "";
    std::string log(size, '\0');
    if (api_.getProgramLog(program, log.data()) != 0)
      return "";
    log.resize(size - 1); // drop the terminating NUL
    return log;
  }

  Status failure(const std::string &what, nvrtc::Result rc,
                 const std::string &log) const {
    const char *text = api_.getErrorString(rc);
    std::string message = "nvrtc " + version_ + " failed " + what + ": " +
                          (text ? text : "error " + std::to_string(rc));
    if (!log.empty())
      message += "\n" + log;
    return Status(StatusCode::CompileError, message);
  }

  nvrtc::API api_;
  std::string version_;
  std::string portableTarget_; // what sm_80 kernels are compiled for
  int splitThreads_;           // NVRTC's --split-compile (1: off)
};

} // namespace

Status loadNvrtcCompiler(std::unique_ptr<DeviceCompiler> &out,
                         const std::string &portableTarget) {
  DynamicLibrary library;
  if (Status status = DynamicLibrary::open(
          {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
           "/usr/local/cuda/lib64/libnvrtc.so.13"},
          library);
      !status)
    return status;

  nvrtc::API api;
  for (Status status : {
           library.bind("nvrtcVersion", api.version),
           library.bind("nvrtcCreateProgram", api.createProgram),
           library.bind("nvrtcCompileProgram", api.compileProgram),
           library.bind("nvrtcDestroyProgram", api.destroyProgram),
           library.bind("nvrtcGetProgramLogSize", api.getProgramLogSize),
           library.bind("nvrtcGetProgramLog", api.getProgramLog),
           library.bind("nvrtcGetCUBINSize", api.getCUBINSize),
           library.bind("nvrtcGetCUBIN", api.getCUBIN),
           library.bind("nvrtcGetErrorString", api.getErrorString),
       })
    if (!status)
      return status;

  int major = 0, minor = 0;
  if (api.version(&major, &minor) != 0)
    return Status(StatusCode::NoBackend,
                  library.path() + ": nvrtcVersion failed");
  out = std::make_unique<NvrtcCompiler>(api, major, minor, portableTarget);
  return Status::ok();
}

} // namespace mlagen
