//===- aot.cpp - a C++ host that ships kernels instead of compiling them --===//
//
//   mlagen --variant="prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a" -o bundle
//   mlagen-consumer-cpp bundle "prefill qk=192 v=128 hq=16 hkv=16 mask=causal arch=sm_90a"
//
// The static runtime alone (mlagen::runtime): no generator, no MLIR, no
// compiler; every kernel comes from the bundle. On a GPU, getKernel loads
// it; without one, compile() still returns the code object.
//
//===----------------------------------------------------------------------===//
#include "mlagen/Runtime/Runtime.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <bundle dir> <signature>\n", argv[0]);
    return 2;
  }
  mlagen::Signature sig;
  if (mlagen::Status s = mlagen::parseSignature(argv[2], sig); !s) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  mlagen::RuntimeOptions options;
  options.bundlePaths = {argv[1]};
  options.diskCache = false; // the bundle or nothing
  std::unique_ptr<mlagen::Runtime> runtime;
  if (mlagen::Status s = mlagen::Runtime::create(options, runtime); !s) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  std::printf("backend: %s\n", runtime->backendDescription().c_str());
  mlagen::CodeObject code;
  if (mlagen::Status s = runtime->compile(sig, code); !s) {
    std::fprintf(stderr, "%s\n", s.toString().c_str());
    return 1;
  }
  std::printf("from the bundle: %s, %zu bytes, %d threads, tile_q %d, "
              "compiled by %s\n",
              code.entryName.c_str(), code.binary.size(),
              code.threadsPerBlock, code.tileQ, code.compilerIdentity.c_str());
  mlagen::Arch arch;
  if (runtime->deviceArch(arch) && arch == sig.arch) {
    const mlagen::Kernel *kernel = nullptr;
    if (mlagen::Status s = runtime->getKernel(sig, kernel); !s) {
      std::fprintf(stderr, "%s\n", s.toString().c_str());
      return 1;
    }
    std::printf("loaded on the device\n");
  }
  return 0;
}
