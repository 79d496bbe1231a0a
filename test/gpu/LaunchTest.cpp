//===- LaunchTest.cpp - the runtime's launch path on a real GPU -----------===//
//
// An echo kernel (NVIDIA) writes back the parameter block, the grid and the
// dynamic shared memory it was launched with: this checks the host mirror
// of mlagen_prefill_params, the grid, and the opt-in above 48 KiB of shared
// memory, independently of the generated attention kernels; and that the
// decode cache's tensor map encodes on a thread with no current context.
//
//===----------------------------------------------------------------------===//

#include "DeviceBackend.h"
#include "DeviceBuffer.h"
#include "EchoKernel.h"
#include "PrefillParams.h"
#include "TestSupport.h"

#include <chrono>
#include <cstring>
#include <iostream>

using namespace mlagen;
using namespace mlagen::test;

namespace {

// Skips (with the reason) unless a Runtime finds an NVIDIA GPU.
bool openNvidia(std::unique_ptr<Runtime> &runtime,
                std::shared_ptr<SourceGenerator> generator,
                const std::string &cacheDir, Arch &arch) {
  RuntimeOptions options;
  options.generator = std::move(generator);
  options.cacheDir = cacheDir;
  REQUIRE(Runtime::create(std::move(options), runtime));
  Status device = runtime->deviceArch(arch);
  if (!device) {
    std::cout << "skipped: no GPU (" << device.message() << ")\n";
    WARN("skipped: no GPU (" << device.message() << ")");
    return false;
  }
  arch = gpuTestArch(arch);
  if (isAMD(arch)) {
    WARN("skipped: the echo kernel is NVIDIA-only; device is "
         << runtime->backendDescription());
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("a launch carries the parameter block, grid and shared memory",
          "[gpu]") {
  ScratchDirectory dir;
  auto generator = std::make_shared<CountingGenerator>();
  generator->source = kEchoKernel;
  generator->entryName = "mlagen_prefill";
  generator->threadsPerBlock = 64;
  generator->sharedBytes = 64 * 1024 + 16; // needs the opt-in
  std::unique_ptr<Runtime> runtime;
  Arch arch;
  if (!openNvidia(runtime, generator, dir.path(), arch)) {
    SUCCEED("no NVIDIA GPU");
    return;
  }
  std::unique_ptr<DeviceBackend> backend;
  REQUIRE(openDeviceBackend(BackendKind::CUDA, 0, backend));

  Signature sig;
  sig.headDimQK = 128;
  sig.headDimV = 64;
  sig.numQHeads = 8;
  sig.numKVHeads = 2;
  sig.tileQ = 16;
  sig.arch = arch;
  const Kernel *kernel = nullptr;
  REQUIRE(runtime->getKernel(sig, kernel));

  DeviceBuffer echo(*backend, std::vector<long long>(64, 0));
  PrefillArgs args;
  args.q = reinterpret_cast<const void *>(0x1000);
  args.k = reinterpret_cast<const void *>(0x2000);
  args.v = reinterpret_cast<const void *>(0x3000);
  args.out = echo.get();
  args.lse = reinterpret_cast<float *>(0x5000);
  args.lseHeadStride = 12345;
  args.cuSeqlensQ = reinterpret_cast<const int *>(0x6000);
  args.cuSeqlensK = reinterpret_cast<const int *>(0x7000);
  args.batch = 3;
  args.maxSeqlenQ = 33;
  args.vHeadStride = 96;
  args.softmaxScale = 0.25f;
  REQUIRE(runtime->runPrefill(*kernel, args));
  REQUIRE(backend->synchronize());

  std::vector<long long> got = echo.download<long long>();
  const long long expected[] = {
      0x1000, 0x2000, 0x3000, reinterpret_cast<long long>(echo.get()), 0x5000,
      0x6000, 0x7000,
      8 * 128, 128, 2 * 128, 128, 2 * 64, 96, 8 * 64, 64, 12345,
      3, 33, 0 /* scale, below */, 0,
      3 /* ceil(33 / 16) */, 8, 3, 64, 64 * 1024 + 16};
  for (int i = 0; i < 25; ++i) {
    INFO("echo field " << i);
    if (i == 18) {
      float scale;
      int bits = static_cast<int>(got[i]);
      std::memcpy(&scale, &bits, sizeof(scale));
      CHECK(scale == 0.25f);
    } else {
      CHECK(got[i] == expected[i]);
    }
  }
  CHECK(got[32] == 3 * 8 * 3); // every block ran

  // What a launch costs the host: no sync, and few enough launches to stay
  // inside the launch queue (past it the host waits for the GPU), so this
  // is enqueue time.
  constexpr int kLaunches = 200;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i) {
    Status status = runtime->runPrefill(*kernel, args);
    if (!status)
      FAIL(status.toString());
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE(backend->synchronize());
  // The floor under it: the same kernel and parameter block launched
  // straight through the driver (a second load of the code object).
  DeviceFunction direct;
  REQUIRE(backend->load(kernel->codeObject(), direct));
  PrefillParams params = {};
  params.out = echo.get();
  void *directArgs[] = {&params};
  LaunchGeometry geometry;
  geometry.grid[0] = geometry.grid[1] = geometry.grid[2] = 1;
  geometry.threadsPerBlock = 64;
  geometry.sharedBytes = 64 * 1024 + 16;
  auto driverStart = std::chrono::steady_clock::now();
  for (int i = 0; i < kLaunches; ++i)
    REQUIRE(backend->launch(direct, geometry, nullptr, directArgs));
  auto driverElapsed = std::chrono::steady_clock::now() - driverStart;
  REQUIRE(backend->synchronize());
  backend->unload(direct);
  std::cout << "runPrefill host time: "
            << std::chrono::duration<double, std::micro>(elapsed).count() /
                   kLaunches
            << " us per launch; the driver's launch alone "
            << std::chrono::duration<double, std::micro>(driverElapsed)
                       .count() /
                   kLaunches
            << " us (" << runtime->backendDescription() << ")\n";
  const Kernel *again = nullptr;
  REQUIRE(runtime->getKernel(sig, again));
  CHECK(again == kernel);
  CHECK(generator->calls() == 1);
}

TEST_CASE("a cache tensor map encodes with no current context", "[gpu]") {
  std::unique_ptr<DeviceBackend> backend;
  Status opened = openDeviceBackend(BackendKind::CUDA, 0, backend);
  if (!opened) {
    std::cout << "skipped: no GPU (" << opened.message() << ")\n";
    WARN("skipped: no GPU (" << opened.message() << ")");
    SUCCEED("no NVIDIA GPU");
    return;
  }
  // 64 pages of 64 keys x 576 bf16, as runDecode describes an MLA cache.
  // No context is current on this thread (no torch here): the backend
  // makes its own current, as for its launches.
  DeviceBuffer cache(*backend, size_t(64) * 64 * 576 * 2);
  TensorMapRequest request;
  request.base = cache.get();
  request.sizes[0] = 576;
  request.sizes[1] = 64;
  request.sizes[2] = 64;
  request.strides[0] = 576 * 2;
  request.strides[1] = 64 * 576 * 2;
  request.box[0] = request.box[1] = 64;
  request.box[2] = 1;
  alignas(64) unsigned char map[128];
  Status first = backend->encodeTensorMap(request, map);
  if (first.code() == StatusCode::Unsupported) {
    std::cout << "skipped: " << first.message() << "\n";
    WARN("skipped: " << first.message());
    return;
  }
  REQUIRE(first);
  // What runDecode pays for it on every 64-row launch.
  constexpr int kCalls = 2000;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i)
    REQUIRE(backend->encodeTensorMap(request, map));
  auto elapsed = std::chrono::steady_clock::now() - start;
  std::cout << "cuTensorMapEncodeTiled: "
            << std::chrono::duration<double, std::micro>(elapsed).count() /
                   kCalls
            << " us a call\n";
}
