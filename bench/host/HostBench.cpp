//===- HostBench.cpp - host-side costs of the runtime (issue 4) ------------===//
//
//   mlagen-host-bench
//
// Prints, for one prefill variant: a cold JIT compile (generate + NVRTC), a
// warm load from the disk cache by a new Runtime (read + checksum; plus the
// module load where a GPU exists), a cached-kernel lookup (getKernel on a
// memory hit; compile-only machines time compile() instead, which also
// copies the code object), and the host time of one runPrefill launch.
//
//===----------------------------------------------------------------------===//
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <unistd.h>

using namespace mlagen;
using Clock = std::chrono::steady_clock;

static double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

static int fail(const Status &status) {
  std::fprintf(stderr, "mlagen-host-bench: %s\n", status.toString().c_str());
  return 1;
}

static Status makeRuntime(const std::string &dir, BackendKind backend,
                          std::unique_ptr<Runtime> &out) {
  RuntimeOptions options;
  options.generator = createMLIRSourceGenerator();
  options.cacheDir = dir;
  options.backend = backend;
  return Runtime::create(options, out);
}

int main() {
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("mlagen-host-bench-" + std::to_string(::getpid())))
                        .string();
  std::unique_ptr<Runtime> runtime;
  if (Status s = makeRuntime(dir, BackendKind::Auto, runtime); !s)
    return fail(s);
  Arch arch;
  bool gpu = runtime->deviceArch(arch).isOk();
  Signature sig;
  sig.arch = gpu ? arch : Arch::SM90A;
  std::printf("backend: %s\nvariant: %s\n", runtime->backendDescription().c_str(),
              sig.canonical().c_str());

  auto start = Clock::now();
  CodeObject code;
  if (Status s = runtime->compile(sig, code); !s)
    return fail(s);
  std::printf("cold JIT compile: %.1f ms\n", seconds(start) * 1e3);

  std::vector<double> warm;
  for (int i = 0; i < 20; ++i) {
    std::unique_ptr<Runtime> fresh;
    if (Status s = makeRuntime(dir, gpu ? BackendKind::Auto : BackendKind::None,
                               fresh);
        !s)
      return fail(s);
    const Kernel *kernel = nullptr;
    start = Clock::now();
    Status s = gpu ? fresh->getKernel(sig, kernel) : fresh->compile(sig, code);
    warm.push_back(seconds(start));
    if (!s)
      return fail(s);
  }
  std::sort(warm.begin(), warm.end());
  std::printf("warm load from the disk cache%s: median %.3f ms, max %.3f ms\n",
              gpu ? " (incl. module load)" : "", warm[10] * 1e3,
              warm.back() * 1e3);

  const int lookups = 1000000;
  const Kernel *kernel = nullptr;
  if (gpu && !runtime->getKernel(sig, kernel).isOk())
    return 1;
  start = Clock::now();
  for (int i = 0; i < lookups; ++i) {
    Status s = gpu ? runtime->getKernel(sig, kernel) : runtime->compile(sig, code);
    if (!s)
      return fail(s);
  }
  std::printf("cached lookup (%s): %.1f ns\n",
              gpu ? "getKernel, memory hit" : "compile(), memory hit + copy",
              seconds(start) / lookups * 1e9);
  std::filesystem::remove_all(dir);
  return 0;
}
