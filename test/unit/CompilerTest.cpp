//===- CompilerTest.cpp - NVRTC, hiprtc and clang-22 device compilers -----===//
//
// Real compilers where installed; a missing one is a WARN saying what was
// skipped, never a silent pass.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "CompilerSelection.h"
#include "DeviceCompiler.h"
#include "EchoKernel.h"
#include "TestSupport.h"

#include <cstdlib>
#include <cstring>

using namespace mlagen;
using namespace mlagen::test;

namespace {

GeneratedKernel trivialKernel(const std::string &source = kTrivialKernelSource) {
  GeneratedKernel kernel;
  kernel.source = source;
  kernel.entryName = "mlagen_test_kernel";
  kernel.threadsPerBlock = 128;
  kernel.tileQ = 64;
  return kernel;
}

bool isELF(const std::string &binary) {
  return binary.size() > 20 && binary.compare(0, 4, "\x7f" "ELF") == 0;
}

// e_machine of a 64-bit little-endian ELF file.
unsigned elfMachine(const std::string &binary) {
  return static_cast<unsigned char>(binary[18]) |
         static_cast<unsigned char>(binary[19]) << 8;
}

constexpr unsigned kMachineCUDA = 190, kMachineAMDGPU = 224;

const char *const kBrokenSource =
    "extern \"C\" __global__ void mlagen_test_kernel() { undeclared(); }";

} // namespace

TEST_CASE("NVRTC compiles cubins for sm_80 and sm_90a", "[compiler]") {
  std::unique_ptr<DeviceCompiler> nvrtc;
  Status status = loadNvrtcCompiler(nvrtc);
  if (!status) {
    WARN("skipped: NVRTC not found (" << status.message() << ")");
    SUCCEED("NVRTC not installed");
    return;
  }
  CHECK_THAT(nvrtc->identity(), Catch::StartsWith("nvrtc "));
  for (Arch arch : {Arch::SM80, Arch::SM90A}) {
    CHECK(nvrtc->flags(arch) == std::string("--gpu-architecture=") +
                                    archName(arch) +
                                    " -std=c++17 -default-device --split-compile=2");
    std::string cubin;
    REQUIRE(nvrtc->compile(trivialKernel(), arch, cubin));
    CHECK(isELF(cubin));
    CHECK(elfMachine(cubin) == kMachineCUDA);
    CHECK(cubin.find("mlagen_test_kernel") != std::string::npos);
  }

  std::string unused;
  Status broken = nvrtc->compile(trivialKernel(kBrokenSource), Arch::SM90A,
                                 unused);
  CHECK(broken.code() == StatusCode::CompileError);
  CHECK_THAT(broken.message(), Catch::Contains("undeclared"));

  Status amd = nvrtc->compile(trivialKernel(), Arch::GFX942, unused);
  CHECK(amd.code() == StatusCode::Unsupported);
  CHECK_THAT(amd.message(), Catch::Contains("gfx942"));
}

TEST_CASE("MLAGEN_NVRTC_SPLIT_COMPILE sets NVRTC's threads, 1 turns them off",
          "[compiler]") {
  struct Case {
    const char *value;
    const char *suffix;
  };
  for (Case c : {Case{"1", ""}, Case{"4", " --split-compile=4"},
                 Case{"0", " --split-compile=2"},
                 Case{"three", " --split-compile=2"},
                 Case{"65", " --split-compile=2"}}) {
    CAPTURE(c.value);
    ::setenv("MLAGEN_NVRTC_SPLIT_COMPILE", c.value, 1);
    std::unique_ptr<DeviceCompiler> nvrtc;
    Status status = loadNvrtcCompiler(nvrtc);
    ::unsetenv("MLAGEN_NVRTC_SPLIT_COMPILE");
    if (!status) {
      WARN("skipped: NVRTC not found (" << status.message() << ")");
      SUCCEED("NVRTC not installed");
      return;
    }
    CHECK(nvrtc->flags(Arch::SM90A) ==
          std::string("--gpu-architecture=sm_90a -std=c++17 -default-device") +
              c.suffix);
    if (std::string(c.value) == "4") {
      std::string cubin;
      REQUIRE(nvrtc->compile(trivialKernel(), Arch::SM90A, cubin));
      CHECK(isELF(cubin));
    }
  }
}

TEST_CASE("NVRTC compiles the portable sm_80 kernels for a later device's "
          "own target",
          "[compiler]") {
  for (std::string target : {"sm_90", "sm_100", "sm_120"}) {
    CAPTURE(target);
    std::unique_ptr<DeviceCompiler> nvrtc;
    if (Status status = loadNvrtcCompiler(nvrtc, target); !status) {
      WARN("skipped: NVRTC not found (" << status.message() << ")");
      SUCCEED("NVRTC not installed");
      return;
    }
    CHECK(nvrtc->flags(Arch::SM80) ==
          "--gpu-architecture=" + target +
              " -std=c++17 -default-device --split-compile=2");
    CHECK(nvrtc->flags(Arch::SM90A) ==
          "--gpu-architecture=sm_90a -std=c++17 -default-device "
          "--split-compile=2");
    std::string cubin;
    REQUIRE(nvrtc->compile(trivialKernel(), Arch::SM80, cubin));
    CHECK(isELF(cubin));
    CHECK(elfMachine(cubin) == kMachineCUDA);
  }
  // A target this NVRTC does not know is named in the error.
  std::unique_ptr<DeviceCompiler> nvrtc;
  REQUIRE(loadNvrtcCompiler(nvrtc, "sm_7"));
  std::string unused;
  Status unknown = nvrtc->compile(trivialKernel(), Arch::SM80, unused);
  CHECK(unknown.code() == StatusCode::CompileError);
  CHECK_THAT(unknown.message(), Catch::Contains("for sm_80 (as sm_7)"));
}

TEST_CASE("the GPU launch test's echo kernel compiles with NVRTC",
          "[compiler]") {
  std::unique_ptr<DeviceCompiler> nvrtc;
  if (Status status = loadNvrtcCompiler(nvrtc); !status) {
    WARN("skipped: NVRTC not found (" << status.message() << ")");
    SUCCEED("NVRTC not installed");
    return;
  }
  GeneratedKernel echo = trivialKernel(kEchoKernel);
  echo.entryName = "mlagen_prefill";
  for (Arch arch : {Arch::SM80, Arch::SM90A}) {
    std::string cubin;
    CHECK(nvrtc->compile(echo, arch, cubin));
  }
}

TEST_CASE("hiprtc refuses gfx942 and gfx950 and the process lives",
          "[compiler]") {
  std::unique_ptr<DeviceCompiler> hiprtc;
  Status status = loadHiprtcCompiler(hiprtc);
  if (!status) {
    CHECK(status.code() == StatusCode::NoBackend);
    WARN("skipped: hiprtc not found (" << status.message() << ")");
    SUCCEED("hiprtc not installed");
    return;
  }
  for (Arch arch : {Arch::GFX942, Arch::GFX950}) {
    std::string binary;
    Status refused = hiprtc->compile(trivialKernel(), arch, binary);
    CHECK(refused.code() == StatusCode::Unsupported);
    CHECK_THAT(refused.message(), Catch::Contains(archName(arch)) &&
                                      Catch::Contains("clang"));
    CHECK(binary.empty());
  }
  std::string binary;
  CHECK(hiprtc->compile(trivialKernel(), Arch::SM90A, binary).code() ==
        StatusCode::Unsupported);
  SUCCEED("still running after asking hiprtc for gfx942");
}

TEST_CASE("hiprtc compiles gfx90a in process", "[compiler]") {
  std::unique_ptr<DeviceCompiler> hiprtc;
  Status status = loadHiprtcCompiler(hiprtc);
  if (!status) {
    WARN("skipped: hiprtc not found (" << status.message() << ")");
    SUCCEED("hiprtc not installed");
    return;
  }
  CHECK_THAT(hiprtc->identity(), Catch::StartsWith("hiprtc "));
  std::string hsaco;
  REQUIRE(hiprtc->compile(trivialKernel(), Arch::GFX90A, hsaco));
  CHECK(isELF(hsaco));
  CHECK(elfMachine(hsaco) == kMachineAMDGPU);

  Status broken =
      hiprtc->compile(trivialKernel(kBrokenSource), Arch::GFX90A, hsaco);
  CHECK(broken.code() == StatusCode::CompileError);
  CHECK_THAT(broken.message(), Catch::Contains("undeclared"));
}

TEST_CASE("clang-22 compiles hsaco for gfx90a, gfx942 and gfx950",
          "[compiler]") {
  std::unique_ptr<DeviceCompiler> clang;
  Status status = findClangCompiler(clang);
  if (!status) {
    WARN("skipped: clang-22 not found (" << status.message() << ")");
    SUCCEED("clang-22 not installed");
    return;
  }
  CHECK_THAT(clang->identity(), Catch::Contains("clang version"));
  CHECK_THAT(clang->flags(Arch::GFX942),
             Catch::Contains("--offload-arch=gfx942") &&
                 Catch::Contains("-nogpuinc"));
  for (Arch arch : {Arch::GFX90A, Arch::GFX942, Arch::GFX950}) {
    std::string hsaco;
    REQUIRE(clang->compile(trivialKernel(), arch, hsaco));
    CHECK(isELF(hsaco));
    CHECK(elfMachine(hsaco) == kMachineAMDGPU);
  }
  std::string unused;
  Status broken =
      clang->compile(trivialKernel(kBrokenSource), Arch::GFX942, unused);
  CHECK(broken.code() == StatusCode::CompileError);
  CHECK_THAT(broken.message(), Catch::Contains("undeclared"));
  CHECK(clang->compile(trivialKernel(), Arch::SM90A, unused).code() ==
        StatusCode::Unsupported);
}

TEST_CASE("MLAGEN_CLANG that is not a program is NoBackend", "[compiler]") {
  const char *saved = std::getenv("MLAGEN_CLANG");
  std::string previous = saved ? saved : "";
  setenv("MLAGEN_CLANG", "/nonexistent/clang++", 1);
  std::unique_ptr<DeviceCompiler> clang;
  Status status = findClangCompiler(clang);
  if (saved)
    setenv("MLAGEN_CLANG", previous.c_str(), 1);
  else
    unsetenv("MLAGEN_CLANG");
  CHECK(status.code() == StatusCode::NoBackend);
  CHECK_THAT(status.message(), Catch::Contains("MLAGEN_CLANG"));
}

TEST_CASE("compiler selection routes each arch", "[compiler]") {
  CompilerSelection automatic(CompilerKind::Auto);
  DeviceCompiler *compiler = nullptr;
  if (Status status = automatic.select(Arch::SM90A, compiler))
    CHECK_THAT(compiler->identity(), Catch::StartsWith("nvrtc"));
  else
    WARN("skipped sm_90a routing: " << status.message());
  for (Arch arch : {Arch::GFX942, Arch::GFX950}) {
    // Never hiprtc: ROCm 5.2's aborts the process for gfx94x.
    if (Status status = automatic.select(arch, compiler))
      CHECK_THAT(compiler->identity(), Catch::StartsWith("clang"));
    else
      CHECK(status.code() == StatusCode::NoBackend);
  }
  if (Status status = automatic.select(Arch::GFX90A, compiler)) {
    std::unique_ptr<DeviceCompiler> hiprtc;
    bool haveHiprtc = loadHiprtcCompiler(hiprtc).isOk();
    CHECK_THAT(compiler->identity(),
               Catch::StartsWith(haveHiprtc ? "hiprtc" : "clang"));
  }

  CompilerSelection pinned(CompilerKind::Hiprtc);
  Status status = pinned.select(Arch::GFX942, compiler);
  CHECK_FALSE(status.isOk());
  CHECK((status.code() == StatusCode::Unsupported ||
         status.code() == StatusCode::NoBackend));
}
