//===- CrossProcessTest.cpp - one build per key across processes ----------===//

#include "CatchStatus.h"
#include "Process.h"
#include "TestSupport.h"
#include "mlagen/Runtime/CacheAdmin.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

using namespace mlagen;
using namespace mlagen::test;

namespace {

// The worker beside this executable (build trees get copied to other
// machines), else where the build put it.
std::string workerPath() {
  std::error_code error;
  auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    std::string beside = (self.parent_path() / "mlagen-cache-worker").string();
    if (isExecutable(beside))
      return beside;
  }
  return MLAGEN_CACHE_WORKER;
}

const std::string kWorker = workerPath();

// True when some process holds the flock of a key in `root`.
bool someKeyIsLocked(const std::string &root) {
  std::error_code error;
  for (const auto &file :
       std::filesystem::directory_iterator(cacheVersionDir(root), error)) {
    if (file.path().extension() != ".lock")
      continue;
    int fd = open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    if (held)
      return true;
  }
  return false;
}

// Starts `argv` without waiting for it; its stdout goes nowhere.
pid_t spawnWorker(std::vector<std::string> argv) {
  std::vector<char *> args;
  for (std::string &arg : argv)
    args.push_back(arg.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int error = posix_spawn(&pid, kWorker.c_str(), &actions, nullptr,
                          args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error == 0 ? pid : -1;
}

// The lines of `path`, one per build the workers logged.
std::map<std::string, int> countLines(const std::string &path) {
  std::string text;
  std::map<std::string, int> counts;
  if (!readFile(path, text))
    return counts;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1)
    ++counts[text.substr(start, end - start)];
  return counts;
}

} // namespace

TEST_CASE("eight processes cold-starting on one variant set build each "
          "kernel once",
          "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  ScratchDirectory dir;
  constexpr int kProcesses = 8, kVariants = 4;
  std::vector<int> exitCodes(kProcesses, -1);
  std::vector<std::string> outputs(kProcesses);
  std::vector<std::thread> threads;
  for (int i = 0; i < kProcesses; ++i)
    threads.emplace_back([&, i] {
      Status status = runProcess({kWorker, dir.path(), archName(*target.arch),
                                  "150", "--variants=4"},
                                 exitCodes[i], outputs[i]);
      (void)status;
    });
  for (std::thread &thread : threads)
    thread.join();
  int builds = 0;
  for (int i = 0; i < kProcesses; ++i) {
    INFO("worker " << i << " said: " << outputs[i]);
    CHECK(exitCodes[i] == 0);
    builds += std::atoi(outputs[i].c_str());
  }
  CHECK(builds == kVariants);
  // The log in the cache directory names each kernel exactly once.
  std::map<std::string, int> compiled = countLines(dir.path() + "/compile-log");
  CHECK(compiled.size() == kVariants);
  for (const auto &[signature, count] : compiled) {
    INFO(signature);
    CHECK(count == 1);
  }
  CacheScan scan;
  REQUIRE(scanCache(dir.path(), scan));
  CHECK(scan.entries.size() == kVariants);
  for (const CachedKernelInfo &entry : scan.entries) {
    INFO(entry.path << ": " << entry.problem);
    CHECK(entry.intact);
  }
}

TEST_CASE("a worker killed while writing an entry leaves none behind",
          "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (target.arch != Arch::SM90A) {
    // clang writes its output to files, so the size limit would stop it
    // before the cache does.
    WARN("skipped: NVRTC not found (" << target.whyNot << ")");
    SUCCEED("needs NVRTC");
    return;
  }
  ScratchDirectory dir;
  // SIGXFSZ kills the worker when its entry's temp file passes 1 KiB: an
  // entry of the test kernel is larger, the compile log's line smaller.
  int exitCode = 0;
  std::string output;
  REQUIRE(runProcess({kWorker, dir.path(), "sm_90a", "0",
                      "--file-size-limit=1024"},
                     exitCode, output));
  INFO("worker said: " << output);
  REQUIRE(exitCode == 128 + SIGXFSZ);
  CHECK(cacheEntries(dir.path()).empty());

  CacheScan scan;
  REQUIRE(scanCache(dir.path(), scan));
  CHECK(scan.entries.empty());
  bool leftTempFile = false;
  for (const std::string &path : scan.staleFiles)
    leftTempFile |= path.find(".entry.tmp.") != std::string::npos;
  CHECK(leftTempFile); // the half-written file, under its temp name

  // The next process builds it as if nothing had happened...
  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  RuntimeOptions options;
  options.generator = generator;
  options.backend = BackendKind::None;
  options.cacheDir = dir.path();
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));
  CodeObject code;
  REQUIRE(runtime->compile(testSignature(Arch::SM90A), code));
  CHECK(generator->calls() == 1);
  CHECK(warnings.count() == 0);
  CHECK(cacheEntries(dir.path()).size() == 1);

  // ...and prune clears what the dead writer left.
  CacheCleanReport report;
  REQUIRE(cleanCache(dir.path(), {}, report));
  CHECK(report.removedEntries.empty());
  REQUIRE(scanCache(dir.path(), scan));
  for (const std::string &path : scan.staleFiles)
    CHECK_THAT(path, !Catch::Contains(".tmp."));
  CHECK(scan.entries.size() == 1);
}

TEST_CASE("workers killed at any moment never leave a corrupt entry",
          "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  ScratchDirectory dir;
  // Kills land in start-up, generation, compilation, writing or after.
  for (int delayMs : {0, 5, 20, 60, 120, 250, 400}) {
    pid_t pid = spawnWorker({kWorker, dir.path(), archName(*target.arch),
                             "30", "--variants=2"});
    REQUIRE(pid > 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    kill(pid, SIGKILL);
    int waitStatus = 0;
    waitpid(pid, &waitStatus, 0);
  }
  CacheScan scan;
  REQUIRE(scanCache(dir.path(), scan));
  for (const CachedKernelInfo &entry : scan.entries) {
    INFO(entry.path << ": " << entry.problem);
    CHECK(entry.intact);
  }
  WarningLog warnings;
  RuntimeOptions options;
  options.generator = std::make_shared<CountingGenerator>();
  options.backend = BackendKind::None;
  options.cacheDir = dir.path();
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));
  CodeObject code;
  CHECK(runtime->compile(testSignature(*target.arch, 64), code));
  CHECK(runtime->compile(testSignature(*target.arch, 128), code));
  CHECK(warnings.count() == 0);
}

TEST_CASE("a build lock dies with the process that held it",
          "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  ScratchDirectory dir;
  // A worker that would hold the key's lock for a minute...
  pid_t pid =
      spawnWorker({kWorker, dir.path(), archName(*target.arch), "60000"});
  REQUIRE(pid > 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!someKeyIsLocked(dir.path()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  bool locked = someKeyIsLocked(dir.path());
  // ...is killed while building.
  kill(pid, SIGKILL);
  int waitStatus = 0;
  waitpid(pid, &waitStatus, 0);
  REQUIRE(locked);

  WarningLog warnings;
  auto generator = std::make_shared<CountingGenerator>();
  RuntimeOptions options;
  options.generator = generator;
  options.backend = BackendKind::None;
  options.cacheDir = dir.path();
  options.onWarning = warnings.sink();
  std::unique_ptr<Runtime> runtime;
  REQUIRE(Runtime::create(std::move(options), runtime));
  auto start = std::chrono::steady_clock::now();
  CodeObject code;
  REQUIRE(runtime->compile(testSignature(*target.arch), code));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(generator->calls() == 1);
  CHECK(warnings.count() == 0);
}

TEST_CASE("MLAGEN_LOG says what the cache did on stderr", "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  ScratchDirectory dir;
  // The level is read once per process: each run is a fresh worker.
  auto run = [&](const char *level) {
    setenv("MLAGEN_LOG", level, 1);
    int exitCode = -1;
    std::string output;
    Status status = runProcess(
        {kWorker, dir.path(), archName(*target.arch), "0"}, exitCode, output);
    unsetenv("MLAGEN_LOG");
    CHECK(status);
    CHECK(exitCode == 0);
    return output;
  };
  std::string first = run("info");
  CHECK_THAT(first, Catch::Contains("mlagen: info: runtime on compile-only") &&
                        Catch::Contains("mlagen: info: disk cache miss") &&
                        Catch::Contains("mlagen: info: built '") &&
                        Catch::Contains(" ms, "));
  CHECK_THAT(first, !Catch::Contains("debug:"));
  CHECK_THAT(run("debug"), Catch::Contains("mlagen: info: disk cache hit"));
  CHECK_THAT(run("warn"), !Catch::Contains("mlagen: info"));

  // Warnings print at warn (the default) and not at off.
  for (const std::string &entry : cacheEntries(dir.path()))
    (void)writeFile(entry, "damaged");
  CHECK_THAT(run("warn"), Catch::Contains("mlagen: warning: corrupt cache "
                                          "entry"));
  for (const std::string &entry : cacheEntries(dir.path()))
    (void)writeFile(entry, "damaged");
  CHECK_THAT(run("off"), !Catch::Contains("corrupt"));
  CHECK_THAT(run("loud"), Catch::Contains("MLAGEN_LOG=loud is not off, warn, "
                                          "info or debug"));
}
