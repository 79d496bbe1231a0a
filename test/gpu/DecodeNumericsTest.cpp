//===- DecodeNumericsTest.cpp - generated decode vs the CPU reference -----===//
//
// The MLIR generator's absorbed MLA decode kernels (576/512, paged) on the
// GPU against referenceDecode: bf16 inputs, 8, 16 and 128 heads, one and four
// query tokens, pages of 1 and 64 keys in a shuffled cache, ragged sequence
// lengths (0 included), plans that split requests into many chunks and
// plans that split none. A batch-invariant kernel gives a request the same
// bits alone and inside a batch. An element passes when |got - ref| <=
// max(1e-2, 1.01 |ref - bf16(ref)|, 2 max |emulated - ref|), an LSE at
// relative error <= 1e-3 (outputTolerance, checkAgainstReference). Without a
// GPU it says "skipped: no GPU
// (<reason>)" and passes. python/tests/decode_device_test.py covers the
// larger grid (long sequences, graph capture).
//
//===----------------------------------------------------------------------===//

#include "BFloat16.h"
#include "DecodeLaunch.h"
#include "DeviceBuffer.h"
#include "Float8.h"
#include "ReferenceAttention.h"
#include "TestSupport.h"
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/DecodePlan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>

using namespace mlagen;
using namespace mlagen::test;

namespace {

struct Fixture {
  ScratchDirectory cacheDir;
  std::unique_ptr<Runtime> runtime;
  std::unique_ptr<DeviceBackend> backend;
  Arch arch = Arch::SM90A;
};

bool openGpu(Fixture &fixture) {
  RuntimeOptions options;
  options.generator = createMLIRSourceGenerator();
  options.cacheDir = fixture.cacheDir.path();
  REQUIRE(Runtime::create(std::move(options), fixture.runtime));
  Status device = fixture.runtime->deviceArch(fixture.arch);
  if (!device) {
    std::cout << "skipped: no GPU (" << device.message() << ")\n";
    WARN("skipped: no GPU (" << device.message() << ")");
    return false;
  }
  fixture.arch = gpuTestArch(fixture.arch);
  REQUIRE(openDeviceBackend(BackendKind::Auto, 0, fixture.backend));
  std::cout << "decode numerics on " << fixture.runtime->backendDescription() << ", " << archName(fixture.arch) << " kernels"
            << "\n";
  return true;
}

// A paged cache holding every request's keys in shuffled pages, and bf16 q.
struct DecodeInputs {
  DecodeProblem problem;
  std::vector<float> q, cache; // bf16-rounded (fp8: kvScale * the e4m3 value)
  std::vector<uint16_t> qBits, cacheBits;
  std::vector<uint8_t> cacheFP8; // an fp8 e4m3 cache (OCP) instead of cacheBits
  float kvScale = 1.0f;
};

DecodeInputs makeInputs(const Signature &sig, const std::vector<int> &seqLens,
                        unsigned seed) {
  DecodeInputs in;
  DecodeProblem &p = in.problem;
  p.headDimQK = sig.headDimQK;
  p.headDimV = sig.headDimV;
  p.numHeads = sig.numQHeads;
  p.qLen = sig.qLen;
  p.pageSize = sig.pageSize;
  p.softmaxScale = 1.0f / std::sqrt(192.0f); // DeepSeek-V3's
  p.seqLens = seqLens;
  int maxPages = 1;
  for (int len : seqLens)
    maxPages = std::max(maxPages, (len + p.pageSize - 1) / p.pageSize);
  p.blockTableStride = maxPages + 3; // wider than needed, as engines have
  const int batch = p.batch(), numPages = batch * maxPages + 5;
  std::mt19937 rng(seed);
  std::vector<int> pages(numPages);
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), rng);
  // Unused table entries point at a page no request owns: never read.
  p.blockTable.assign(size_t(batch) * p.blockTableStride,
                      pages[size_t(batch) * maxPages]);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < maxPages; ++i)
      p.blockTable[size_t(b) * p.blockTableStride + i] =
          pages[b * maxPages + i];

  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](size_t count, std::vector<float> &values,
                  std::vector<uint16_t> &bits) {
    values.resize(count);
    bits.resize(count);
    for (size_t i = 0; i < count; ++i) {
      bits[i] = floatToBF16(dist(rng));
      values[i] = bf16ToFloat(bits[i]);
    }
  };
  fill(size_t(batch) * p.qLen * p.numHeads * p.headDimQK, in.q, in.qBits);
  fill(size_t(numPages) * p.pageSize * p.headDimQK, in.cache, in.cacheBits);
  if (sig.kvType == DType::FP8E4M3) {
    // Stored values up to 16 (e4m3 rounding included), read back scaled by
    // 1/16: the reference sees exactly what the kernel dequantises.
    in.kvScale = 1.0f / 16.0f;
    in.cacheFP8.resize(in.cache.size());
    for (size_t i = 0; i < in.cache.size(); ++i) {
      in.cacheFP8[i] = floatToE4M3(in.cache[i] * 16.0f);
      in.cache[i] = e4m3ToFloat(in.cacheFP8[i]) * in.kvScale;
    }
    in.cacheBits.clear();
  }
  return in;
}

struct DecodeResult {
  std::vector<uint16_t> out;
  std::vector<float> lse;
};

// Host time of `step` (one decode step's launches), us: each of `alone`
// steps alone on an idle stream, and 100 back to back, as an engine
// enqueues steps (100 steps, 200 kernels, stay well inside the launch
// queue; beyond it the host would wait for the GPU, timing the kernels).
struct StepTimes {
  double backToBack = 0.0, median = 0.0, p90 = 0.0;
};

template <class Step>
StepTimes timeSteps(DeviceBackend &backend, int alone, Step step) {
  using Micros = std::chrono::duration<double, std::micro>;
  std::vector<double> micros;
  for (int i = 0; i < alone; ++i) {
    REQUIRE(backend.synchronize());
    auto start = std::chrono::steady_clock::now();
    step();
    micros.push_back(Micros(std::chrono::steady_clock::now() - start).count());
  }
  REQUIRE(backend.synchronize());
  std::sort(micros.begin(), micros.end());
  constexpr int kBackToBack = 100;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBackToBack; ++i)
    step();
  const double elapsed =
      Micros(std::chrono::steady_clock::now() - start).count();
  REQUIRE(backend.synchronize());
  return {elapsed / kBackToBack, micros[micros.size() / 2],
          micros[micros.size() * 9 / 10]};
}

// What a test may change of a step's planning: its options (clusters off)
// and the host plan before it is copied.
struct PlanEdits {
  bool clusterMerge = true;
  int invariantChunkKeys = 0; // batch-invariant chunks (0: the planner's)
  std::function<void(const DecodePlanner &, std::vector<int32_t> &)> plan;
};

// With `timedLaunches`, also runs the same step that many more times and
// prints the host time of one launch. `groupsUnknown`: the launch is not
// told how many requests merge in clusters or how many items the plan has
// (planGroups and planWork -1), so it keeps the kernel's clusters and the
// whole work list's grid, as under graph capture.
DecodeResult decodeOnGpu(Fixture &fixture, const Kernel &kernel,
                         const DecodeInputs &in, int numSMs,
                         int timedLaunches = 0, bool groupsUnknown = false,
                         const PlanEdits &edits = {}) {
  const DecodeProblem &p = in.problem;
  const int batch = p.batch();
  DecodePlanner planner;
  DecodePlanOptions options = {batch, numSMs, 1 << 20};
  options.clusterMerge = edits.clusterMerge;
  if (edits.invariantChunkKeys > 0)
    options.invariantChunkKeys = edits.invariantChunkKeys;
  REQUIRE(DecodePlanner::create(kernel, options, planner));
  const DecodeBufferSizes &sizes = planner.sizes();
  std::vector<int32_t> hostPlan;
  DecodePlanSummary summary;
  REQUIRE(planner.plan(p.seqLens, hostPlan, &summary));
  if (edits.plan)
    edits.plan(planner, hostPlan);
  INFO("plan: " << summary.numWork << " work items, " << summary.numSlots
                << " slots (" << summary.reduceSlots
                << " for the reduce), chunks of " << summary.chunkKeys
                << " keys");

  DeviceBackend &backend = *fixture.backend;
  DeviceBuffer q(backend, in.qBits);
  DeviceBuffer cache = in.cacheFP8.empty() ? DeviceBuffer(backend, in.cacheBits)
                                           : DeviceBuffer(backend, in.cacheFP8);
  DeviceBuffer blockTable(backend, p.blockTable), seqLens(backend, p.seqLens);
  DeviceBuffer plan(backend, hostPlan);
  DeviceBuffer partialOut(backend, sizes.partialOutFloats * sizeof(float));
  DeviceBuffer partialLse(backend, sizes.partialLseFloats * sizeof(float));
  const size_t rows = size_t(batch) * p.qLen * p.numHeads;
  // NaN everywhere first: a row the kernels forget cannot pass.
  DeviceBuffer out(backend, std::vector<uint16_t>(rows * p.headDimV, 0x7fc0));
  DeviceBuffer lse(backend, std::vector<float>(rows, std::nanf("")));

  DecodeArgs args;
  args.q = q.get();
  args.kvCache = cache.get();
  args.out = out.get();
  args.lse = lse.get<float>();
  args.blockTable = blockTable.get<int>();
  args.blockTableStride = p.blockTableStride;
  args.seqLens = seqLens.get<int>();
  args.batch = batch;
  args.qLen = p.qLen;
  args.numQHeads = p.numHeads;
  args.softmaxScale = p.softmaxScale;
  args.kvScale = in.kvScale;
  planner.bindPlan(plan.get<int32_t>(), partialOut.get<float>(),
                   partialLse.get<float>(), args);
  // A plan without slots launches no reduce: the decode kernel alone must
  // then write every row (they start as NaN).
  args.planSlots = summary.reduceSlots;
  args.planGroups = groupsUnknown ? -1 : summary.mergeGroups;
  // Launched as under graph capture too: the whole work list's grid.
  args.planWork = groupsUnknown ? -1 : hostPlan[0];
  REQUIRE(fixture.runtime->runDecode(kernel, args));
  REQUIRE(backend.synchronize());
  if (timedLaunches > 0) {
    const StepTimes decode = timeSteps(backend, timedLaunches, [&] {
      if (Status status = fixture.runtime->runDecode(kernel, args); !status)
        FAIL(status.toString());
    });
    // The floor under it: the same kernels and parameter block launched
    // straight through the driver as runDecode launches them (a second
    // load of the code object; no checks, no tensor map, not capturing).
    DeviceFunction direct;
    REQUIRE(backend.load(kernel.codeObject(), direct));
    DecodeLaunch launch;
    bool empty = false;
    REQUIRE(prepareDecodeLaunch(kernel.signature(), kernel.codeObject(), args,
                                launch, empty));
    if (args.planGroups == 0)
      launch.decode.clusterX = 1;
    if (args.planWork >= 0)
      launch.decode.grid[0] =
          (args.planWork + launch.decode.clusterX - 1) / launch.decode.clusterX *
          launch.decode.clusterX;
    void *params[] = {&launch.params};
    const StepTimes driver = timeSteps(backend, timedLaunches, [&] {
      Status status = backend.launch(direct, launch.decode, nullptr, params);
      if (status && summary.reduceSlots > 0)
        status =
            backend.launch(direct.extra(0), launch.reduce, nullptr, params);
      if (!status)
        FAIL(status.toString());
    });
    backend.unload(direct);
    std::cout << "runDecode host time (" << p.numHeads << " heads, batch "
              << batch << ", "
              << (summary.reduceSlots > 0 ? "decode + reduce"
                  : summary.numSlots > 0  ? "decode merging pairs in the grid"
                  : summary.numWork > batch && args.clusterBlocks > 1
                      ? "decode merging in clusters"
                      : "decode alone")
              << "): back to back " << decode.backToBack
              << " us per launch; alone on an idle stream median "
              << decode.median << " us, 90th percentile " << decode.p90
              << " us. The driver's launches alone: back to back "
              << driver.backToBack << " us, median " << driver.median
              << " us\n";
  }
  return {out.download<uint16_t>(), lse.download<float>()};
}

// Tolerance of one output element against the fp32 reference `ref`:
// 1e-2, or 1.01x the bf16 rounding error of the reference itself where that
// is larger. Rows that see few keys reach |out| > 4, where half a bf16 ulp
// is 0.0156, so a correctly rounded output can be 1e-2 off there.
double outputTolerance(float ref, double atol = 1e-2) {
  return std::max(atol, 1.01 * std::fabs(double(ref) - roundToBF16(ref)));
}

// sm_90a multiplies an fp8 cache as e4m3 in 16-row blocks (mla_decode.hip's
// kFP8Operands: bf16 q split into e4m3 hi + lo):
// the tensor cores add e4m3 products with fewer bits than fp32 and P goes as
// e4m3 plus its residue, so those kernels pass an output within 2e-2 (or
// the rounding slack) and an LSE also within 1e-2 absolute, as the Python
// decode numerics hold them (FP8_PRODUCTS_ATOL).
void checkAgainstReference(const DecodeInputs &in, const DecodeResult &got,
                           bool e4m3Products = false) {
  std::vector<float> expectedOut, expectedLse, emulatedOut;
  referenceDecode(in.problem, in.q, in.cache, expectedOut, expectedLse,
                  &emulatedOut);
  // FlashAttention's test rule, as the prefill's: twice the error of an
  // emulation that rounds P to bf16 before P V, as the kernels do. Rows that
  // hang on a few keys carry that rounding.
  double emulationError = 0.0;
  for (size_t i = 0; i < emulatedOut.size(); ++i)
    emulationError = std::max(
        emulationError, std::fabs(double(emulatedOut[i]) - expectedOut[i]));
  const double outAtol =
      std::max(e4m3Products ? 2e-2 : 1e-2, 2.0 * emulationError);
  const double lseAtol = e4m3Products ? 1e-2 : 0.0;
  // |got - ref| <= max(outAtol, 1.01 |ref - bf16(ref)|) elementwise; LSE
  // relative error <= 1e-3 (or absolute <= lseAtol).
  double maxOutError = 0.0, maxLseError = 0.0;
  size_t outOverTolerance = 0;
  for (size_t i = 0; i < got.out.size(); ++i) {
    double error = std::fabs(bf16ToFloat(got.out[i]) - expectedOut[i]);
    maxOutError = std::isnan(error) ? INFINITY : std::max(maxOutError, error);
    if (!(error <= outputTolerance(expectedOut[i], outAtol))) // NaN fails too
      ++outOverTolerance;
  }
  for (size_t i = 0; i < got.lse.size(); ++i) {
    if (std::isinf(expectedLse[i])) {
      CHECK(got.lse[i] == expectedLse[i]);
      continue;
    }
    const double absolute = std::fabs(got.lse[i] - expectedLse[i]);
    double error = absolute / std::max(1.0, std::fabs(double(expectedLse[i])));
    if (absolute <= lseAtol)
      error = 0.0;
    maxLseError = std::isnan(error) ? INFINITY : std::max(maxLseError, error);
  }
  INFO("max |out - ref| " << maxOutError << ", emulation's " << emulationError);
  CHECK(outOverTolerance == 0);
  CHECK(maxLseError <= 1e-3);
}

} // namespace

TEST_CASE("generated decode matches the CPU reference", "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  const std::vector<int> seqLens = {1, 0, 37, 64, 65, 700, 2500};
  // 8 heads: AMD pads them to 16 (kNumHeads 16, kNumQHeads 8), so q, out
  // and lse hold 8 heads while the kernel numbers rows by 16.
  for (int heads : {8, 16, 128})
    for (int qLen : {1, 4})
      for (int pageSize : {1, 64}) {
        Signature sig = Signature::decode();
        sig.numQHeads = heads;
        sig.qLen = qLen;
        sig.pageSize = pageSize;
        sig.arch = fixture.arch;
        INFO(sig.canonical());
        const Kernel *kernel = nullptr;
        REQUIRE(fixture.runtime->getKernel(sig, kernel));
        DecodeInputs in = makeInputs(sig, seqLens, 99 + heads + qLen);
        // One SM: nothing is split; eight: 700 keys in two chunks, merged
        // by the second block of the pair (chunks of at most 1024 keys of
        // a 16-bit cache; longer ones merge in a cluster where the kernel
        // can, sm_90a's 16-row blocks); a thousand: long requests split
        // into many chunks merged by the reduce.
        for (int numSMs : {1, 8, 132, 1000}) {
          INFO("num_sms " << numSMs);
          checkAgainstReference(in, decodeOnGpu(fixture, *kernel, in, numSMs));
        }
      }
}

TEST_CASE("a decode step's host time, and the same bits when repeated",
          "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  // 128 heads at page 64 encode the cache's tensor map on every launch.
  for (int heads : {16, 128}) {
    Signature sig = Signature::decode();
    sig.numQHeads = heads;
    sig.pageSize = 64;
    sig.arch = fixture.arch;
    INFO(sig.canonical());
    const Kernel *kernel = nullptr;
    REQUIRE(fixture.runtime->getKernel(sig, kernel));
    DecodeInputs in = makeInputs(sig, std::vector<int>(32, 1000), 7 + heads);
    DecodeResult once = decodeOnGpu(fixture, *kernel, in, 132);
    DecodeResult repeated = decodeOnGpu(fixture, *kernel, in, 132, 500);
    CHECK(once.out == repeated.out);
    CHECK(std::memcmp(once.lse.data(), repeated.lse.data(),
                      once.lse.size() * sizeof(float)) == 0);
    checkAgainstReference(in, repeated);
    // Planned for one SM, nothing is split: one launch a step.
    checkAgainstReference(in, decodeOnGpu(fixture, *kernel, in, 1, 500));
    // Two chunks a request of 512 keys: merged by the second block of each
    // pair; one launch. (32 requests of 1000 keys: four chunks each at 16
    // heads, through the reduce; pairs at 128.) Then the same launched with
    // the kernel's clusters, as under graph capture, and pairs of chunks of
    // over 1024 keys, merged in their clusters where the kernel can (sm_90a,
    // 16 rows a block).
    DecodeInputs pairs =
        makeInputs(sig, std::vector<int>(64, 1000), 11 + heads);
    checkAgainstReference(pairs,
                          decodeOnGpu(fixture, *kernel, pairs, 132, 500));
    if (heads == 16) { // 128 heads: 64-row blocks, no clusters
      checkAgainstReference(pairs,
                            decodeOnGpu(fixture, *kernel, pairs, 132, 0, true));
      DecodeInputs longPairs =
          makeInputs(sig, std::vector<int>(64, 2500), 17 + heads);
      checkAgainstReference(longPairs,
                            decodeOnGpu(fixture, *kernel, longPairs, 132));
      checkAgainstReference(
          longPairs, decodeOnGpu(fixture, *kernel, longPairs, 132, 0, true));
    }
    // Requests of many chunks: decode + reduce, one graph launch.
    DecodeInputs many = makeInputs(sig, std::vector<int>(4, 8000), 13 + heads);
    DecodeResult graph = decodeOnGpu(fixture, *kernel, many, 132, 500);
    checkAgainstReference(many, graph);
    // The same step as two stream launches (MLAGEN_LAUNCH_GRAPHS=0, read
    // when a runtime opens its device): the same bits, and its host time
    // printed beside the graph's.
    Fixture separate;
    ::setenv("MLAGEN_LAUNCH_GRAPHS", "0", 1);
    const bool opened = openGpu(separate);
    ::unsetenv("MLAGEN_LAUNCH_GRAPHS");
    REQUIRE(opened);
    const Kernel *separateKernel = nullptr;
    REQUIRE(separate.runtime->getKernel(sig, separateKernel));
    std::cout << "two launches, not a graph: ";
    DecodeResult launches =
        decodeOnGpu(separate, *separateKernel, many, 132, 500);
    CHECK(graph.out == launches.out);
    CHECK(std::memcmp(graph.lse.data(), launches.lse.data(),
                      graph.lse.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("generated decode reads an fp8 e4m3 cache", "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  if (fixture.arch == Arch::GFX90A || fixture.arch == Arch::GFX942) {
    SUCCEED("gfx90a has no fp8; gfx942 reads FNUZ (not this OCP cache)");
    return;
  }
  const std::vector<int> seqLens = {1, 0, 37, 64, 65, 700, 2500};
  for (int heads : {16, 128})
    for (int qLen : {1, 2, 4})
      for (int pageSize : {1, 64}) {
        Signature sig = Signature::decode();
        sig.numQHeads = heads;
        sig.qLen = qLen;
        sig.pageSize = pageSize;
        sig.kvType = DType::FP8E4M3;
        sig.arch = fixture.arch;
        INFO(sig.canonical());
        const Kernel *kernel = nullptr;
        REQUIRE(fixture.runtime->getKernel(sig, kernel));
        DecodeInputs in = makeInputs(sig, seqLens, 7 + heads + qLen);
        const bool e4m3Bound = fixture.arch == Arch::SM90A && heads * qLen <= 16;
        for (int numSMs : {1, 132})
          checkAgainstReference(in, decodeOnGpu(fixture, *kernel, in, numSMs), e4m3Bound);
        // Clusters off: sm_90a's 16-row kernels, which merge an fp8 cache's
        // pairs in clusters and have no grid merge, leave them to the
        // reduce (8 SMs: 700 keys in two chunks).
        PlanEdits noClusters;
        noClusters.clusterMerge = false;
        checkAgainstReference(in, decodeOnGpu(fixture, *kernel, in, 8, 0, false, noClusters), e4m3Bound);
      }
}

// Chunks of 1000 keys start inside a page of 64: tile 0 of such an item
// spans two pages, whose block-table entries sm_90a's producers take from
// the job (read_first_pages) rather than from the table.
TEST_CASE("batch-invariant decode with chunks that start inside a page",
          "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  const std::vector<int> seqLens = {3000, 1001, 999, 2063};
  for (int heads : {16, 128})
    for (DType kv : {DType::BF16, DType::FP8E4M3}) {
      if (kv == DType::FP8E4M3 &&
          (fixture.arch == Arch::GFX90A || fixture.arch == Arch::GFX942))
        continue; // no OCP fp8 there (the fp8 test above says so)
      Signature sig = Signature::decode();
      sig.numQHeads = heads;
      sig.kvType = kv;
      sig.batchInvariant = true;
      sig.arch = fixture.arch;
      INFO(sig.canonical());
      const Kernel *kernel = nullptr;
      REQUIRE(fixture.runtime->getKernel(sig, kernel));
      DecodeInputs in = makeInputs(sig, seqLens, 41 + heads);
      PlanEdits chunks;
      chunks.invariantChunkKeys = 1000;
      const bool e4m3Bound = kv == DType::FP8E4M3 && fixture.arch == Arch::SM90A && heads <= 16;
      checkAgainstReference(in, decodeOnGpu(fixture, *kernel, in, 132, 0, false, chunks), e4m3Bound);
    }
}

TEST_CASE("a kernel without the grid merge writes NaN for a grid pair",
          "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  if (fixture.arch != Arch::SM90A) {
    SUCCEED("only sm_90a's 16-row e4m3 kernels leave the grid merge out");
    return;
  }
  Signature sig = Signature::decode();
  sig.kvType = DType::FP8E4M3;
  sig.arch = fixture.arch;
  const Kernel *kernel = nullptr;
  REQUIRE(fixture.runtime->getKernel(sig, kernel));
  REQUIRE(kernel->codeObject().clusterParts == 2);
  // Two requests of two chunks each on 4 SMs (500 keys: two chunks with
  // one or two blocks an SM), both for the reduce (clusters off); then the
  // first request of two chunks marked as a grid pair, as a plan made for
  // another kernel would: its rows come out NaN, the other's stay finite.
  DecodeInputs in = makeInputs(sig, {500, 500}, 23);
  int marked = -1;
  PlanEdits edits;
  edits.clusterMerge = false;
  edits.plan = [&marked](const DecodePlanner &planner, std::vector<int32_t> &plan) {
    const DecodeBufferSizes &sizes = planner.sizes();
    for (int b = 0; b < 2 && marked < 0; ++b)
      if (plan[sizes.mergeOffset + 2 * b + 1] == 2)
        marked = b;
    REQUIRE(marked >= 0);
    plan[sizes.mergeOffset + 2 * marked + 1] = -2;
    for (int i = 0; i < plan[0]; ++i) {
      int32_t *item = plan.data() + sizes.workOffset + 4 * i;
      if (item[0] == marked)
        item[3] += 1 << 30;
    }
  };
  DecodeResult result = decodeOnGpu(fixture, *kernel, in, 4, 0, false, edits);
  const DecodeProblem &p = in.problem;
  const size_t rowElems = size_t(p.qLen) * p.numHeads * p.headDimV;
  int nanMarked = 0, nanOther = 0;
  for (size_t i = 0; i < 2 * rowElems; ++i) {
    const bool nan = (result.out[i] & 0x7fff) > 0x7f80;
    ((i < rowElems) == (marked == 0) ? nanMarked : nanOther) += nan;
  }
  CHECK(nanMarked == int(rowElems)); // the marked request
  CHECK(nanOther == 0);
  // Its LSEs were written as final rows' (they start NaN): the kernel saw
  // the pair and wrote NaN rows, rather than partials no one merges.
  const size_t lseRow = size_t(p.qLen) * p.numHeads;
  for (size_t i = 0; i < lseRow; ++i)
    CHECK(std::isfinite(result.lse[marked * lseRow + i]));
}

TEST_CASE("batch-invariant decode gives a request the same bits in any batch",
          "[gpu]") {
  Fixture fixture;
  if (!openGpu(fixture)) {
    SUCCEED("no GPU");
    return;
  }
  Signature sig = Signature::decode();
  sig.batchInvariant = true;
  sig.arch = fixture.arch;
  const Kernel *kernel = nullptr;
  REQUIRE(fixture.runtime->getKernel(sig, kernel));
  // The request under test (3000 keys: three 1024-key chunks) alone, then
  // last in a batch, on different SM counts.
  const std::vector<int> alone = {3000};
  const std::vector<int> batch = {5, 2048, 0, 4100, 3000};
  DecodeInputs one = makeInputs(sig, alone, 5);
  DecodeInputs many = makeInputs(sig, batch, 6);
  // Give the request in the batch the same q and keys as the one alone.
  const DecodeProblem &p = many.problem;
  const size_t qRow = size_t(p.qLen) * p.numHeads * p.headDimQK;
  std::copy(one.qBits.begin(), one.qBits.end(), many.qBits.begin() + 4 * qRow);
  std::copy(one.q.begin(), one.q.end(), many.q.begin() + 4 * qRow);
  const size_t pageElems = size_t(p.pageSize) * p.headDimQK;
  for (int i = 0; i * p.pageSize < 3000; ++i) {
    const int from = one.problem.blockTable[i];
    const int to = p.blockTable[size_t(4) * p.blockTableStride + i];
    std::copy_n(one.cacheBits.begin() + from * pageElems, pageElems,
                many.cacheBits.begin() + to * pageElems);
    std::copy_n(one.cache.begin() + from * pageElems, pageElems,
                many.cache.begin() + to * pageElems);
  }
  DecodeResult reference = decodeOnGpu(fixture, *kernel, one, 132);
  checkAgainstReference(one, reference);
  for (int numSMs : {1, 132, 1000}) {
    DecodeResult batched = decodeOnGpu(fixture, *kernel, many, numSMs);
    const size_t outRow = size_t(p.qLen) * p.numHeads * p.headDimV;
    CHECK(std::equal(reference.out.begin(), reference.out.end(),
                     batched.out.begin() + 4 * outRow));
    const size_t lseRow = size_t(p.qLen) * p.numHeads;
    CHECK(std::memcmp(reference.lse.data(), batched.lse.data() + 4 * lseRow,
                      lseRow * sizeof(float)) == 0);
  }
}
