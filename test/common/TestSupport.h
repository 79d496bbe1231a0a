//===- TestSupport.h - fakes and fixtures for runtime tests ----*- C++ -*-===//
#ifndef MLAGEN_TEST_COMMON_TESTSUPPORT_H
#define MLAGEN_TEST_COMMON_TESTSUPPORT_H

#include "mlagen/Runtime/Runtime.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace mlagen::test {

// A kernel every compiler accepts: NVRTC and hiprtc define __global__,
// clang -nogpuinc does not.
extern const char *const kTrivialKernelSource;

// A SourceGenerator that returns kTrivialKernelSource (or `source`) and
// counts its calls, optionally slowly, so that racing threads pile up.
class CountingGenerator final : public SourceGenerator {
public:
  explicit CountingGenerator(std::string identity = "fake-generator/1")
      : identity_(std::move(identity)) {}

  Status generate(const Signature &sig, GeneratedKernel &out) override;
  std::string identity() const override { return identity_; }

  int calls() const { return calls_.load(); }
  // The most calls that were inside generate() at one time.
  int mostAtOnce() const { return mostAtOnce_.load(); }
  std::chrono::milliseconds delay{0};
  std::string source = kTrivialKernelSource;
  std::string entryName = "mlagen_test_kernel";
  int threadsPerBlock = 128;
  int sharedBytes = 0;
  int tileQ = 0;     // 0: the signature's tile_q, or 64 when it pins none
  // Prefill and decode signatures get tileK (or the pinned tile_k); decode
  // ones also padded heads (0: the signature's) and one reduce entry of
  // threadsPerBlock threads.
  int tileK = 64;
  int paddedHeads = 0;
  int clusterParts = 1; // decode: chunks merged inside a cluster
  bool fail = false; // return GeneratorError instead

private:
  std::string identity_;
  std::atomic<int> calls_{0};
  std::atomic<int> inside_{0}, mostAtOnce_{0};
};

// Collects runtime warnings; thread-safe.
class WarningLog {
public:
  std::function<void(const std::string &)> sink();
  std::vector<std::string> messages() const;
  size_t count() const { return messages().size(); }

private:
  struct State {
    mutable std::mutex mutex;
    std::vector<std::string> messages;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// A fresh directory under /tmp, removed with its contents.
class ScratchDirectory {
public:
  ScratchDirectory();
  ~ScratchDirectory();
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

// An arch some installed compiler can build (sm_90a with NVRTC, else
// gfx942 with clang-22), with the reason when there is none.
struct CompileTarget {
  std::optional<Arch> arch;
  std::string whyNot;
};
CompileTarget findCompileTarget();

// The arch the GPU tests build for on a device whose own is `device`:
// MLAGEN_TEST_ARCH where set (sm_80 on a 9.0 device runs the portable
// kernels there), else `device`. Throws std::invalid_argument, naming the
// value, when the variable names no arch or one of the other vendor's.
Arch gpuTestArch(Arch device);

// A signature of the given arch with test-friendly defaults.
Signature testSignature(Arch arch, int headDimQK = 192);

// <root>/v<kCacheFormatVersion>, where a cache root keeps its entries.
std::string cacheVersionDir(const std::string &root);

// The *.entry files of a cache root.
std::vector<std::string> cacheEntries(const std::string &root);

// The member declarations of `struct NAME {` in the embedded template
// `path`, without comments or whitespace ("constvoid*q", ...); empty if the
// template or the struct is missing. Tests pin a kernel's parameter block
// to its host mirror with it.
std::vector<std::string> templateStructDeclarations(const std::string &path,
                                                    const std::string &name);

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_TESTSUPPORT_H
