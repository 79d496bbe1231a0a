//===- HostBench.cpp - host-side costs of the runtime (issue 4) ----------===//
//
//   mlagen-host-bench [--variant=SIGNATURE ...] [--rounds=N]
//
// Prints, for one prefill variant: a cold JIT compile (generate + NVRTC), a
// warm load from the disk cache by a new Runtime (read + checksum; plus the
// module load where a GPU exists) and a cached-kernel lookup (getKernel on a
// memory hit; compile-only machines time compile() instead, which also
// copies the code object). Then a cold JIT of each variant the decode
// shapes run (or of each --variant given), since one prefill's compile says
// little about a decode kernel several times its size; --rounds=N repeats
// those N times and prints each variant's median. Where a GPU exists,
// last the same set cold through one getKernels call (side by side), which
// is what an engine's start-up waits for.
//
//===----------------------------------------------------------------------===//
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include <stdlib.h>

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

// The decode kernels of the targets (page 64, 16 and 128 heads; bf16,
// an fp8 cache with bf16 q, fp8 q) and the paged GQA decode, for `arch`.
static std::vector<std::string> decodeVariants(const std::string &arch) {
  std::vector<std::string> out;
  for (int heads : {16, 128})
    for (const char *types :
         {"q=bf16 kv=bf16", "q=bf16 kv=fp8e4m3", "q=fp8e4m3 kv=fp8e4m3"})
      out.push_back("decode qk=576 v=512 hq=" + std::to_string(heads) +
                    " q_len=1 page=64 mask=causal lse=1 " + types +
                    " out=bf16 arch=" + arch);
  out.push_back("paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 arch=" + arch);
  return out;
}

// A cold compile of each variant into a cache directory of its own, `rounds`
// times over the set (a host's compile times move by 20% and more from run
// to run, so one round says little about a 10% change); adds the variants'
// median times to `total`.
static int coldCompiles(const std::vector<Signature> &variants,
                        const std::string &dir, int rounds, double &total) {
  std::vector<std::vector<double>> times(variants.size());
  for (int round = 1; round <= rounds; ++round)
    for (size_t i = 0; i < variants.size(); ++i) {
      std::unique_ptr<Runtime> fresh;
      if (Status s = makeRuntime(dir, BackendKind::None, fresh); !s)
        return fail(s);
      CodeObject code;
      auto start = Clock::now();
      if (Status s = fresh->compile(variants[i], code); !s)
        return fail(s);
      times[i].push_back(seconds(start));
      std::printf("cold JIT compile%s: %8.1f ms  %7zu bytes  %s\n",
                  rounds > 1 ? (" (round " + std::to_string(round) + ")").c_str()
                             : "",
                  times[i].back() * 1e3, code.binary.size(),
                  variants[i].canonical().c_str());
      std::filesystem::remove_all(dir);
    }
  for (size_t i = 0; i < variants.size(); ++i) {
    std::vector<double> &t = times[i];
    std::sort(t.begin(), t.end());
    const double median = t.size() % 2 ? t[t.size() / 2]
                                       : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
    total += median;
    if (rounds > 1)
      std::printf("cold JIT compile, median of %d: %8.1f ms (%.1f-%.1f)  %s\n",
                  rounds, median * 1e3, t.front() * 1e3, t.back() * 1e3,
                  variants[i].canonical().c_str());
  }
  return 0;
}

// The same set fetched cold by one getKernels call (compiles side by side,
// a thread a core), as an engine starting up would ask for it.
static int coldSet(const std::vector<Signature> &variants,
                   const std::string &dir, double serial) {
  std::unique_ptr<Runtime> fresh;
  if (Status s = makeRuntime(dir, BackendKind::Auto, fresh); !s)
    return fail(s);
  std::vector<const Kernel *> kernels;
  auto start = Clock::now();
  if (Status s = fresh->getKernels(variants, kernels); !s)
    return fail(s);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf("cold getKernels of those %zu kernels at once (%zu threads): "
              "%.1f ms; one after another they took %.1f ms\n",
              variants.size(), std::min<size_t>(variants.size(), cores),
              seconds(start) * 1e3, serial * 1e3);
  std::filesystem::remove_all(dir);
  return 0;
}

// Parses each text; an error names the first bad one.
static Status parseAll(const std::vector<std::string> &texts,
                       std::vector<Signature> &out) {
  for (const std::string &text : texts) {
    Signature sig;
    if (Status s = parseSignature(text, sig); !s)
      return s;
    out.push_back(sig);
  }
  return Status::ok();
}

int main(int argc, char **argv) {
  // NVRTC 12.9+ keeps compiled programs in the CUDA driver's compute cache
  // across processes where a driver is present ("[nvrtc cache]" in its
  // library; CUDA_CACHE_DISABLE turns it off), so a "cold" compile could
  // time a hit of an earlier process's. Set before NVRTC's first call.
  ::setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/1);
  std::vector<std::string> texts;
  int rounds = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--variant=", 0) == 0) {
      texts.push_back(arg.substr(10));
      continue;
    }
    char *end = nullptr;
    const long n = arg.rfind("--rounds=", 0) == 0
                       ? std::strtol(arg.c_str() + 9, &end, 10)
                       : 0;
    if (n < 1 || n > 100 || *end != '\0') {
      std::fprintf(stderr, "usage: mlagen-host-bench [--variant=SIGNATURE ...] "
                           "[--rounds=1..100]\n");
      return 2;
    }
    rounds = static_cast<int>(n);
  }
  std::vector<Signature> variants;
  if (Status s = parseAll(texts, variants); !s)
    return fail(s);
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
  std::printf("backend: %s\nvariant: %s\n",
              runtime->backendDescription().c_str(), sig.canonical().c_str());

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
    Status s =
        gpu ? runtime->getKernel(sig, kernel) : runtime->compile(sig, code);
    if (!s)
      return fail(s);
  }
  std::printf("cached lookup (%s): %.1f ns\n",
              gpu ? "getKernel, memory hit" : "compile(), memory hit + copy",
              seconds(start) / lookups * 1e9);
  std::filesystem::remove_all(dir);
  if (variants.empty())
    if (Status s = parseAll(decodeVariants(archName(sig.arch)), variants); !s)
      return fail(s);
  double serial = 0;
  if (int rc = coldCompiles(variants, dir + "-cold", rounds, serial))
    return rc;
  // The set fetched at once times kernels this device runs (--variant may
  // name another arch: compiled above, not loadable here).
  bool runnable = gpu;
  for (const Signature &v : variants)
    runnable = runnable && v.arch == sig.arch;
  if (!runnable) {
    std::printf("cold getKernels of the set: skipped, %s\n",
                gpu ? "not every variant is for this device's arch"
                    : "no device");
    return 0;
  }
  return coldSet(variants, dir + "-set", serial);
}
