//===- CacheWorker.cpp - a second process for the cache tests -------------===//
//
//   mlagen-cache-worker <cache dir> <arch> <generator delay in ms>
//
// Compiles the test signature of <arch> in a compile-only Runtime whose
// generator sleeps for the delay, then prints how often it generated.
// CrossProcessTest.cpp runs several at once, or kills one mid-build.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include <cstdio>
#include <cstdlib>

using namespace mlagen;
using namespace mlagen::test;

int main(int argc, char **argv) {
  Arch arch;
  if (argc != 4 || !parseArch(argv[2], arch)) {
    std::fprintf(stderr, "usage: %s <cache dir> <arch> <delay ms>\n", argv[0]);
    return 2;
  }
  auto generator = std::make_shared<CountingGenerator>();
  generator->delay = std::chrono::milliseconds(std::atoi(argv[3]));
  RuntimeOptions options;
  options.generator = generator;
  options.backend = BackendKind::None;
  options.cacheDir = argv[1];
  std::unique_ptr<Runtime> runtime;
  CodeObject code;
  Status status = Runtime::create(std::move(options), runtime);
  if (status)
    status = runtime->compile(testSignature(arch), code);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.toString().c_str());
    return 1;
  }
  std::printf("%d\n", generator->calls());
  return 0;
}
