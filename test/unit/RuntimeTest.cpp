//===- RuntimeTest.cpp - Runtime creation, getKernel and runPrefill -------===//
//
// Launch plumbing without a GPU: a recording fake DeviceBackend stands in
// for the driver, so the grid, the parameter block and every argument check
// are tested on any machine. Real launches are in test/gpu.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "DeviceCompiler.h"
#include "MemorylessBackend.h"
#include "PrefillParams.h"
#include "RuntimeInternal.h"
#include "TestSupport.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>

using namespace mlagen;
using namespace mlagen::test;

namespace {

struct LaunchRecord {
  LaunchGeometry geometry;
  void *stream = nullptr;
  PrefillParams params;
};

// Records what the runtime asks of a device; shared with the test.
struct FakeDeviceLog {
  std::mutex mutex;
  int loads = 0, unloads = 0;
  std::vector<LaunchRecord> launches;
};

// `portableTarget`: as a CUDA device of 9.0 or later ("sm_90", "sm_100"),
// which also runs the portable sm_80 kernels, compiled for that target.
class FakeBackend final : public MemorylessBackend {
public:
  FakeBackend(Arch arch, std::shared_ptr<FakeDeviceLog> log,
              std::string portableTarget = "")
      : arch_(arch), portableTarget_(std::move(portableTarget)),
        log_(std::move(log)) {}
  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return arch_; }
  bool runs(Arch arch) const override {
    return arch == arch_ || (!portableTarget_.empty() && arch == Arch::SM80);
  }
  std::string portableTarget() const override { return portableTarget_; }
  std::string description() const override {
    return std::string("fake device (") + archName(arch_) + ")";
  }
  Status load(const CodeObject &code, DeviceFunction &out) override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    ++log_->loads;
    out = {reinterpret_cast<void *>(0x1000), reinterpret_cast<void *>(0x2000)};
    return Status::ok();
  }
  void unload(DeviceFunction &function) override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    ++log_->unloads;
  }
  Status launch(const DeviceFunction &function, const LaunchGeometry &geometry,
                void *stream, void **params) override {
    LaunchRecord record{geometry, stream, {}};
    std::memcpy(&record.params, params[0], sizeof(PrefillParams));
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->launches.push_back(record);
    return Status::ok();
  }

private:
  Arch arch_;
  std::string portableTarget_;
  std::shared_ptr<FakeDeviceLog> log_;
};

struct FakeDeviceRuntime {
  std::shared_ptr<FakeDeviceLog> log = std::make_shared<FakeDeviceLog>();
  std::shared_ptr<CountingGenerator> generator =
      std::make_shared<CountingGenerator>();
  std::unique_ptr<Runtime> runtime;

  explicit FakeDeviceRuntime(Arch arch, std::string portableTarget = "") {
    RuntimeOptions options;
    options.generator = generator;
    options.diskCache = false;
    REQUIRE(createRuntimeWithBackend(
        std::move(options),
        std::make_unique<FakeBackend>(arch, log, std::move(portableTarget)),
        runtime));
  }
};

// The arch an installed compiler builds; none (after saying why the test
// is skipped) where there is no compiler.
std::optional<Arch> compileTargetOrSkip() {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
  }
  return target.arch;
}

// False (after saying why) where NVRTC is not installed.
bool nvrtcInstalled() {
  std::unique_ptr<DeviceCompiler> nvrtc;
  if (Status status = loadNvrtcCompiler(nvrtc); !status) {
    WARN("skipped: NVRTC not found (" << status.message() << ")");
    SUCCEED("NVRTC not installed");
    return false;
  }
  return true;
}

Signature gqaSignature(Arch arch) {
  Signature sig;
  sig.headDimQK = 128;
  sig.headDimV = 64;
  sig.numQHeads = 32;
  sig.numKVHeads = 8;
  sig.arch = arch;
  return sig;
}

// Arguments with every pointer set to a distinct fake device address.
PrefillArgs someArgs() {
  PrefillArgs args;
  args.q = reinterpret_cast<const void *>(0x10);
  args.k = reinterpret_cast<const void *>(0x20);
  args.v = reinterpret_cast<const void *>(0x30);
  args.out = reinterpret_cast<void *>(0x40);
  args.cuSeqlensQ = reinterpret_cast<const int *>(0x60);
  args.cuSeqlensK = reinterpret_cast<const int *>(0x70);
  args.batch = 3;
  args.maxSeqlenQ = 300;
  return args;
}

} // namespace

TEST_CASE("Runtime options with unknown enum values are refused",
          "[runtime]") {
  for (int field = 0; field < 2; ++field) {
    RuntimeOptions options;
    options.diskCache = false;
    if (field == 0)
      options.backend = static_cast<BackendKind>(9);
    else
      options.compiler = static_cast<CompilerKind>(-1);
    std::unique_ptr<Runtime> runtime;
    Status status = Runtime::create(std::move(options), runtime);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains(field == 0 ? "backend"
                                                            : "compiler") &&
                                     Catch::Contains("unknown value"));
    CHECK(runtime == nullptr);
  }
}

TEST_CASE("a compile-only Runtime says why it has no device", "[runtime]") {
  RuntimeOptions options;
  options.backend = BackendKind::None;
  options.diskCache = false;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));
  CHECK_THAT(runtime->backendDescription(), Catch::StartsWith("compile-only"));
  Arch arch;
  CHECK(runtime->deviceArch(arch).code() == StatusCode::NoBackend);
  const Kernel *kernel = nullptr;
  Status status = runtime->getKernel(Signature(), kernel);
  CHECK(status.code() == StatusCode::NoBackend);
  CHECK_THAT(status.message(), Catch::Contains("compile() works"));
}

TEST_CASE("the automatic backend reports what it found", "[runtime]") {
  RuntimeOptions options;
  options.diskCache = false;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));
  std::string description = runtime->backendDescription();
  WARN("backend: " << description);
  Arch arch;
  if (runtime->deviceArch(arch))
    CHECK_THAT(description, Catch::Contains(archName(arch)));
  else
    CHECK_THAT(description, Catch::StartsWith("compile-only: no GPU backend: ") &&
                                Catch::Contains("libcuda.so.1") &&
                                Catch::Contains("libamdhip64"));
}

TEST_CASE("an explicit backend that is missing fails creation", "[runtime]") {
  for (BackendKind kind : {BackendKind::CUDA, BackendKind::HIP}) {
    RuntimeOptions options;
    options.backend = kind;
    options.diskCache = false;
    std::unique_ptr<Runtime> runtime;
    Status status = Runtime::create(std::move(options), runtime);
    if (status) {
      WARN("a " << (kind == BackendKind::CUDA ? "CUDA" : "HIP")
                << " device exists: " << runtime->backendDescription());
      continue;
    }
    CHECK((status.code() == StatusCode::NoBackend ||
           status.code() == StatusCode::Unsupported));
    CHECK_FALSE(status.message().empty());
    CHECK(runtime == nullptr);
  }
  RuntimeOptions negative;
  negative.device = -1;
  negative.backend = BackendKind::None;
  std::unique_ptr<Runtime> runtime;
  CHECK(Runtime::create(std::move(negative), runtime).code() ==
        StatusCode::InvalidArgument);
}

TEST_CASE("getKernel loads a kernel once and hands out one pointer",
          "[runtime]") {
  std::optional<Arch> arch = compileTargetOrSkip();
  if (!arch)
    return;
  FakeDeviceRuntime fake(*arch);
  fake.generator->delay = std::chrono::milliseconds(50);
  const Signature sig = gqaSignature(*arch);

  std::vector<const Kernel *> kernels(8, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      Status status = fake.runtime->getKernel(sig, kernels[i]);
      (void)status;
    });
  for (std::thread &thread : threads)
    thread.join();
  REQUIRE(kernels[0] != nullptr);
  for (const Kernel *kernel : kernels)
    CHECK(kernel == kernels[0]);
  CHECK(fake.generator->calls() == 1);
  CHECK(fake.log->loads == 1);
  CHECK(kernels[0]->signature() == sig);
  CHECK(kernels[0]->codeObject().entryName == "mlagen_test_kernel");

  Signature otherArch = sig;
  otherArch.arch = *arch == Arch::SM90A ? Arch::SM80 : Arch::GFX90A;
  const Kernel *kernel = nullptr;
  Status mismatch = fake.runtime->getKernel(otherArch, kernel);
  CHECK(mismatch.code() == StatusCode::InvalidSignature);
  CHECK_THAT(mismatch.message(), Catch::StartsWith("arch is"));

  fake.runtime.reset();
  CHECK(fake.log->unloads == 1);
}

TEST_CASE("getKernels fetches a set side by side and names a failure",
          "[runtime]") {
  std::optional<Arch> arch = compileTargetOrSkip();
  if (!arch)
    return;
  std::vector<Signature> set;
  for (int heads : {8, 16, 32, 64}) {
    set.push_back(gqaSignature(*arch));
    set.back().numQHeads = heads;
  }
  for (int jobs : {1, 4}) {
    FakeDeviceRuntime fake(*arch);
    fake.generator->delay = std::chrono::milliseconds(150);
    std::vector<const Kernel *> kernels;
    REQUIRE(fake.runtime->getKernels(set, kernels, jobs));
    REQUIRE(kernels.size() == set.size());
    for (size_t i = 0; i < set.size(); ++i) {
      const Kernel *one = nullptr;
      REQUIRE(fake.runtime->getKernel(set[i], one));
      CHECK(kernels[i] == one); // the same cached kernel, in order
      CHECK(one->signature() == set[i]);
    }
    CHECK(fake.generator->calls() == 4);
    CHECK(fake.log->loads == 4);
    if (jobs == 1)
      CHECK(fake.generator->mostAtOnce() == 1);
    else // four 150 ms generations on four threads overlap
      CHECK(fake.generator->mostAtOnce() >= 2);
  }

  FakeDeviceRuntime fake(*arch);
  std::vector<Signature> mixed = {set[0], set[1], set[2]};
  mixed[1].arch = *arch == Arch::SM90A ? Arch::GFX90A : Arch::SM90A;
  std::vector<const Kernel *> kernels = {nullptr};
  Status status = fake.runtime->getKernels(mixed, kernels);
  CHECK(status.code() == StatusCode::InvalidSignature);
  CHECK_THAT(status.message(),
             Catch::StartsWith("kernel 1 ('" + mixed[1].canonical() + "'): arch is"));
  REQUIRE(kernels.size() == 3);
  CHECK((kernels[0] && !kernels[1] && kernels[2]));
  CHECK(fake.generator->calls() == 2); // the others were still fetched
  REQUIRE(fake.runtime->getKernels({}, kernels));
  CHECK(kernels.empty());

  // The same signature twice: one build, one kernel.
  REQUIRE(fake.runtime->getKernels({set[3], set[3]}, kernels, 2));
  CHECK((kernels[0] != nullptr && kernels[0] == kernels[1]));
  CHECK(fake.generator->calls() == 3);
}

namespace {
struct ThrowingGenerator final : SourceGenerator {
  Status generate(const Signature &, GeneratedKernel &) override {
    throw std::runtime_error("generator threw");
  }
  std::string identity() const override { return "throwing/1"; }
};
} // namespace

TEST_CASE("getKernels turns an exception on its threads into a status",
          "[runtime]") {
  std::optional<Arch> arch = compileTargetOrSkip();
  if (!arch)
    return;
  RuntimeOptions options;
  options.generator = std::make_shared<ThrowingGenerator>();
  options.diskCache = false;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(createRuntimeWithBackend(
      std::move(options),
      std::make_unique<FakeBackend>(*arch, std::make_shared<FakeDeviceLog>()),
      runtime));
  std::vector<Signature> set(3, gqaSignature(*arch));
  set[1].numQHeads = 16;
  std::vector<const Kernel *> kernels;
  Status status = runtime->getKernels(set, kernels, 3);
  CHECK(status.code() == StatusCode::Internal);
  CHECK_THAT(status.message(), Catch::StartsWith("kernel 0 (") &&
                                   Catch::EndsWith("): generator threw"));
  CHECK(kernels == std::vector<const Kernel *>(3, nullptr));
}

TEST_CASE("devices from 9.0 on run the portable sm_80 kernels, compiled "
          "for their own target",
          "[runtime]") {
  if (!nvrtcInstalled())
    return;
  struct Device {
    Arch arch;
    std::string target;
  };
  // A Hopper device (sm_90a by default) and a later one (sm_80 kernels only).
  for (const Device &device : {Device{Arch::SM90A, "sm_90"},
                               Device{Arch::SM80, "sm_100"}}) {
    CAPTURE(device.target);
    FakeDeviceRuntime fake(device.arch, device.target);
    const Kernel *portable = nullptr;
    REQUIRE(fake.runtime->getKernel(gqaSignature(Arch::SM80), portable));
    CHECK_THAT(portable->codeObject().compilerFlags,
               Catch::StartsWith("--gpu-architecture=" + device.target + " "));
    const Kernel *own = nullptr;
    Status hopper = fake.runtime->getKernel(gqaSignature(Arch::SM90A), own);
    if (device.arch == Arch::SM90A) {
      REQUIRE(hopper);
      CHECK_THAT(own->codeObject().compilerFlags,
                 Catch::StartsWith("--gpu-architecture=sm_90a "));
    } else {
      CHECK(hopper.code() == StatusCode::InvalidSignature);
      CHECK_THAT(hopper.message(), Catch::StartsWith("arch is sm_90a") &&
                                       Catch::EndsWith("needs sm_80"));
    }
    Signature amd = gqaSignature(Arch::GFX942);
    CHECK(fake.runtime->getKernel(amd, own).code() ==
          StatusCode::InvalidSignature);
  }
}

TEST_CASE("portableNvidiaTarget builds the sm_80 kernels for another GPU, "
          "compile-only",
          "[runtime]") {
  if (!nvrtcInstalled())
    return;
  auto options = [](std::string target) {
    RuntimeOptions o;
    o.generator = std::make_shared<CountingGenerator>();
    o.backend = BackendKind::None;
    o.diskCache = false;
    o.portableNvidiaTarget = std::move(target);
    return o;
  };
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(options("sm_120"), runtime));
  CodeObject code;
  REQUIRE(runtime->compile(gqaSignature(Arch::SM80), code));
  CHECK_THAT(code.compilerFlags, Catch::StartsWith("--gpu-architecture=sm_120 "));
  REQUIRE(runtime->compile(gqaSignature(Arch::SM90A), code));
  CHECK_THAT(code.compilerFlags, Catch::StartsWith("--gpu-architecture=sm_90a "));

  for (const char *bad : {"gfx942", "sm_", "sm_8", "sm_090", "sm_100x", "sm100"}) {
    CAPTURE(bad);
    Status status = Runtime::create(options(bad), runtime);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains(std::string("'") + bad + "'"));
  }
  // With a device, only the device's own target: other cubins would not load.
  RuntimeOptions withDevice = options("sm_100");
  withDevice.backend = BackendKind::Auto;
  Status other = createRuntimeWithBackend(
      std::move(withDevice),
      std::make_unique<FakeBackend>(Arch::SM90A, std::make_shared<FakeDeviceLog>(),
                                    "sm_90"),
      runtime);
  CHECK(other.code() == StatusCode::InvalidArgument);
  CHECK_THAT(other.message(), Catch::Contains("takes sm_90"));
}

TEST_CASE("runPrefill fills the parameter block and the grid", "[runtime]") {
  std::optional<Arch> arch = compileTargetOrSkip();
  if (!arch)
    return;
  FakeDeviceRuntime fake(*arch);
  fake.generator->threadsPerBlock = 256;
  fake.generator->sharedBytes = 99 * 1024;
  const Signature sig = gqaSignature(*arch);
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));

  SECTION("contiguous defaults") {
    PrefillArgs args = someArgs();
    args.stream = reinterpret_cast<void *>(0x99);
    REQUIRE(fake.runtime->runPrefill(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const LaunchRecord &launch = fake.log->launches[0];
    CHECK(launch.geometry.grid[0] == 5); // ceil(300 / 64)
    CHECK(launch.geometry.grid[1] == 32);
    CHECK(launch.geometry.grid[2] == 3);
    CHECK(launch.geometry.threadsPerBlock == 256);
    CHECK(launch.geometry.sharedBytes == 99 * 1024);
    CHECK(launch.stream == args.stream);
    const PrefillParams &p = launch.params;
    CHECK(p.q == args.q);
    CHECK(p.k == args.k);
    CHECK(p.v == args.v);
    CHECK(p.out == args.out);
    CHECK(p.lse == nullptr);
    CHECK(p.cu_seqlens_q == args.cuSeqlensQ);
    CHECK(p.cu_seqlens_k == args.cuSeqlensK);
    CHECK(p.q_token_stride == 32 * 128);
    CHECK(p.q_head_stride == 128);
    CHECK(p.k_token_stride == 8 * 128);
    CHECK(p.k_head_stride == 128);
    CHECK(p.v_token_stride == 8 * 64);
    CHECK(p.v_head_stride == 64);
    CHECK(p.out_token_stride == 32 * 64);
    CHECK(p.out_head_stride == 64);
    CHECK(p.lse_head_stride == 0);
    CHECK(p.batch == 3);
    CHECK(p.max_seqlen_q == 300);
    CHECK(p.softmax_scale == Approx(1.0 / std::sqrt(128.0)));
    CHECK(p.kv_maps_ready == 0);
    CHECK(p.alibi_slopes == nullptr);
  }

  SECTION("an alibi kernel needs slopes; others refuse them") {
    Signature alibiSig = sig;
    alibiSig.alibi = true;
    const Kernel *alibi = nullptr;
    REQUIRE(fake.runtime->getKernel(alibiSig, alibi));
    PrefillArgs args = someArgs();
    Status status = fake.runtime->runPrefill(*alibi, args);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK(status.message() == "alibi_slopes is null, but the kernel has "
                              "alibi=1: pass [num_q_heads] fp32 slopes");
    args.alibiSlopes = reinterpret_cast<const float *>(0x82);
    CHECK(fake.runtime->runPrefill(*alibi, args).message() ==
          "alibi_slopes must be 4-byte aligned");
    args.alibiSlopes = reinterpret_cast<const float *>(0x80);
    status = fake.runtime->runPrefill(*kernel, args);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_THAT(status.message(),
               Catch::StartsWith("alibi_slopes is given, but the kernel has "
                                 "alibi=0"));
    CHECK(fake.log->launches.empty());
    REQUIRE(fake.runtime->runPrefill(*alibi, args));
    CHECK(fake.log->launches.at(0).params.alibi_slopes == args.alibiSlopes);
  }

  SECTION("explicit strides, scale and lse pass through") {
    PrefillArgs args = someArgs();
    args.qTokenStride = 10000;
    args.qHeadStride = 200;
    args.kTokenStride = 3000;
    args.kHeadStride = 304;
    args.vTokenStride = 4000;
    args.vHeadStride = 400;
    args.outTokenStride = 5000;
    args.outHeadStride = 504;
    args.lse = reinterpret_cast<float *>(0x50);
    args.lseHeadStride = 777;
    args.softmaxScale = 0.125f;
    args.maxSeqlenQ = 64;
    REQUIRE(fake.runtime->runPrefill(*kernel, args));
    const PrefillParams &p = fake.log->launches.at(0).params;
    CHECK(p.q_token_stride == 10000);
    CHECK(p.q_head_stride == 200);
    CHECK(p.k_token_stride == 3000);
    CHECK(p.k_head_stride == 304);
    CHECK(p.v_token_stride == 4000);
    CHECK(p.v_head_stride == 400);
    CHECK(p.out_token_stride == 5000);
    CHECK(p.out_head_stride == 504);
    CHECK(p.lse == args.lse);
    CHECK(p.lse_head_stride == 777);
    CHECK(p.softmax_scale == 0.125f);
    CHECK(fake.log->launches.at(0).geometry.grid[0] == 1);
  }

  SECTION("max_seqlen_q == 0 launches nothing") {
    PrefillArgs args = someArgs();
    args.maxSeqlenQ = 0;
    args.q = nullptr; // empty batches may come with null tensors
    CHECK(fake.runtime->runPrefill(*kernel, args));
    CHECK(fake.log->launches.empty());
  }

  SECTION("bad arguments are rejected with the argument's name") {
    auto rejection = [&](PrefillArgs args) {
      Status status = fake.runtime->runPrefill(*kernel, args);
      CHECK(status.code() == StatusCode::InvalidArgument);
      return status.message();
    };
    PrefillArgs args = someArgs();
    args.batch = 0;
    CHECK(rejection(args) == "batch must be in [1, 65535] (got 0)");
    args.batch = 70000;
    CHECK_THAT(rejection(args), Catch::StartsWith("batch must be"));
    args = someArgs();
    args.maxSeqlenQ = -1;
    CHECK(rejection(args) == "max_seqlen_q must be >= 0 (got -1)");
    for (const char *name :
         {"q", "k", "v", "out", "cu_seqlens_q", "cu_seqlens_k"}) {
      args = someArgs();
      std::string field = name;
      if (field == "q") args.q = nullptr;
      if (field == "k") args.k = nullptr;
      if (field == "v") args.v = nullptr;
      if (field == "out") args.out = nullptr;
      if (field == "cu_seqlens_q") args.cuSeqlensQ = nullptr;
      if (field == "cu_seqlens_k") args.cuSeqlensK = nullptr;
      CHECK(rejection(args) == field + " is null");
    }
    args = someArgs();
    args.vHeadStride = -1;
    CHECK_THAT(rejection(args), Catch::StartsWith("v_head_stride must be >= 0"));
    args = someArgs();
    args.k = reinterpret_cast<const void *>(0x28);
    CHECK(rejection(args) ==
          "k must be 16-byte aligned (the kernel loads 16-byte vectors)");
    args = someArgs();
    args.cuSeqlensK = reinterpret_cast<const int *>(0x2002);
    CHECK(rejection(args) == "cu_seqlens_k must be 4-byte aligned");
    args = someArgs();
    args.lse = reinterpret_cast<float *>(0x51);
    args.lseHeadStride = 64;
    CHECK(rejection(args) == "lse must be 4-byte aligned");
    args = someArgs();
    args.qHeadStride = 196;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("q_head_stride must be a multiple of 8"));
    args = someArgs();
    args.lse = reinterpret_cast<float *>(0x50);
    CHECK_THAT(rejection(args), Catch::StartsWith("lse_head_stride must be > 0"));
    args = someArgs();
    args.softmaxScale = std::nanf("");
    CHECK_THAT(rejection(args), Catch::StartsWith("softmax_scale must be finite"));
    CHECK(fake.log->launches.empty());
  }

  SECTION("a kernel without LSE gets a null lse pointer") {
    Signature noLSE = sig;
    noLSE.returnLSE = false;
    const Kernel *plain = nullptr;
    REQUIRE(fake.runtime->getKernel(noLSE, plain));
    PrefillArgs args = someArgs();
    args.lse = reinterpret_cast<float *>(0x50); // ignored, stride not needed
    REQUIRE(fake.runtime->runPrefill(*plain, args));
    CHECK(fake.log->launches.at(0).params.lse == nullptr);
  }

  SECTION("a kernel from another Runtime is refused") {
    FakeDeviceRuntime other(*arch);
    CHECK(other.runtime->runPrefill(*kernel, someArgs()).code() ==
          StatusCode::InvalidArgument);
  }
}
