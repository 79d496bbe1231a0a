//===- CacheAdminTest.cpp - list, verify and prune the disk cache ---------===//
//
// The library behind `mlagen cache`: entries are made by real compile-only
// Runtimes (counting fake generator, NVRTC or clang-22), then aged, damaged
// and pruned here.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "Hash.h"
#include "TestSupport.h"
#include "mlagen/Runtime/CacheAdmin.h"

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace mlagen;
using namespace mlagen::test;

namespace {

std::unique_ptr<Runtime> cachingRuntime(std::shared_ptr<SourceGenerator> gen,
                                        const std::string &dir,
                                        WarningLog &warnings) {
  RuntimeOptions options;
  options.generator = std::move(gen);
  options.backend = BackendKind::None;
  options.cacheDir = dir;
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  Status status = Runtime::create(std::move(options), runtime);
  REQUIRE(status);
  return runtime;
}

void setLastUse(const std::string &path, int64_t seconds) {
  const timespec times[2] = {{0, UTIME_OMIT}, {seconds, 0}};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

int64_t lastUse(const std::string &path) {
  struct stat info;
  REQUIRE(stat(path.c_str(), &info) == 0);
  return info.st_mtim.tv_sec;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Three entries (qk 64, 128, 192) with last uses 1000, 2000, 3000 s.
struct ThreeEntries {
  ScratchDirectory dir;
  WarningLog warnings;
  std::vector<CodeObject> codes;
  std::vector<std::string> paths;

  explicit ThreeEntries(Arch arch) {
    auto runtime = cachingRuntime(std::make_shared<CountingGenerator>(),
                                  dir.path(), warnings);
    for (int qk : {64, 128, 192}) {
      CodeObject code;
      REQUIRE(runtime->compile(testSignature(arch, qk), code));
      std::string path =
          cacheVersionDir(dir.path()) + "/" + code.cacheKey + ".entry";
      setLastUse(path, 1000 * qk / 64);
      codes.push_back(code);
      paths.push_back(path);
    }
  }
};

#define REQUIRE_COMPILER(arch)                                                 \
  CompileTarget target_ = findCompileTarget();                                 \
  if (!target_.arch) {                                                         \
    WARN("skipped: no device compiler (" << target_.whyNot << ")");            \
    SUCCEED("no device compiler");                                             \
    return;                                                                    \
  }                                                                            \
  const Arch arch = *target_.arch;

} // namespace

TEST_CASE("scanCache lists entries with what built them, least recently "
          "used first",
          "[cache-admin]") {
  REQUIRE_COMPILER(arch);
  ThreeEntries cache(arch);
  // Make qk=192 the oldest.
  setLastUse(cache.paths[2], 500);

  CacheScan scan;
  REQUIRE(scanCache(cache.dir.path(), scan));
  CHECK(scan.directory == cacheVersionDir(cache.dir.path()));
  REQUIRE(scan.entries.size() == 3);
  CHECK(scan.entries[0].path == cache.paths[2]);
  CHECK(scan.entries[1].path == cache.paths[0]);
  CHECK(scan.entries[2].path == cache.paths[1]);
  uint64_t total = 0;
  for (const CachedKernelInfo &entry : scan.entries) {
    INFO(entry.path);
    CHECK(entry.intact);
    CHECK(entry.problem.empty());
    CHECK(entry.arch == arch);
    CHECK(entry.generator == "fake-generator/1");
    CHECK_THAT(entry.compiler, Catch::StartsWith(arch == Arch::SM90A
                                                     ? "nvrtc"
                                                     : "clang"));
    CHECK(entry.sizeBytes == std::filesystem::file_size(entry.path));
    total += entry.sizeBytes;
  }
  CHECK(scan.entries[0].signature == testSignature(arch, 192).canonical());
  CHECK(scan.entries[0].lastUse == 500);
  CHECK(scan.entryBytes == total);
  // Lock files are left by each build and nobody holds them now.
  CHECK(scan.staleFiles.size() == 3);
  // Scanning reads every entry but is not a use.
  CHECK(lastUse(cache.paths[2]) == 500);

  // A scan of a cache that was never written is empty, not an error.
  ScratchDirectory empty;
  REQUIRE(scanCache(empty.path() + "/none", scan));
  CHECK(scan.entries.empty());
  CHECK(scanCache("", scan).code() == StatusCode::CacheError);
}

TEST_CASE("a disk cache hit records the entry's last use", "[cache-admin]") {
  REQUIRE_COMPILER(arch);
  ThreeEntries cache(arch);
  auto generator = std::make_shared<CountingGenerator>();
  auto runtime = cachingRuntime(generator, cache.dir.path(), cache.warnings);
  CodeObject code;
  int64_t before = std::time(nullptr);
  REQUIRE(runtime->compile(testSignature(arch, 64), code));
  CHECK(generator->calls() == 0);
  CHECK(lastUse(cache.paths[0]) >= before);
  CHECK(lastUse(cache.paths[1]) == 2000);
}

TEST_CASE("verify finds damaged, misplaced and foreign entries",
          "[cache-admin]") {
  REQUIRE_COMPILER(arch);
  ThreeEntries cache(arch);
  std::string flipped = readBytes(cache.paths[0]);
  flipped[flipped.size() - 3] ^= 0x40;
  writeBytes(cache.paths[0], flipped);
  std::string good = readBytes(cache.paths[1]);
  writeBytes(cache.paths[1], good.substr(0, good.size() / 3));
  // An intact entry under another key's name: its contents hash elsewhere.
  std::string misplaced =
      cacheVersionDir(cache.dir.path()) + "/" + std::string(32, 'a') + ".entry";
  writeBytes(misplaced, readBytes(cache.paths[2]));

  CacheScan scan;
  REQUIRE(scanCache(cache.dir.path(), scan));
  REQUIRE(scan.entries.size() == 4);
  std::map<std::string, std::string> problems;
  for (const CachedKernelInfo &entry : scan.entries)
    problems[entry.path] = entry.problem;
  CHECK(problems[cache.paths[0]] == "bad checksum");
  CHECK_THAT(problems[cache.paths[1]], Catch::StartsWith("size mismatch"));
  CHECK(problems[cache.paths[2]].empty());
  CHECK(problems[misplaced] == "its key is not the hash of what built it");

  // verify --remove: the three bad ones go, with the index of the damaged.
  CacheCleanReport report;
  CacheCleanOptions options;
  REQUIRE(cleanCache(cache.dir.path(), options, report));
  CHECK(report.removedEntries.size() == 3);
  CHECK(cacheEntries(cache.dir.path()) ==
        std::vector<std::string>{cache.paths[2]});
  REQUIRE(scanCache(cache.dir.path(), scan));
  CHECK(scan.staleFiles.empty());

  // The survivors serve; the removed ones are rebuilt, without warnings.
  auto generator = std::make_shared<CountingGenerator>();
  WarningLog warnings;
  auto runtime = cachingRuntime(generator, cache.dir.path(), warnings);
  CodeObject code;
  for (int qk : {64, 128, 192})
    REQUIRE(runtime->compile(testSignature(arch, qk), code));
  CHECK(generator->calls() == 2);
  CHECK(warnings.count() == 0);
}

TEST_CASE("prune evicts least recently used entries down to a size",
          "[cache-admin]") {
  REQUIRE_COMPILER(arch);
  ThreeEntries cache(arch);
  CacheScan scan;
  REQUIRE(scanCache(cache.dir.path(), scan));
  const uint64_t newest = std::filesystem::file_size(cache.paths[2]);

  CacheCleanOptions options;
  options.maxBytes = newest; // room for one: the most recently used stays
  CacheCleanReport report;
  REQUIRE(cleanCache(cache.dir.path(), options, report));
  CHECK(report.removedEntries ==
        std::vector<std::string>{cache.paths[0], cache.paths[1]});
  CHECK(report.bytesFreed == scan.entryBytes - newest);
  CHECK(report.entryBytesLeft == newest);
  CHECK(cacheEntries(cache.dir.path()) ==
        std::vector<std::string>{cache.paths[2]});
  // Their lock files and index files went too.
  REQUIRE(scanCache(cache.dir.path(), scan));
  CHECK(scan.staleFiles.empty());
  size_t indexFiles = 0;
  for (const auto &file : std::filesystem::directory_iterator(
           cacheVersionDir(cache.dir.path()) + "/index"))
    indexFiles += file.path().extension() == ".json";
  CHECK(indexFiles == 1);

  // A generous limit removes nothing; 0 removes everything.
  options.maxBytes = 1u << 30;
  REQUIRE(cleanCache(cache.dir.path(), options, report));
  CHECK(report.removedEntries.empty());
  options.maxBytes = 0;
  REQUIRE(cleanCache(cache.dir.path(), options, report));
  CHECK(report.removedEntries.size() == 1);
  CHECK(cacheEntries(cache.dir.path()).empty());
}

TEST_CASE("prune removes temp files of dead writers and unheld locks only",
          "[cache-admin]") {
  ScratchDirectory dir;
  const std::string v = cacheVersionDir(dir.path());
  std::filesystem::create_directories(v + "/index");
  // A child that has exited: its pid is free.
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  int waitStatus;
  waitpid(dead, &waitStatus, 0);
  const std::string key(32, 'b');
  const std::string deadTemp =
      v + "/" + key + ".entry.tmp." + std::to_string(dead) + ".0";
  const std::string liveTemp =
      v + "/" + key + ".entry.tmp." + std::to_string(getpid()) + ".1";
  const std::string oldTemp = v + "/index/x.json.tmp." +
                              std::to_string(getpid()) + ".2";
  const std::string freeLock = v + "/" + key + ".lock";
  const std::string heldLock = v + "/" + std::string(32, 'c') + ".lock";
  for (const std::string &path : {deadTemp, liveTemp, oldTemp, freeLock,
                                  heldLock})
    writeBytes(path, "");
  setLastUse(oldTemp, 1000); // hours old: abandoned, whoever wrote it
  int held = open(heldLock.c_str(), O_RDONLY);
  REQUIRE(flock(held, LOCK_EX) == 0);

  CacheScan scan;
  REQUIRE(scanCache(dir.path(), scan));
  CHECK(scan.staleFiles ==
        std::vector<std::string>{deadTemp, freeLock, oldTemp});
  CacheCleanReport report;
  REQUIRE(cleanCache(dir.path(), {}, report));
  CHECK(report.removedFiles.size() == 3);
  CHECK_FALSE(std::filesystem::exists(deadTemp));
  CHECK_FALSE(std::filesystem::exists(freeLock));
  CHECK_FALSE(std::filesystem::exists(oldTemp));
  CHECK(std::filesystem::exists(liveTemp));
  CHECK(std::filesystem::exists(heldLock));
  close(held);
}

TEST_CASE("a build waiting on a lock file that prune removed locks the new "
          "one",
          "[cache-admin]") {
  REQUIRE_COMPILER(arch);
  ScratchDirectory dir;
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  auto runtime = cachingRuntime(generator, dir.path(), warnings);
  const Signature sig = testSignature(arch);
  // The key's lock path, from a first build in another directory.
  std::string key;
  {
    ScratchDirectory probe;
    CodeObject code;
    REQUIRE(cachingRuntime(std::make_shared<CountingGenerator>(),
                           probe.path(), warnings)
                ->compile(sig, code));
    key = code.cacheKey;
  }
  const std::string lockPath = cacheVersionDir(dir.path()) + "/" + key + ".lock";
  std::filesystem::create_directories(cacheVersionDir(dir.path()));

  // "Prune" holds the lock while the runtime starts to wait on it...
  int pruner = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(flock(pruner, LOCK_EX) == 0);
  std::atomic<bool> done{false};
  std::thread build([&] {
    CodeObject code;
    CHECK(runtime->compile(sig, code));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // ...removes the file, and another builder locks a new one at the path.
  unlink(lockPath.c_str());
  int other = open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(flock(other, LOCK_EX) == 0);
  close(pruner);
  // The runtime now holds a lock on a removed file: it must not build.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(done);
  CHECK(generator->calls() == 0);
  close(other);
  build.join();
  CHECK(done);
  CHECK(generator->calls() == 1);
}
