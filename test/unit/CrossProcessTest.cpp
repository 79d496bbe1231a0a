//===- CrossProcessTest.cpp - one build per key across processes ----------===//

#include "CatchStatus.h"
#include "Process.h"
#include "TestSupport.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
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
       std::filesystem::directory_iterator(root + "/v1", error)) {
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

} // namespace

TEST_CASE("processes sharing a cache directory build a key once",
          "[cross-process]") {
  CompileTarget target = findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    SUCCEED("no device compiler");
    return;
  }
  ScratchDirectory dir;
  constexpr int kProcesses = 4;
  std::vector<int> exitCodes(kProcesses, -1);
  std::vector<std::string> outputs(kProcesses);
  std::vector<std::thread> threads;
  for (int i = 0; i < kProcesses; ++i)
    threads.emplace_back([&, i] {
      Status status = runProcess(
          {kWorker, dir.path(), archName(*target.arch), "300"}, exitCodes[i],
          outputs[i]);
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
  CHECK(builds == 1);
  CHECK(cacheEntries(dir.path()).size() == 1);
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
  std::vector<std::string> argv = {kWorker, dir.path(),
                                   archName(*target.arch), "60000"};
  std::vector<char *> args;
  for (std::string &arg : argv)
    args.push_back(arg.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, kWorker.c_str(), nullptr, nullptr, args.data(),
                      environ) == 0);
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
