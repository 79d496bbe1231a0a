//===- AOTBundleTest.cpp - a bundle of the real generator's kernels -------===//
//
// What a deployment does: build kernels ahead of time with the MLIR
// generator (compile-only, NVRTC or clang-22), ship the bundle, and load it
// in a runtime that has no generator at all.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "TestSupport.h"
#include "mlagen/Bundle/Bundle.h"
#include "mlagen/Compiler/Pipeline.h"
#include "mlagen/Runtime/PrebuiltKernels.h"

using namespace mlagen;
using namespace mlagen::test;

namespace {

// The MLIR generator, counting its calls.
class CountedMLIRGenerator final : public SourceGenerator {
public:
  Status generate(const Signature &sig, GeneratedKernel &out) override {
    ++calls;
    return inner_->generate(sig, out);
  }
  std::string identity() const override { return inner_->identity(); }
  std::atomic<int> calls{0};

private:
  std::unique_ptr<SourceGenerator> inner_ = createMLIRSourceGenerator();
};

std::unique_ptr<Runtime> compileOnly(std::shared_ptr<SourceGenerator> gen,
                                     std::vector<std::string> bundles,
                                     WarningLog &warnings) {
  RuntimeOptions options;
  options.generator = std::move(gen);
  options.bundlePaths = std::move(bundles);
  options.backend = BackendKind::None;
  options.diskCache = false; // only the bundle can serve
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  Status status = Runtime::create(std::move(options), runtime);
  REQUIRE(status);
  return runtime;
}

} // namespace

TEST_CASE("a bundle of generated kernels serves a runtime without a "
          "generator",
          "[aot-bundle]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  const Arch arch = *target.arch;
  ScratchDirectory bundle;
  WarningLog warnings;
  Signature causal; // DeepSeek-V3 prefill, qk 192 / v 128
  causal.arch = arch;
  Signature chunk = causal;
  chunk.mask = Mask::None;

  auto builder = compileOnly(std::make_shared<CountedMLIRGenerator>(), {},
                             warnings);
  std::vector<CodeObject> built(2);
  REQUIRE(builder->compile(causal, built[0]));
  REQUIRE(builder->compile(chunk, built[1]));
  REQUIRE(buildBundle(*builder, {causal, chunk}, bundle.path(), 2, nullptr));

  auto aotOnly = compileOnly(nullptr, {bundle.path()}, warnings);
  for (int i = 0; i < 2; ++i) {
    const Signature &sig = i == 0 ? causal : chunk;
    INFO(sig.canonical());
    CodeObject found;
    REQUIRE(aotOnly->compile(sig, found));
    CHECK(found.binary == built[i].binary);
    CHECK(found.entryName == "mlagen_prefill");
    CHECK(found.threadsPerBlock == built[i].threadsPerBlock);
    CHECK(found.sharedBytes == built[i].sharedBytes);
    CHECK(found.tileQ == built[i].tileQ);
    CHECK(found.cacheKey == built[i].cacheKey);
    CHECK(found.generatorIdentity == built[i].generatorIdentity);
  }
  Signature absent = causal;
  absent.numQHeads = absent.numKVHeads = 32;
  CodeObject code;
  CHECK(aotOnly->compile(absent, code).code() == StatusCode::NoBackend);

  // The same generator and compiler: the bundle comes before compiling.
  auto generator = std::make_shared<CountedMLIRGenerator>();
  auto jit = compileOnly(generator, {bundle.path()}, warnings);
  REQUIRE(jit->compile(causal, code));
  CHECK(generator->calls == 0);
  REQUIRE(jit->compile(absent, code));
  CHECK(generator->calls == 1);
  CHECK(warnings.count() == 0);
}
