//===- KernelCacheTest.cpp - memory and disk caches through Runtime -------===//
//
// Compile-only runtimes with a counting fake generator and a real compiler
// (NVRTC for sm_90a, else clang-22 for gfx942): the generator's call count
// says whether a request hit a cache.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "DiskCache.h"
#include "TestSupport.h"
#include "mlagen/Runtime/PrebuiltKernels.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

using namespace mlagen;
using namespace mlagen::test;

namespace {

std::unique_ptr<Runtime> compileOnlyRuntime(
    std::shared_ptr<SourceGenerator> generator, const std::string &cacheDir,
    WarningLog &warnings, bool diskCache = true) {
  RuntimeOptions options;
  options.generator = std::move(generator);
  options.backend = BackendKind::None;
  options.cacheDir = cacheDir;
  options.diskCache = diskCache;
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  Status status = Runtime::create(std::move(options), runtime);
  REQUIRE(status);
  return runtime;
}

// The arch these tests compile for; nullopt (after a WARN) when no
// compiler is installed.
std::optional<Arch> testArch() {
  CompileTarget target = findCompileTarget();
  if (!target.arch)
    WARN("skipped: NVRTC not found and no clang-22 either (" << target.whyNot
                                                            << ")");
  else if (*target.arch != Arch::SM90A)
    WARN("NVRTC not found: cache tests use clang-22 for gfx942");
  return target.arch;
}

#define REQUIRE_COMPILER(arch)                                                 \
  std::optional<Arch> arch = testArch();                                       \
  if (!arch) {                                                                 \
    SUCCEED("no device compiler installed");                                   \
    return;                                                                    \
  }

void overwrite(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string contents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

TEST_CASE("a kernel is compiled once, then found in memory and on disk",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  auto first = compileOnlyRuntime(generator, dir.path(), warnings);
  const Signature sig = testSignature(*arch);

  CodeObject code;
  REQUIRE(first->compile(sig, code));
  CHECK(generator->calls() == 1);
  CHECK(code.arch == *arch);
  CHECK(code.entryName == "mlagen_test_kernel");
  CHECK(code.threadsPerBlock == 128);
  CHECK(code.tileQ == 64);
  CHECK(code.cacheKey.size() == 32);
  CHECK(code.binary.compare(0, 4, "\x7f" "ELF") == 0);
  REQUIRE(cacheEntries(dir.path()).size() == 1);
  CHECK(cacheEntries(dir.path())[0] ==
        cacheVersionDir(dir.path()) + "/" + code.cacheKey + ".entry");

  CodeObject again;
  REQUIRE(first->compile(sig, again));
  CHECK(generator->calls() == 1); // memory hit
  CHECK(again.binary == code.binary);

  // A second Runtime in this process: nothing in memory, the entry on disk.
  auto secondGenerator = std::make_shared<CountingGenerator>();
  auto second = compileOnlyRuntime(secondGenerator, dir.path(), warnings);
  CodeObject fromDisk;
  REQUIRE(second->compile(sig, fromDisk));
  CHECK(secondGenerator->calls() == 0);
  CHECK(fromDisk.binary == code.binary);
  CHECK(fromDisk.entryName == code.entryName);
  CHECK(fromDisk.tileQ == code.tileQ);
  CHECK(fromDisk.cacheKey == code.cacheKey);

  // Another signature, and another generator identity, are other keys.
  REQUIRE(second->compile(testSignature(*arch, 128), fromDisk));
  CHECK(secondGenerator->calls() == 1);
  auto newTemplates = std::make_shared<CountingGenerator>("fake-generator/2");
  auto third = compileOnlyRuntime(newTemplates, dir.path(), warnings);
  REQUIRE(third->compile(sig, fromDisk));
  CHECK(newTemplates->calls() == 1);
  CHECK(fromDisk.cacheKey != code.cacheKey);
  CHECK(cacheEntries(dir.path()).size() == 3);
  CHECK(warnings.count() == 0);
}

TEST_CASE("without a disk cache, kernels live in memory only", "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  CodeObject code;
  for (int i = 0; i < 2; ++i) {
    auto runtime =
        compileOnlyRuntime(generator, dir.path(), warnings, /*diskCache=*/false);
    REQUIRE(runtime->compile(testSignature(*arch), code));
    REQUIRE(runtime->compile(testSignature(*arch), code));
  }
  CHECK(generator->calls() == 2);
  CHECK(cacheEntries(dir.path()).empty());
  CHECK(warnings.count() == 0);
}

TEST_CASE("a corrupt entry is detected, warned about once and rebuilt",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  const Signature sig = testSignature(*arch);
  CodeObject original;
  REQUIRE(compileOnlyRuntime(std::make_shared<CountingGenerator>(), dir.path(),
                             warnings)
              ->compile(sig, original));
  const std::string entry = cacheEntries(dir.path()).at(0);
  const std::string good = contents(entry);

  struct Damage {
    const char *name;
    std::string bytes;
    const char *reason;
  };
  std::string flipped = good, badMagic = good;
  flipped[good.size() / 2] ^= 0x01;
  badMagic[1] = '?';
  const Damage damages[] = {
      {"truncated", good.substr(0, good.size() / 2), "size mismatch"},
      {"one flipped bit", flipped, "bad checksum"},
      {"bad magic", badMagic, "bad magic"},
      {"empty", "", "truncated header"},
  };
  for (const Damage &damage : damages) {
    SECTION(damage.name) {
      overwrite(entry, damage.bytes);
      WarningLog log;
      auto generator = std::make_shared<CountingGenerator>();
      CodeObject rebuilt;
      REQUIRE(compileOnlyRuntime(generator, dir.path(), log)
                  ->compile(sig, rebuilt));
      CHECK(generator->calls() == 1);
      CHECK(rebuilt.binary == original.binary);
      REQUIRE(log.count() == 1);
      CHECK_THAT(log.messages()[0], Catch::Contains("corrupt cache entry") &&
                                        Catch::Contains(entry) &&
                                        Catch::Contains(damage.reason));
      CHECK(contents(entry) == good); // republished whole

      // Intact again: the next Runtime compiles nothing.
      auto next = std::make_shared<CountingGenerator>();
      REQUIRE(compileOnlyRuntime(next, dir.path(), log)->compile(sig, rebuilt));
      CHECK(next->calls() == 0);
      CHECK(log.count() == 1);
    }
  }
}

TEST_CASE("a corrupt entry is warned about once per process path",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  const Signature sig = testSignature(*arch);
  CodeObject code;
  REQUIRE(compileOnlyRuntime(std::make_shared<CountingGenerator>(), dir.path(),
                             warnings)
              ->compile(sig, code));
  overwrite(cacheEntries(dir.path()).at(0), "garbage");

  // A generator that fails cannot rebuild, so every request reads the
  // corrupt entry again; the warning is still given once.
  auto failing = std::make_shared<CountingGenerator>();
  failing->fail = true;
  auto runtime = compileOnlyRuntime(failing, dir.path(), warnings);
  for (int i = 0; i < 3; ++i) {
    Status status = runtime->compile(sig, code);
    CHECK(status.code() == StatusCode::GeneratorError);
  }
  CHECK(failing->calls() == 3);
  CHECK(warnings.count() == 1);
}

TEST_CASE("an unwritable cache directory degrades to memory with one warning",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  // A path under a regular file cannot be created, even by root.
  overwrite(dir.path() + "/file", "not a directory");
  std::vector<std::string> roots = {dir.path() + "/file/cache"};
  if (geteuid() != 0) {
    std::filesystem::create_directory(dir.path() + "/readonly");
    std::filesystem::permissions(dir.path() + "/readonly",
                                 std::filesystem::perms::owner_read |
                                     std::filesystem::perms::owner_exec);
    roots.push_back(dir.path() + "/readonly");
  }
  for (const std::string &root : roots) {
    INFO("cache root " << root);
    WarningLog warnings;
    auto generator = std::make_shared<CountingGenerator>();
    auto runtime = compileOnlyRuntime(generator, root, warnings);
    CodeObject code;
    REQUIRE(runtime->compile(testSignature(*arch), code));
    REQUIRE(runtime->compile(testSignature(*arch, 128), code));
    REQUIRE(runtime->compile(testSignature(*arch), code));
    CHECK(generator->calls() == 2);
    REQUIRE(warnings.count() == 1);
    CHECK_THAT(warnings.messages()[0], Catch::Contains("memory only"));
  }
}

TEST_CASE("a full disk degrades to memory with one warning", "[cache]") {
  CompileTarget target = findCompileTarget();
  if (target.arch != Arch::SM90A) {
    // clang writes its output to files, which the size limit would stop.
    WARN("skipped: NVRTC not found (" << target.whyNot << ")");
    SUCCEED("needs NVRTC");
    return;
  }
  ScratchDirectory dir;
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  auto runtime = compileOnlyRuntime(generator, dir.path(), warnings);

  // RLIMIT_FSIZE makes every write past 64 bytes fail with EFBIG, as a full
  // disk fails with ENOSPC.
  rlimit saved;
  getrlimit(RLIMIT_FSIZE, &saved);
  auto savedHandler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit tiny = saved;
  tiny.rlim_cur = 64;
  setrlimit(RLIMIT_FSIZE, &tiny);
  CodeObject code;
  Status first = runtime->compile(testSignature(Arch::SM90A), code);
  Status second = runtime->compile(testSignature(Arch::SM90A, 128), code);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, savedHandler);

  CHECK(first);
  CHECK(second);
  CHECK(generator->calls() == 2);
  REQUIRE(warnings.count() == 1);
  CHECK_THAT(warnings.messages()[0], Catch::Contains("File too large") &&
                                         Catch::Contains("memory only"));
  CHECK(cacheEntries(dir.path()).empty());
  for (const auto &file :
       std::filesystem::directory_iterator(cacheVersionDir(dir.path())))
    CHECK_THAT(file.path().string(), !Catch::Contains(".tmp."));
}

TEST_CASE("eight threads asking for one kernel compile it once", "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  generator->delay = std::chrono::milliseconds(100);
  auto runtime = compileOnlyRuntime(generator, dir.path(), warnings);

  std::vector<CodeObject> codes(8);
  std::vector<Status> statuses(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      statuses[i] = runtime->compile(testSignature(*arch), codes[i]);
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int i = 0; i < 8; ++i) {
    CHECK(statuses[i]);
    CHECK(codes[i].binary == codes[0].binary);
  }
  CHECK(generator->calls() == 1);
}

TEST_CASE("Runtimes sharing a cache directory compile a key once",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  // Two Runtimes exclude each other through the key's file lock, exactly
  // as two processes do.
  auto generatorA = std::make_shared<CountingGenerator>();
  auto generatorB = std::make_shared<CountingGenerator>();
  generatorA->delay = generatorB->delay = std::chrono::milliseconds(200);
  auto runtimeA = compileOnlyRuntime(generatorA, dir.path(), warnings);
  auto runtimeB = compileOnlyRuntime(generatorB, dir.path(), warnings);

  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      CodeObject code;
      Runtime &runtime = i % 2 ? *runtimeA : *runtimeB;
      if (!runtime.compile(testSignature(*arch), code))
        ++failures;
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(failures == 0);
  CHECK(generatorA->calls() + generatorB->calls() == 1);
  CHECK(warnings.count() == 0);
}

TEST_CASE("a Runtime without a generator finds kernels built before",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  const Signature sig = testSignature(*arch);
  CodeObject built;
  REQUIRE(compileOnlyRuntime(std::make_shared<CountingGenerator>(), dir.path(),
                             warnings)
              ->compile(sig, built));

  auto prebuiltOnly = compileOnlyRuntime(nullptr, dir.path(), warnings);
  CodeObject found;
  REQUIRE(prebuiltOnly->compile(sig, found));
  CHECK(found.binary == built.binary);
  CHECK(found.cacheKey == built.cacheKey);

  Status missing = prebuiltOnly->compile(testSignature(*arch, 64), found);
  CHECK(missing.code() == StatusCode::NoBackend);
  CHECK_THAT(missing.message(), Catch::Contains("no source generator") &&
                                    Catch::Contains("qk=64"));
  CHECK(warnings.count() == 0);
}

TEST_CASE("generator failures and bad generator output are reported",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  auto runtime = compileOnlyRuntime(generator, "", warnings, false);
  CodeObject code;

  Signature invalid = testSignature(*arch, 100);
  CHECK(runtime->compile(invalid, code).code() == StatusCode::InvalidSignature);
  CHECK(generator->calls() == 0);

  generator->fail = true;
  Status failed = runtime->compile(testSignature(*arch), code);
  CHECK(failed.code() == StatusCode::GeneratorError);
  CHECK(failed.message() == "fake generator failed");
  generator->fail = false;

  generator->entryName = "not an identifier";
  CHECK_THAT(runtime->compile(testSignature(*arch), code).message(),
             Catch::Contains("is not an identifier"));
  generator->entryName = "mlagen_test_kernel";

  Signature pinned = testSignature(*arch);
  pinned.tileQ = 128;
  generator->tileQ = 64;
  CHECK_THAT(runtime->compile(pinned, code).message(),
             Catch::Contains("pins tile_q=128"));
  generator->tileQ = 0;

  generator->source = "this is not C++";
  Status broken = runtime->compile(testSignature(*arch), code);
  CHECK(broken.code() == StatusCode::CompileError);
  generator->source = kTrivialKernelSource;

  // Nothing failed sticks: the same signature builds once fixed.
  REQUIRE(runtime->compile(testSignature(*arch), code));
}

namespace {
// A bundle of one kernel.
class OneKernelBundle final : public PrebuiltKernels {
public:
  OneKernelBundle(Signature sig, CodeObject code)
      : sig_(std::move(sig)), code_(std::move(code)) {}
  bool find(const Signature &sig, CodeObject &out) const override {
    ++lookups;
    if (!(sig == sig_))
      return false;
    out = code_;
    return true;
  }
  mutable std::atomic<int> lookups{0};

private:
  Signature sig_;
  CodeObject code_;
};
} // namespace

TEST_CASE("prebuilt kernels come before the disk cache and the generator",
          "[cache]") {
  ScratchDirectory dir;
  WarningLog warnings;
  const Signature sig = testSignature(Arch::GFX950);
  CodeObject bundled;
  bundled.arch = Arch::GFX950;
  bundled.binary = "bundled code object";
  bundled.entryName = "mlagen_prefill";
  bundled.threadsPerBlock = 512;
  bundled.tileQ = 128;
  auto bundle = std::make_shared<OneKernelBundle>(sig, bundled);

  auto generator = std::make_shared<CountingGenerator>();
  RuntimeOptions options;
  options.generator = generator;
  options.prebuilt = {bundle};
  options.backend = BackendKind::None;
  options.cacheDir = dir.path();
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));

  CodeObject found;
  REQUIRE(runtime->compile(sig, found));
  CHECK(found.binary == "bundled code object");
  CHECK(generator->calls() == 0);
  CHECK(cacheEntries(dir.path()).empty()); // not copied to disk
  REQUIRE(runtime->compile(sig, found));
  CHECK(bundle->lookups == 1); // then memory

  // Not in the bundle: the usual path (when a compiler is installed).
  Signature other = sig;
  other.headDimQK = 128;
  Status status = runtime->compile(other, found);
  CHECK(bundle->lookups == 2);
  if (status)
    CHECK(generator->calls() == 1);
  else
    CHECK(status.code() == StatusCode::NoBackend);
  CHECK(warnings.count() == 0);
}

namespace {
// Sets an environment variable for one scope; null unsets it.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      saved_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() {
    saved_ ? setenv(name_, saved_->c_str(), 1) : unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> saved_;
};
} // namespace

TEST_CASE("the cache directory: override, MLAGEN_CACHE_DIR, XDG, HOME",
          "[cache]") {
  ScopedEnv mlagen("MLAGEN_CACHE_DIR", "/m");
  ScopedEnv xdg("XDG_CACHE_HOME", "/x");
  ScopedEnv home("HOME", "/h");
  CHECK(DiskCache::resolveRoot("/o") == "/o");
  CHECK(DiskCache::resolveRoot("") == "/m");
  {
    ScopedEnv unset("MLAGEN_CACHE_DIR", nullptr);
    CHECK(DiskCache::resolveRoot("") == "/x/mlagen");
    ScopedEnv unsetXdg("XDG_CACHE_HOME", nullptr);
    CHECK(DiskCache::resolveRoot("") == "/h/.cache/mlagen");
  }
  DiskCache cache("/o", [](const std::string &) {});
  CHECK(cache.directory() == cacheVersionDir("/o"));
}

TEST_CASE("an intact entry of another signature under a key is not used",
          "[cache]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  CodeObject wanted, other;
  auto runtime = compileOnlyRuntime(std::make_shared<CountingGenerator>(),
                                    dir.path(), warnings);
  REQUIRE(runtime->compile(testSignature(*arch), wanted));
  REQUIRE(runtime->compile(testSignature(*arch, 128), other));
  const std::string versionDir = cacheVersionDir(dir.path());
  // A copied or misplaced file passes its checksum; what it records does
  // not match the key's signature.
  overwrite(versionDir + "/" + wanted.cacheKey + ".entry",
            contents(versionDir + "/" + other.cacheKey + ".entry"));

  WarningLog log;
  auto generator = std::make_shared<CountingGenerator>();
  CodeObject rebuilt;
  REQUIRE(compileOnlyRuntime(generator, dir.path(), log)
              ->compile(testSignature(*arch), rebuilt));
  CHECK(generator->calls() == 1);
  CHECK(rebuilt.cacheKey == wanted.cacheKey);
  REQUIRE(log.count() == 1);
  CHECK_THAT(log.messages()[0],
             Catch::Contains("corrupt cache entry") &&
                 Catch::Contains("built for '" +
                                 testSignature(*arch, 128).canonical()));
}
