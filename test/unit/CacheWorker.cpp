//===- CacheWorker.cpp - a second process for the cache tests -------------===//
//
//   mlagen-cache-worker <cache dir> <arch> <generator delay in ms>
//                       [--variants=N] [--file-size-limit=BYTES]
//
// Compiles N test signatures of <arch> (qk 64, 128, ...; N=1: the default
// test signature) in a compile-only Runtime whose generator sleeps for the
// delay and appends each signature it generates to <cache dir>/compile-log,
// starting at a variant chosen by its pid so that workers collide in
// different orders. Prints how often it generated. --file-size-limit sets
// RLIMIT_FSIZE with SIGXFSZ at its default, so the worker is killed in the
// middle of writing a cache entry. CrossProcessTest.cpp runs several at
// once, or kills them mid-build.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

using namespace mlagen;
using namespace mlagen::test;

namespace {

// Appends one line with O_APPEND: lines of concurrent processes do not mix.
class LoggingGenerator final : public SourceGenerator {
public:
  LoggingGenerator(std::string logPath, std::chrono::milliseconds delay)
      : logPath_(std::move(logPath)) {
    inner_.delay = delay;
  }
  Status generate(const Signature &sig, GeneratedKernel &out) override {
    std::string line = sig.canonical() + "\n";
    int fd = open(logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                  0644);
    if (fd >= 0) {
      ssize_t ignored = write(fd, line.data(), line.size());
      (void)ignored;
      close(fd);
    }
    return inner_.generate(sig, out);
  }
  std::string identity() const override { return inner_.identity(); }
  int calls() const { return inner_.calls(); }

private:
  std::string logPath_;
  CountingGenerator inner_;
};

} // namespace

int main(int argc, char **argv) {
  Arch arch;
  int variants = 1;
  long fileSizeLimit = 0;
  bool usage = argc < 4 || !parseArch(argv[2], arch);
  for (int i = 4; i < argc && !usage; ++i) {
    if (std::strncmp(argv[i], "--variants=", 11) == 0)
      variants = std::atoi(argv[i] + 11);
    else if (std::strncmp(argv[i], "--file-size-limit=", 18) == 0)
      fileSizeLimit = std::atol(argv[i] + 18);
    else
      usage = true;
  }
  if (usage || variants < 1 || variants > 8) { // qk up to 512
    std::fprintf(stderr,
                 "usage: %s <cache dir> <arch> <delay ms> [--variants=N] "
                 "[--file-size-limit=BYTES]\n",
                 argv[0]);
    return 2;
  }
  if (fileSizeLimit > 0) {
    rlimit limit = {static_cast<rlim_t>(fileSizeLimit),
                    static_cast<rlim_t>(fileSizeLimit)};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  std::string dir = argv[1];
  auto generator = std::make_shared<LoggingGenerator>(
      dir + "/compile-log", std::chrono::milliseconds(std::atoi(argv[3])));
  RuntimeOptions options;
  options.generator = generator;
  options.backend = BackendKind::None;
  options.cacheDir = dir;
  std::unique_ptr<Runtime> runtime;
  Status status = Runtime::create(std::move(options), runtime);
  for (int i = 0; status && i < variants; ++i) {
    int variant = (i + getpid()) % variants;
    CodeObject code;
    status = runtime->compile(
        variants == 1 ? testSignature(arch) : testSignature(arch, 64 * (variant + 1)),
        code);
  }
  if (!status) {
    std::fprintf(stderr, "%s\n", status.toString().c_str());
    return 1;
  }
  std::printf("%d\n", generator->calls());
  return 0;
}
