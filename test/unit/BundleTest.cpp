//===- BundleTest.cpp - AOT bundles: write, open, choose, refuse ----------===//
//
// Bundles built with `buildBundle` from compile-only Runtimes (counting fake
// generator, NVRTC or clang-22), then opened by Runtimes through
// RuntimeOptions::bundlePaths and $MLAGEN_BUNDLE_PATH. The real generator's
// bundle is in AOTBundleTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "BundleManifest.h"
#include "CatchStatus.h"
#include "Hash.h"
#include "MemorylessBackend.h"
#include "RuntimeInternal.h"
#include "TestSupport.h"
#include "mlagen/Bundle/Bundle.h"
#include "mlagen/Runtime/PrebuiltKernels.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace mlagen;
using namespace mlagen::test;

namespace {

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Sets an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      saved_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    saved_ ? setenv(name_, saved_->c_str(), 1) : unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> saved_;
};

// A device that only has an arch: enough for Runtime's bundle choices.
// `portableTarget`: as a CUDA device of 9.0 or later, which also runs the
// sm_80 kernels compiled for that target.
class ArchOnlyBackend final : public MemorylessBackend {
public:
  explicit ArchOnlyBackend(Arch arch, std::string portableTarget = "")
      : arch_(arch), portableTarget_(std::move(portableTarget)) {}
  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return arch_; }
  bool runs(Arch arch) const override {
    return arch == arch_ || (!portableTarget_.empty() && arch == Arch::SM80);
  }
  std::string portableTarget() const override { return portableTarget_; }
  std::string description() const override {
    return std::string("fake device (") + archName(arch_) + ")";
  }
  Status load(const CodeObject &, DeviceFunction &out) override {
    out.function = this;
    return Status::ok();
  }
  void unload(DeviceFunction &) override {}
  Status launch(const DeviceFunction &, const LaunchGeometry &, void *,
                void **) override {
    return Status::ok();
  }

private:
  Arch arch_;
  std::string portableTarget_;
};

struct RuntimeSetup {
  RuntimeSetup(std::shared_ptr<SourceGenerator> generator,
               std::vector<std::string> bundlePaths = {},
               std::string cacheDir = "",
               std::unique_ptr<DeviceBackend> backend = nullptr)
      : generator(std::move(generator)), bundlePaths(std::move(bundlePaths)),
        cacheDir(std::move(cacheDir)), backend(std::move(backend)) {}
  std::shared_ptr<SourceGenerator> generator;
  std::vector<std::string> bundlePaths;
  std::string cacheDir;                   // empty: no disk cache
  std::unique_ptr<DeviceBackend> backend; // null: compile-only
};

Status makeRuntime(RuntimeSetup setup, WarningLog &warnings,
                   std::unique_ptr<Runtime> &out) {
  RuntimeOptions options;
  options.generator = std::move(setup.generator);
  options.bundlePaths = std::move(setup.bundlePaths);
  options.backend = BackendKind::None;
  options.diskCache = !setup.cacheDir.empty();
  options.cacheDir = setup.cacheDir;
  options.onWarning = warnings.sink();
  return createRuntimeWithBackend(std::move(options), std::move(setup.backend),
                                  out);
}

// A bundle of the test signature (qk 192 and 128) of `arch` in `dir`.
void buildTestBundle(Arch arch, const std::string &dir,
                     const std::string &generatorIdentity = "fake-generator/1") {
  WarningLog warnings;
  std::unique_ptr<Runtime> builder;
  REQUIRE(makeRuntime({std::make_shared<CountingGenerator>(generatorIdentity)},
                      warnings, builder));
  REQUIRE(buildBundle(*builder, {testSignature(arch), testSignature(arch, 128)},
                      dir, 2, nullptr));
  CHECK(warnings.count() == 0);
}

#define REQUIRE_COMPILER(arch)                                                 \
  CompileTarget target_ = findCompileTarget();                                 \
  if (!target_.arch) {                                                         \
    WARN("skipped: no device compiler (" << target_.whyNot << ")");            \
    SUCCEED("no device compiler");                                             \
    return;                                                                    \
  }                                                                            \
  const Arch arch = *target_.arch;

void editManifest(const std::string &dir,
                  const std::function<void(nlohmann::json &)> &edit) {
  nlohmann::json manifest =
      nlohmann::json::parse(readBytes(dir + "/manifest.json"));
  edit(manifest);
  writeBytes(dir + "/manifest.json", manifest.dump(1));
}

} // namespace

TEST_CASE("a bundle records what loading it needs", "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  buildTestBundle(arch, dir.path());
  BundleManifest manifest;
  REQUIRE(decodeBundleManifest(readBytes(dir.path() + "/manifest.json"),
                               manifest));
  CHECK(manifest.format == kBundleFormatVersion);
  CHECK_THAT(manifest.producer, Catch::StartsWith("mlagen "));
  REQUIRE(manifest.kernels.size() == 2);
  for (const BundleKernelRecord &kernel : manifest.kernels) {
    std::string binary = readBytes(dir.path() + "/" + kernel.file);
    CHECK(kernel.size == binary.size());
    CHECK(kernel.checksum == hash128(binary).hex());
    CHECK(kernel.code.generatorIdentity == "fake-generator/1");
    CHECK_FALSE(kernel.code.compilerIdentity.empty());
    CHECK_FALSE(kernel.code.compilerFlags.empty());
    CHECK(kernel.code.cacheKey ==
          computeCacheKey(kernel.signature, kernel.code.generatorIdentity,
                          kernel.code.compilerIdentity,
                          kernel.code.compilerFlags));
  }
  // The codec round-trips.
  CHECK(encodeBundleManifest(manifest) ==
        readBytes(dir.path() + "/manifest.json"));
}

TEST_CASE("a manifest records cluster_parts (required) and blocks_per_sm "
          "(0 where absent)",
          "[bundle]") {
  BundleManifest manifest;
  manifest.producer = bundleProducer();
  BundleKernelRecord record;
  REQUIRE(parseSignature("decode qk=576 v=512 hq=16 q_len=1 page=64 "
                         "mask=causal lse=1 q=bf16 kv=bf16 out=bf16 "
                         "batch_invariant=0 tile_k=0 arch=sm_90a",
                         record.signature));
  record.file = "k.cubin";
  record.size = 4;
  record.checksum = hash128("code").hex();
  CodeObject &code = record.code;
  code.arch = Arch::SM90A;
  code.entryName = "mlagen_decode";
  code.threadsPerBlock = 256;
  code.sharedBytes = 202480;
  code.tileQ = 16;
  code.tileK = 64;
  code.paddedHeads = 16;
  code.clusterParts = 2;
  code.blocksPerSM = 3;
  code.extraEntries = {{"mlagen_decode_reduce", 256, 0, 2}};
  code.cacheKey = hash128("key").hex();
  code.generatorIdentity = "gen/1";
  code.compilerIdentity = "nvrtc 13.0";
  code.compilerFlags = "-arch";
  manifest.kernels.push_back(record);
  const std::string text = encodeBundleManifest(manifest);
  CHECK_THAT(text, Catch::Contains("\"cluster_parts\": 2") &&
                       Catch::Contains("\"blocks_per_sm\": 3"));

  BundleManifest decoded;
  REQUIRE(decodeBundleManifest(text, decoded));
  REQUIRE(decoded.kernels.size() == 1);
  CHECK(decoded.kernels[0].code.clusterParts == 2);
  CHECK(decoded.kernels[0].code.blocksPerSM == 3);
  CHECK(encodeBundleManifest(decoded) == text);

  // Without blocks_per_sm: none stated. Without cluster_parts: refused,
  // since the planner's choice between cluster, grid and reduce merges
  // follows it (format 6).
  nlohmann::json old = nlohmann::json::parse(text);
  old["kernels"][0].erase("blocks_per_sm");
  decoded = {};
  REQUIRE(decodeBundleManifest(old.dump(), decoded));
  REQUIRE(decoded.kernels.size() == 1);
  CHECK(decoded.kernels[0].code.blocksPerSM == 0);
  old["kernels"][0].erase("cluster_parts");
  Status missing = decodeBundleManifest(old.dump(), decoded);
  CHECK(missing.code() == StatusCode::InvalidArgument);
  CHECK_THAT(missing.message(), Catch::Contains("cluster_parts"));
  for (nlohmann::json bad : {nlohmann::json(-1), nlohmann::json(33)}) {
    nlohmann::json edited = nlohmann::json::parse(text);
    edited["kernels"][0]["blocks_per_sm"] = bad;
    Status status = decodeBundleManifest(edited.dump(), decoded);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_THAT(status.message(),
               Catch::StartsWith("kernels[0].blocks_per_sm must be "));
  }

  // Present, it is held to its range and type like any field.
  for (nlohmann::json bad :
       {nlohmann::json(0), nlohmann::json(9), nlohmann::json("2")}) {
    nlohmann::json edited = nlohmann::json::parse(text);
    edited["kernels"][0]["cluster_parts"] = bad;
    Status status = decodeBundleManifest(edited.dump(), decoded);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK_THAT(status.message(),
               Catch::StartsWith("kernels[0].cluster_parts must be ") &&
                   (bad.is_string() ? Catch::Contains("an integer")
                                    : Catch::Contains("in [1, 8]")));
  }
}

TEST_CASE("a runtime without a generator finds bundled kernels first",
          "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle, cache;
  buildTestBundle(arch, bundle.path());

  WarningLog warnings;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}, cache.path()}, warnings,
                      runtime));
  CodeObject code;
  REQUIRE(runtime->compile(testSignature(arch), code));
  CHECK(code.entryName == "mlagen_test_kernel");
  CHECK(code.tileQ == 64);
  CHECK(code.generatorIdentity == "fake-generator/1");
  CHECK(cacheEntries(cache.path()).empty()); // bundles are not copied
  CHECK(runtime->compile(testSignature(arch, 64), code).code() ==
        StatusCode::NoBackend);
  CHECK(warnings.count() == 0);

  // The same through the environment, after the named ones.
  ScopedEnv env("MLAGEN_BUNDLE_PATH", "/nonexistent-mlagen-bundle:" +
                                          bundle.path() + ":");
  REQUIRE(makeRuntime({nullptr, {}, ""}, warnings, runtime));
  REQUIRE(runtime->compile(testSignature(arch, 128), code));
  REQUIRE(warnings.count() == 1); // the first path
  CHECK_THAT(warnings.messages()[0],
             Catch::Contains("/nonexistent-mlagen-bundle") &&
                 Catch::Contains("MLAGEN_BUNDLE_PATH") &&
                 Catch::Contains("skipping it"));
}

TEST_CASE("a runtime with a generator takes only what it would build",
          "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle;
  buildTestBundle(arch, bundle.path());

  SECTION("same generator and compiler: the bundle serves") {
    WarningLog warnings;
    auto generator = std::make_shared<CountingGenerator>();
    std::unique_ptr<Runtime> runtime;
    REQUIRE(makeRuntime({generator, {bundle.path()}}, warnings, runtime));
    CodeObject code;
    REQUIRE(runtime->compile(testSignature(arch), code));
    CHECK(generator->calls() == 0);
    CHECK(warnings.count() == 0);
  }
  SECTION("another generator version: skipped, saying why") {
    WarningLog warnings;
    auto generator = std::make_shared<CountingGenerator>("fake-generator/2");
    std::unique_ptr<Runtime> runtime;
    REQUIRE(makeRuntime({generator, {bundle.path()}}, warnings, runtime));
    CodeObject code;
    REQUIRE(runtime->compile(testSignature(arch), code));
    REQUIRE(runtime->compile(testSignature(arch, 128), code));
    CHECK(generator->calls() == 2);
    REQUIRE(warnings.count() == 1); // once per bundle and reason
    CHECK_THAT(warnings.messages()[0],
               Catch::Contains("bundle " + bundle.path()) &&
                   Catch::Contains("generator 'fake-generator/1'") &&
                   Catch::Contains("'fake-generator/2'"));
  }
  SECTION("another compiler version: skipped, saying why") {
    editManifest(bundle.path(), [](nlohmann::json &manifest) {
      for (auto &kernel : manifest["kernels"])
        kernel["compiler"] = "nvrtc 12.1";
    });
    WarningLog warnings;
    auto generator = std::make_shared<CountingGenerator>();
    std::unique_ptr<Runtime> runtime;
    REQUIRE(makeRuntime({generator, {bundle.path()}}, warnings, runtime));
    CodeObject code;
    REQUIRE(runtime->compile(testSignature(arch), code));
    CHECK(generator->calls() == 1);
    REQUIRE(warnings.count() == 1);
    CHECK_THAT(warnings.messages()[0], Catch::Contains("built by 'nvrtc 12.1'"));
    CHECK(code.compilerIdentity != "nvrtc 12.1");
  }
}

TEST_CASE("a bundle for another arch is skipped on a device", "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle;
  buildTestBundle(arch, bundle.path());
  const Arch device = arch == Arch::SM90A ? Arch::GFX942 : Arch::SM90A;

  WarningLog warnings;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}, "",
                       std::make_unique<ArchOnlyBackend>(device)},
                      warnings, runtime));
  REQUIRE(warnings.count() == 1);
  CHECK_THAT(warnings.messages()[0],
             Catch::Contains("bundle " + bundle.path()) &&
                 Catch::Contains(std::string("holds kernels for ") +
                                 archName(arch)) &&
                 Catch::Contains(std::string("not ") + archName(device)));
  // Skipped altogether: not even compile() for its own arch finds it.
  CodeObject code;
  CHECK(runtime->compile(testSignature(arch), code).code() ==
        StatusCode::NoBackend);

  // On a device of its arch, getKernel loads it without a generator.
  WarningLog quiet;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}, "",
                       std::make_unique<ArchOnlyBackend>(arch)},
                      quiet, runtime));
  const Kernel *kernel = nullptr;
  REQUIRE(runtime->getKernel(testSignature(arch), kernel));
  CHECK(kernel->codeObject().entryName == "mlagen_test_kernel");
  CHECK(quiet.count() == 0);
}

TEST_CASE("a bundle of portable kernels loads only where their target runs",
          "[bundle]") {
  REQUIRE_COMPILER(arch);
  if (arch != Arch::SM90A) {
    SUCCEED("the portable kernels need NVRTC");
    return;
  }
  // Built for an H100 (sm_90), compile-only.
  ScratchDirectory bundle;
  {
    RuntimeOptions options;
    options.generator = std::make_shared<CountingGenerator>();
    options.backend = BackendKind::None;
    options.diskCache = false;
    options.portableNvidiaTarget = "sm_90";
    std::unique_ptr<Runtime> builder;
    REQUIRE(Runtime::create(std::move(options), builder));
    REQUIRE(buildBundle(*builder, {testSignature(Arch::SM80)}, bundle.path(), 1,
                        nullptr));
  }
  // A 9.0 device runs sm_90a and sm_80 kernels: it takes the sm_80-only
  // bundle, and loads its kernel without a generator.
  WarningLog quiet;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}, "",
                       std::make_unique<ArchOnlyBackend>(Arch::SM90A, "sm_90")},
                      quiet, runtime));
  const Kernel *kernel = nullptr;
  REQUIRE(runtime->getKernel(testSignature(Arch::SM80), kernel));
  CHECK_THAT(kernel->codeObject().compilerFlags,
             Catch::StartsWith("--gpu-architecture=sm_90 "));
  CHECK(quiet.count() == 0);

  // A 10.0 device runs sm_80 kernels compiled for sm_100: without a
  // generator it has nothing to run, and says why.
  WarningLog warnings;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}, "",
                       std::make_unique<ArchOnlyBackend>(Arch::SM80, "sm_100")},
                      warnings, runtime));
  Status status = runtime->getKernel(testSignature(Arch::SM80), kernel);
  CHECK(status.code() == StatusCode::NoBackend);
  REQUIRE(warnings.count() == 1);
  CHECK_THAT(warnings.messages()[0],
             Catch::Contains("compiled for sm_90") &&
                 Catch::Contains("compiled for sm_100") &&
                 Catch::Contains("--portable-target=sm_100"));

  // Likewise a disk cache's kernel, found by signature (no generator): one
  // built for sm_90 is not loaded on the sm_100 device.
  ScratchDirectory cache;
  {
    RuntimeOptions options;
    options.generator = std::make_shared<CountingGenerator>();
    options.backend = BackendKind::None;
    options.cacheDir = cache.path();
    options.portableNvidiaTarget = "sm_90";
    std::unique_ptr<Runtime> builder;
    REQUIRE(Runtime::create(std::move(options), builder));
    CodeObject code;
    REQUIRE(builder->compile(testSignature(Arch::SM80), code));
  }
  WarningLog none;
  REQUIRE(makeRuntime({nullptr, {}, cache.path(),
                       std::make_unique<ArchOnlyBackend>(Arch::SM80, "sm_100")},
                      none, runtime));
  status = runtime->getKernel(testSignature(Arch::SM80), kernel);
  CHECK(status.code() == StatusCode::NoBackend);
  CHECK_THAT(status.message(),
             Catch::Contains("the disk cache's kernel was compiled for sm_90"));
  REQUIRE(makeRuntime({nullptr, {}, cache.path(),
                       std::make_unique<ArchOnlyBackend>(Arch::SM90A, "sm_90")},
                      none, runtime));
  REQUIRE(runtime->getKernel(testSignature(Arch::SM80), kernel));
}

TEST_CASE("a bundle of another manifest format is skipped with the reason",
          "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle;
  buildTestBundle(arch, bundle.path());
  editManifest(bundle.path(),
               [](nlohmann::json &manifest) { manifest["format"] = 2; });
  std::shared_ptr<const PrebuiltKernels> opened;
  Status status = openBundle(bundle.path(), nullptr, opened);
  CHECK(status.code() == StatusCode::Unsupported);
  CHECK_THAT(status.message(),
             Catch::Contains("manifest format 2") &&
                 Catch::Contains("format " +
                                 std::to_string(kBundleFormatVersion)));

  WarningLog warnings;
  std::unique_ptr<Runtime> runtime;
  REQUIRE(makeRuntime({nullptr, {bundle.path()}}, warnings, runtime));
  REQUIRE(warnings.count() == 1);
  CHECK_THAT(warnings.messages()[0], Catch::Contains("manifest format 2") &&
                                         Catch::Contains("skipping it"));
}

TEST_CASE("a corrupt manifest is a clear error", "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle;
  buildTestBundle(arch, bundle.path());
  const std::string good = readBytes(bundle.path() + "/manifest.json");

  struct Damage {
    const char *name;
    std::function<std::string()> manifest;
    const char *says;
  };
  auto edited = [&](std::function<void(nlohmann::json &)> edit) {
    return [good, edit] {
      nlohmann::json manifest = nlohmann::json::parse(good);
      edit(manifest);
      return manifest.dump();
    };
  };
  const Damage damages[] = {
      {"truncated", [&] { return good.substr(0, good.size() / 2); },
       "not valid JSON"},
      {"empty", [] { return std::string(); }, "not valid JSON"},
      {"not an object", [] { return std::string("[1, 2]"); },
       "top level must be an object"},
      {"no kernels", edited([](auto &m) { m.erase("kernels"); }),
       "kernels must be an array"},
      {"wrong type", edited([](auto &m) { m["kernels"][1]["tile_q"] = "64"; }),
       "kernels[1].tile_q must be an integer"},
      {"missing field",
       edited([](auto &m) { m["kernels"][0].erase("xxh3_128"); }),
       "kernels[0].xxh3_128 is missing"},
      {"escaping file",
       edited([](auto &m) { m["kernels"][0]["file"] = "../../etc/passwd"; }),
       "must name a file in the bundle directory"},
      {"bad signature",
       edited([](auto &m) { m["kernels"][0]["signature"] = "prefill qk=1"; }),
       "kernels[0].signature"},
      {"arch mismatch",
       edited([](auto &m) { m["kernels"][0]["arch"] = "gfx90a"; }),
       "is not the signature's"},
      {"duplicate",
       edited([](auto &m) { m["kernels"][1] = m["kernels"][0]; }),
       "a second kernel"},
      {"huge number",
       edited([](auto &m) {
         m["kernels"][0]["size"] = 18446744073709551615ull;
       }),
       "kernels[0].size is out of range"},
  };
  for (const Damage &damage : damages) {
    DYNAMIC_SECTION(damage.name) {
      writeBytes(bundle.path() + "/manifest.json", damage.manifest());
      std::shared_ptr<const PrebuiltKernels> opened;
      Status status = openBundle(bundle.path(), nullptr, opened);
      CHECK(status.code() == StatusCode::InvalidArgument);
      CHECK_THAT(status.message(),
                 Catch::Contains(bundle.path() + "/manifest.json") &&
                     Catch::Contains(damage.says));
      CHECK(opened == nullptr);

      // Named by the program: create() fails with it; named by the
      // environment: a warning, and the runtime works without it.
      WarningLog warnings;
      std::unique_ptr<Runtime> runtime;
      Status created = makeRuntime({nullptr, {bundle.path()}}, warnings,
                                   runtime);
      CHECK(created.message() == status.message());
      ScopedEnv env("MLAGEN_BUNDLE_PATH", bundle.path());
      REQUIRE(makeRuntime({nullptr, {}}, warnings, runtime));
      REQUIRE(warnings.count() == 1);
      CHECK_THAT(warnings.messages()[0], Catch::Contains(damage.says));
    }
  }
  std::shared_ptr<const PrebuiltKernels> opened;
  Status missing = openBundle(bundle.path() + "/nowhere", nullptr, opened);
  CHECK(missing.code() == StatusCode::InvalidArgument);
  CHECK_THAT(missing.message(), Catch::Contains("cannot read") &&
                                    Catch::Contains("No such file"));
}

TEST_CASE("a damaged code object in a bundle is reported and rebuilt",
          "[bundle]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory bundle;
  buildTestBundle(arch, bundle.path());
  BundleManifest manifest;
  REQUIRE(decodeBundleManifest(readBytes(bundle.path() + "/manifest.json"),
                               manifest));
  const BundleKernelRecord &kernel =
      manifest.kernels[0].signature == testSignature(arch)
          ? manifest.kernels[0]
          : manifest.kernels[1];
  const std::string path = bundle.path() + "/" + kernel.file;
  SECTION("flipped bit") {
    std::string bytes = readBytes(path);
    bytes[bytes.size() / 2] ^= 0x04;
    writeBytes(path, bytes);
  }
  SECTION("truncated") { writeBytes(path, readBytes(path).substr(0, 100)); }
  SECTION("missing") { std::filesystem::remove(path); }

  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  std::unique_ptr<Runtime> runtime;
  REQUIRE(makeRuntime({generator, {bundle.path()}}, warnings, runtime));
  CodeObject code;
  REQUIRE(runtime->compile(testSignature(arch), code));
  CHECK(generator->calls() == 1);
  REQUIRE(warnings.count() == 1);
  CHECK_THAT(warnings.messages()[0],
             Catch::Contains(path) && Catch::Contains("damaged"));
  // The other kernel of the bundle is fine.
  REQUIRE(runtime->compile(testSignature(arch, 128), code));
  CHECK(generator->calls() == 1);
}

TEST_CASE("the default variant set holds valid signatures, fp8 not on gfx90a",
          "[bundle]") {
  std::vector<Signature> set = defaultVariantSet({Arch::SM90A, Arch::GFX90A});
  std::vector<std::string> reshape, gather, paged;
  for (const Signature &sig : set) {
    INFO(sig.canonical());
    CHECK(sig.validate());
    CHECK_FALSE((sig.arch == Arch::GFX90A && sig.kvType == DType::FP8E4M3));
    if (sig.op == OpKind::ReshapeAndCache)
      reshape.push_back(sig.canonical());
    if (sig.op == OpKind::GatherCache)
      gather.push_back(sig.canonical());
    if (sig.op == OpKind::PagedDecode && sig.arch == Arch::SM90A)
      paged.push_back(sig.canonical());
  }
  // Llama-3-8B paged decode: pages 16/64 x bf16/fp8, then q_len 4; then
  // MPT-7B's ALiBi decode.
  const std::string pagedPrefix = "paged_decode hq=32 hkv=8 v=128 ";
  const std::string pagedSuffix = " window=-1 softcap=0 alibi=0 lse=1 q=bf16 ";
  CHECK(paged ==
        std::vector<std::string>{
            pagedPrefix + "q_len=1 page=16" + pagedSuffix + "kv=bf16 out=bf16 arch=sm_90a",
            pagedPrefix + "q_len=1 page=64" + pagedSuffix + "kv=bf16 out=bf16 arch=sm_90a",
            pagedPrefix + "q_len=1 page=16" + pagedSuffix + "kv=fp8e4m3 out=bf16 arch=sm_90a",
            pagedPrefix + "q_len=1 page=64" + pagedSuffix + "kv=fp8e4m3 out=bf16 arch=sm_90a",
            pagedPrefix + "q_len=4 page=16" + pagedSuffix + "kv=bf16 out=bf16 arch=sm_90a",
            "paged_decode hq=32 hkv=32 v=128 q_len=1 page=16 window=-1 softcap=0 alibi=1 "
            "lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_90a"});
  // The GQA cache write at Llama-3-8B's shape, pages 16 and 64.
  CHECK(reshape == std::vector<std::string>{
                       "reshape_and_cache hkv=8 v=128 page=16 kv=bf16 "
                       "arch=sm_90a",
                       "reshape_and_cache hkv=8 v=128 page=64 kv=bf16 "
                       "arch=sm_90a",
                       "reshape_and_cache hkv=8 v=128 page=16 in=bf16 "
                       "kv=fp8e4m3 arch=sm_90a",
                       "reshape_and_cache hkv=8 v=128 page=64 in=bf16 "
                       "kv=fp8e4m3 arch=sm_90a",
                       "reshape_and_cache hkv=8 v=128 page=16 kv=bf16 "
                       "arch=gfx90a",
                       "reshape_and_cache hkv=8 v=128 page=64 kv=bf16 "
                       "arch=gfx90a"});
  // Its read side for extend, into bf16.
  CHECK(gather == std::vector<std::string>{
                      "gather_cache hkv=8 v=128 page=16 kv=bf16 arch=sm_90a",
                      "gather_cache hkv=8 v=128 page=64 kv=bf16 arch=sm_90a",
                      "gather_cache hkv=8 v=128 page=16 kv=fp8e4m3 out=bf16 "
                      "arch=sm_90a",
                      "gather_cache hkv=8 v=128 page=64 kv=fp8e4m3 out=bf16 "
                      "arch=sm_90a",
                      "gather_cache hkv=8 v=128 page=16 kv=bf16 arch=gfx90a",
                      "gather_cache hkv=8 v=128 page=64 kv=bf16 "
                      "arch=gfx90a"});
}
