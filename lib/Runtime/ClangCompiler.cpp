//===- ClangCompiler.cpp - hsaco for gfx90a/gfx942/gfx950 with clang-22 ---===//
//
// clang-22 runs as a subprocess on a source file in a temporary directory:
// it is the compiler for gfx942 and gfx950 (hiprtc of ROCm 5.2 cannot do
// them) and the fallback for gfx90a. The kernel source includes nothing, so
// -nogpuinc -nogpulib: no ROCm installation is needed.
//
//===----------------------------------------------------------------------===//

#include "DeviceCompiler.h"
#include "Process.h"

#include <cstdlib>
#include <filesystem>

namespace mlagen {
namespace {

class ClangCompiler final : public DeviceCompiler {
public:
  ClangCompiler(std::string clang, std::string linker, std::string version)
      : clang_(std::move(clang)), linker_(std::move(linker)),
        version_(std::move(version)) {}

  std::string identity() const override { return "clang " + version_; }

  std::string flags(Arch arch) const override {
    std::string joined;
    for (const std::string &option : options(arch))
      joined += (joined.empty() ? "" : " ") + option;
    return joined;
  }

  Status checkTarget(Arch arch) const override {
    if (isAMD(arch))
      return Status::ok();
    return Status(StatusCode::Unsupported,
                  std::string("clang cannot target ") + archName(arch) +
                      " here: mlagen uses it for AMD GPUs only (NVIDIA "
                      "kernels compile with nvrtc)");
  }

  Status compile(const GeneratedKernel &kernel, Arch arch,
                 std::string &binary) override {
    if (Status status = checkTarget(arch); !status)
      return status;
    TempDir dir;
    if (Status status = dir.create("mlagen-clang"); !status)
      return status;
    std::string source = dir.path() + "/kernel.hip";
    std::string object = dir.path() + "/kernel.hsaco";
    if (Status status = writeFile(source, kernel.source); !status)
      return status;

    std::vector<std::string> argv = {clang_};
    for (const std::string &option : options(arch))
      argv.push_back(option);
    if (!linker_.empty())
      argv.push_back("--ld-path=" + linker_);
    argv.insert(argv.end(), {source, "-o", object});

    int exitCode = 0;
    std::string log;
    if (Status status = runProcess(argv, exitCode, log); !status)
      return status;
    if (exitCode != 0)
      return Status(StatusCode::CompileError,
                    clang_ + " failed compiling " + kernel.entryName +
                        " for " + archName(arch) + " (exit " +
                        std::to_string(exitCode) + ")\n" + log);
    return readFile(object, binary);
  }

private:
  static std::vector<std::string> options(Arch arch) {
    return {"-x",
            "hip",
            std::string("--offload-arch=") + archName(arch),
            "--cuda-device-only",
            "--no-gpu-bundle-output",
            "-nogpulib",
            "-nogpuinc",
            "-O3",
            "-std=c++17"};
  }

  std::string clang_, linker_, version_;
};

// The ld.lld beside the real clang binary (/usr/bin/clang++-22 is a link
// into /usr/lib/llvm-22/bin), else LLVM 22's; empty lets clang search.
std::string findLinker(const std::string &clang) {
  std::error_code error;
  std::filesystem::path real = std::filesystem::canonical(clang, error);
  if (!error) {
    std::string sibling = (real.parent_path() / "ld.lld").string();
    if (isExecutable(sibling))
      return sibling;
  }
  const char *llvm22 = "/usr/lib/llvm-22/bin/ld.lld";
  return isExecutable(llvm22) ? llvm22 : "";
}

} // namespace

Status findClangCompiler(std::unique_ptr<DeviceCompiler> &out) {
  std::string clang;
  if (const char *env = std::getenv("MLAGEN_CLANG"); env && *env) {
    if (!isExecutable(env))
      return Status(StatusCode::NoBackend,
                    std::string("MLAGEN_CLANG=") + env +
                        " is not an executable");
    clang = env;
  } else {
    clang = findOnPath("clang++-22");
    if (clang.empty() && isExecutable("/usr/lib/llvm-22/bin/clang++"))
      clang = "/usr/lib/llvm-22/bin/clang++";
  }
  if (clang.empty())
    return Status(StatusCode::NoBackend,
                  "clang++-22 not found (MLAGEN_CLANG unset, not on PATH, "
                  "no /usr/lib/llvm-22/bin/clang++)");

  int exitCode = 0;
  std::string output;
  if (Status status = runProcess({clang, "--version"}, exitCode, output);
      !status)
    return Status(StatusCode::NoBackend, status.message());
  std::string version = output.substr(0, output.find('\n'));
  if (exitCode != 0 || version.empty())
    return Status(StatusCode::NoBackend,
                  clang + " --version failed (exit " +
                      std::to_string(exitCode) + ")");
  out = std::make_unique<ClangCompiler>(clang, findLinker(clang), version);
  return Status::ok();
}

} // namespace mlagen
