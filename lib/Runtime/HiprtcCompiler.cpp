//===- HiprtcCompiler.cpp - hsaco for gfx90a with hiprtc, in process ------===//
//
// ROCm 5.2's hiprtc aborts the whole process when asked for gfx94x, so this
// compiler targets gfx90a only and refuses the rest before calling hiprtc;
// gfx942 and gfx950 go to clang-22 (ClangCompiler.cpp).
//
//===----------------------------------------------------------------------===//

#include "DeviceCompiler.h"
#include "DriverAPI.h"
#include "DynamicLibrary.h"

#include <mutex>
#include <vector>

namespace mlagen {
namespace {

class HiprtcCompiler final : public DeviceCompiler {
public:
  HiprtcCompiler(const hiprtc::API &api, std::string version)
      : api_(api), version_(std::move(version)) {}

  std::string identity() const override { return "hiprtc " + version_; }

  std::string flags(Arch arch) const override {
    return std::string("--offload-arch=") + archName(arch) + " -O3 -std=c++17";
  }

  Status checkTarget(Arch arch) const override {
    if (arch == Arch::GFX90A)
      return Status::ok();
    if (isAMD(arch))
      return Status(StatusCode::Unsupported,
                    std::string("hiprtc cannot target ") + archName(arch) +
                        ": ROCm 5.2's hiprtc aborts the process for gfx94x, "
                        "so gfx942 and gfx950 are compiled with clang only");
    return Status(StatusCode::Unsupported,
                  std::string("hiprtc cannot target ") + archName(arch) +
                      ": it compiles for AMD GPUs only");
  }

  Status compile(const GeneratedKernel &kernel, Arch arch,
                 std::string &binary) override {
    if (Status status = checkTarget(arch); !status)
      return status;
    // hiprtc 5.2 does not promise thread safety; compiles are rare.
    std::lock_guard<std::mutex> lock(mutex_);
    hiprtc::Program program = nullptr;
    if (hiprtc::Result rc = api_.createProgram(
            &program, kernel.source.c_str(),
            (kernel.entryName + ".hip").c_str(), 0, nullptr, nullptr))
      return failure("hiprtcCreateProgram", rc, "");

    std::string archOption = std::string("--offload-arch=") + archName(arch);
    std::vector<const char *> argv = {archOption.c_str(), "-O3", "-std=c++17"};
    hiprtc::Result rc = api_.compileProgram(
        program, static_cast<int>(argv.size()), argv.data());
    std::string log = programLog(program);
    size_t size = 0;
    if (rc == 0)
      rc = api_.getCodeSize(program, &size);
    if (rc == 0) {
      binary.assign(size, '\0');
      rc = api_.getCode(program, binary.data());
    }
    api_.destroyProgram(&program);
    if (rc != 0)
      return failure(std::string("compiling ") + kernel.entryName + " for " +
                         archName(arch),
                     rc, log);
    return Status::ok();
  }

private:
  std::string programLog(hiprtc::Program program) const {
    size_t size = 0;
    if (api_.getProgramLogSize(program, &size) != 0 || size == 0)
      return "";
    std::string log(size, '\0');
    if (api_.getProgramLog(program, log.data()) != 0)
      return "";
    while (!log.empty() && log.back() == '\0')
      log.pop_back();
    return log;
  }

  Status failure(const std::string &what, hiprtc::Result rc,
                 const std::string &log) const {
    const char *text = api_.getErrorString(rc);
    std::string message = "hiprtc " + version_ + " failed " + what + ": " +
                          (text ? text : "error " + std::to_string(rc));
    if (!log.empty())
      message += "\n" + log;
    return Status(StatusCode::CompileError, message);
  }

  hiprtc::API api_;
  std::string version_;
  std::mutex mutex_;
};

} // namespace

Status loadHiprtcCompiler(std::unique_ptr<DeviceCompiler> &out) {
  // ROCm 5.x ships hiprtc inside libamdhip64; ROCm 6 split it out.
  DynamicLibrary library;
  if (Status status = DynamicLibrary::open(
          {"libamdhip64.so.5", "libhiprtc.so.6", "libhiprtc.so.7"}, library);
      !status)
    return status;

  hiprtc::API api;
  for (Status status : {
           library.bind("hiprtcCreateProgram", api.createProgram),
           library.bind("hiprtcCompileProgram", api.compileProgram),
           library.bind("hiprtcDestroyProgram", api.destroyProgram),
           library.bind("hiprtcGetProgramLogSize", api.getProgramLogSize),
           library.bind("hiprtcGetProgramLog", api.getProgramLog),
           library.bind("hiprtcGetCodeSize", api.getCodeSize),
           library.bind("hiprtcGetCode", api.getCode),
           library.bind("hiprtcGetErrorString", api.getErrorString),
       })
    if (!status)
      return status;

  // hiprtcVersion reports the compiler's own numbering (9.0 in ROCm 5.2);
  // the HIP runtime version, where the library has it, names the release.
  std::string version;
  int (*hiprtcVersion)(int *, int *) = nullptr;
  int (*hipRuntimeGetVersion)(int *) = nullptr;
  int major = 0, minor = 0, runtime = 0;
  if (library.bind("hiprtcVersion", hiprtcVersion) &&
      hiprtcVersion(&major, &minor) == 0)
    version = std::to_string(major) + "." + std::to_string(minor);
  if (library.bind("hipRuntimeGetVersion", hipRuntimeGetVersion) &&
      hipRuntimeGetVersion(&runtime) == 0)
    version += " hip " + std::to_string(runtime);
  version += " (" + library.path() + ")";
  out = std::make_unique<HiprtcCompiler>(api, version);
  return Status::ok();
}

} // namespace mlagen
