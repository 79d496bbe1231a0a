//===- PrefillNumericsTest.cpp - generated prefill vs the CPU reference ---===//
//
// The MLIR generator's prefill kernels on the GPU against
// referencePrefill: bf16 inputs, MLA (192/128) and GQA (128/128) shapes,
// causal and not, varlen batches whose key lengths differ from their query
// lengths. Without a GPU it says "skipped: no GPU (<reason>)" and passes.
//
//===----------------------------------------------------------------------===//

#include "BFloat16.h"
#include "DeviceBuffer.h"
#include "ReferenceAttention.h"
#include "TestSupport.h"
#include "mlagen/Compiler/Pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <random>

using namespace mlagen;
using namespace mlagen::test;

namespace {

struct Shape {
  int headDimQK, headDimV, numQHeads, numKVHeads;
};

struct Inputs {
  std::vector<float> q, k, v; // bf16-rounded
  std::vector<uint16_t> qBits, kBits, vBits;
};

void randomBF16(size_t count, std::mt19937 &rng, std::vector<float> &values,
                std::vector<uint16_t> &bits) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  values.resize(count);
  bits.resize(count);
  for (size_t i = 0; i < count; ++i) {
    bits[i] = floatToBF16(dist(rng));
    values[i] = bf16ToFloat(bits[i]);
  }
}

std::vector<int> prefixSums(const std::vector<int> &lengths) {
  std::vector<int> sums = {0};
  for (int length : lengths)
    sums.push_back(sums.back() + length);
  return sums;
}

struct Fixture {
  ScratchDirectory cacheDir;
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<DeviceBackend> backend;
  Arch arch = Arch::SM90A;
};

// False (after saying why) when there is no GPU to run on.
bool openGpu(Fixture &fixture) {
  RuntimeOptions options;
  options.generator = createMLIRSourceGenerator();
  options.cacheDir = fixture.cacheDir.path();
  REQUIRE(options.generator != nullptr);
  REQUIRE(Runtime::create(std::move(options), fixture.runtime));
  Status device = fixture.runtime->deviceArch(fixture.arch);
  if (!device) {
    std::cout << "skipped: no GPU (" << device.message() << ")\n";
    WARN("skipped: no GPU (" << device.message() << ")");
    return false;
  }
  fixture.arch = gpuTestArch(fixture.arch);
  REQUIRE(openDeviceBackend(BackendKind::Auto, 0, fixture.backend));
  std::cout << "prefill numerics on " << fixture.runtime->backendDescription() << ", " << archName(fixture.arch) << " kernels"
            << "\n";
  return true;
}

void checkPrefill(Fixture &fixture, const Shape &shape, bool causal,
                  const std::vector<int> &seqlensQ,
                  const std::vector<int> &seqlensK) {
  Signature sig;
  sig.headDimQK = shape.headDimQK;
  sig.headDimV = shape.headDimV;
  sig.numQHeads = shape.numQHeads;
  sig.numKVHeads = shape.numKVHeads;
  sig.mask = causal ? Mask::Causal : Mask::None;
  sig.returnLSE = true;
  sig.arch = fixture.arch;
  INFO(sig.canonical());
  const Kernel *kernel = nullptr;
  REQUIRE(fixture.runtime->getKernel(sig, kernel));

  AttentionProblem problem;
  problem.headDimQK = shape.headDimQK;
  problem.headDimV = shape.headDimV;
  problem.numQHeads = shape.numQHeads;
  problem.numKVHeads = shape.numKVHeads;
  problem.causal = causal;
  problem.softmaxScale = 1.0f / std::sqrt(static_cast<float>(shape.headDimQK));
  problem.cuSeqlensQ = prefixSums(seqlensQ);
  problem.cuSeqlensK = prefixSums(seqlensK);
  const int totalQ = problem.totalQ(), totalK = problem.totalK();
  const int hq = shape.numQHeads, hkv = shape.numKVHeads;
  const int dqk = shape.headDimQK, dv = shape.headDimV;

  std::mt19937 rng(1234 + dqk + hq + (causal ? 1 : 0));
  Inputs in;
  randomBF16(size_t(totalQ) * hq * dqk, rng, in.q, in.qBits);
  randomBF16(size_t(totalK) * hkv * dqk, rng, in.k, in.kBits);
  randomBF16(size_t(totalK) * hkv * dv, rng, in.v, in.vBits);
  std::vector<float> expectedOut, expectedLSE;
  referencePrefill(problem, in.q, in.k, in.v, expectedOut, expectedLSE);

  DeviceBackend &backend = *fixture.backend;
  // k and v hold kNaNRows rows of NaN past the last sequence, and say so
  // (total_k): tiles that end past a sequence must not let them into out.
  constexpr int kNaNRows = 64;
  std::vector<uint16_t> kRows = in.kBits, vRows = in.vBits;
  kRows.resize(kRows.size() + size_t(kNaNRows) * hkv * dqk, 0x7fc0);
  vRows.resize(vRows.size() + size_t(kNaNRows) * hkv * dv, 0x7fc0);
  DeviceBuffer q(backend, in.qBits), k(backend, kRows), v(backend, vRows);
  DeviceBuffer cuQ(backend, problem.cuSeqlensQ), cuK(backend, problem.cuSeqlensK);
  // NaN everywhere first: a row the kernel forgets cannot pass.
  DeviceBuffer out(backend,
                   std::vector<uint16_t>(size_t(totalQ) * hq * dv, 0x7fc0));
  DeviceBuffer lse(backend, std::vector<float>(size_t(hq) * totalQ,
                                               std::nanf("")));

  PrefillArgs args;
  args.q = q.get();
  args.k = k.get();
  args.v = v.get();
  args.out = out.get();
  args.lse = lse.get<float>();
  args.lseHeadStride = totalQ;
  args.cuSeqlensQ = cuQ.get<int>();
  args.cuSeqlensK = cuK.get<int>();
  args.batch = static_cast<int>(seqlensQ.size());
  args.maxSeqlenQ = *std::max_element(seqlensQ.begin(), seqlensQ.end());
  args.totalK = totalK + kNaNRows; // sm_90a: K and V tiles by TMA
  REQUIRE(fixture.runtime->runPrefill(*kernel, args));
  REQUIRE(backend.synchronize());

  std::vector<uint16_t> gotOut = out.download<uint16_t>();
  std::vector<float> gotLSE = lse.download<float>();
  double maxOutError = 0.0, maxLSEError = 0.0;
  for (size_t i = 0; i < gotOut.size(); ++i) {
    double error = std::fabs(bf16ToFloat(gotOut[i]) - expectedOut[i]);
    maxOutError = std::isnan(error) ? INFINITY : std::max(maxOutError, error);
  }
  for (size_t i = 0; i < gotLSE.size(); ++i) {
    if (std::isinf(expectedLSE[i])) {
      CHECK(gotLSE[i] == expectedLSE[i]);
      continue;
    }
    double error = std::fabs(gotLSE[i] - expectedLSE[i]) /
                   std::max(1.0, std::fabs(double(expectedLSE[i])));
    maxLSEError = std::isnan(error) ? INFINITY : std::max(maxLSEError, error);
  }
  CHECK(maxOutError <= 1e-2);
  CHECK(maxLSEError <= 1e-3);

  // lse may be null: the kernel must skip the write and still produce out;
  // without total_k (cp.async on sm_90a), the same bits.
  DeviceBuffer outNoLSE(backend,
                        std::vector<uint16_t>(size_t(totalQ) * hq * dv, 0x7fc0));
  args.out = outNoLSE.get();
  args.lse = nullptr;
  args.lseHeadStride = 0;
  args.totalK = 0;
  REQUIRE(fixture.runtime->runPrefill(*kernel, args));
  REQUIRE(backend.synchronize());
  CHECK(outNoLSE.download<uint16_t>() == gotOut);

  // Host time of a launch with tensor maps (sm_90a: two cached map
  // lookups): 100 back to back stay inside the launch queue.
  args.totalK = totalK + kNaNRows;
  constexpr int kBackToBack = 100;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBackToBack; ++i)
    if (Status status = fixture.runtime->runPrefill(*kernel, args); !status)
      FAIL(status.toString());
  auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE(backend.synchronize());
  std::cout << "runPrefill host time (" << kernel->signature().canonical()
            << "): "
            << std::chrono::duration<double, std::micro>(elapsed).count() /
                   kBackToBack
            << " us per launch back to back\n";
}

} // namespace

TEST_CASE("generated prefill matches the CPU reference", "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  const std::vector<int> seqlensQ = {1, 7, 64, 300};
  const std::vector<int> longerK = {4, 7, 96, 345}; // context-chunk case
  const Shape shapes[] = {{192, 128, 16, 16}, {128, 128, 32, 8}};
  for (const Shape &shape : shapes)
    for (bool causal : {true, false})
      for (const std::vector<int> *seqlensK : {&seqlensQ, &longerK}) {
        // One fixture for all shapes: kernels compile once per signature.
        INFO((seqlensK == &seqlensQ ? "seqlens_k == seqlens_q"
                                    : "seqlens_k > seqlens_q"));
        checkPrefill(fixture, shape, causal, seqlensQ, *seqlensK);
      }
}
