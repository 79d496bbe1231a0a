//===- CAPITest.cpp - the C API for FFI hosts -----------------------------===//

#include "CatchStatus.h"
#include "TestSupport.h"
#include "mlagen-c/Runtime.h"
#include "mlagen/Runtime/DefaultGenerator.h"

#include <cstring>

using namespace mlagen;

extern "C" int mlagen_test_c_api_round_trip(void); // CAPIFromC.c

TEST_CASE("C status codes equal StatusCode", "[capi]") {
  CHECK(MLAGEN_OK == static_cast<int>(StatusCode::Ok));
  CHECK(MLAGEN_INVALID_SIGNATURE ==
        static_cast<int>(StatusCode::InvalidSignature));
  CHECK(MLAGEN_INVALID_ARGUMENT == static_cast<int>(StatusCode::InvalidArgument));
  CHECK(MLAGEN_UNSUPPORTED == static_cast<int>(StatusCode::Unsupported));
  CHECK(MLAGEN_NO_BACKEND == static_cast<int>(StatusCode::NoBackend));
  CHECK(MLAGEN_COMPILE_ERROR == static_cast<int>(StatusCode::CompileError));
  CHECK(MLAGEN_DRIVER_ERROR == static_cast<int>(StatusCode::DriverError));
  CHECK(MLAGEN_CACHE_ERROR == static_cast<int>(StatusCode::CacheError));
  CHECK(MLAGEN_GENERATOR_ERROR == static_cast<int>(StatusCode::GeneratorError));
  CHECK(MLAGEN_INTERNAL == static_cast<int>(StatusCode::Internal));
}

TEST_CASE("signatures travel as text", "[capi]") {
  char canonical[256];
  REQUIRE(mlagen_signature_canonicalize(
              "prefill arch=sm_80 qk=128 v=128 hq=8 hkv=8 mask=none "
              "window=-1,-1 softcap=0 lse=0 q=fp16 kv=fp16 out=fp16 "
              "layout=varlen tile_q=64",
              canonical, sizeof(canonical)) == MLAGEN_OK);
  CHECK(std::string(canonical) ==
        "prefill qk=128 v=128 hq=8 hkv=8 mask=none window=-1,-1 softcap=0 "
        "alibi=0 lse=0 q=fp16 kv=fp16 out=fp16 layout=varlen tile_q=64 arch=sm_80");
  CHECK(std::string(mlagen_last_error()).empty());

  const std::string valid = Signature().canonical();
  CHECK(mlagen_signature_canonicalize(valid.c_str(), nullptr, 0) == MLAGEN_OK);
  CHECK(mlagen_signature_canonicalize(valid.c_str(), canonical, 10) ==
        MLAGEN_INVALID_ARGUMENT);
  CHECK_THAT(mlagen_last_error(), Catch::Contains("bytes"));

  std::string badHeads = valid;
  badHeads.replace(badHeads.find("hkv=16"), 6, "hkv=5");
  CHECK(mlagen_signature_canonicalize(badHeads.c_str(), canonical,
                                      sizeof(canonical)) ==
        MLAGEN_INVALID_SIGNATURE);
  CHECK_THAT(mlagen_last_error(), Catch::Contains("num_kv_heads"));
  CHECK(mlagen_signature_canonicalize(nullptr, nullptr, 0) ==
        MLAGEN_INVALID_ARGUMENT);
}

TEST_CASE("C runtimes: create, describe, refuse, destroy", "[capi]") {
  mlagen_runtime *runtime = nullptr;
  CHECK(mlagen_runtime_create(nullptr,
                              MLAGEN_RUNTIME_BACKEND_CUDA |
                                  MLAGEN_RUNTIME_COMPILE_ONLY,
                              &runtime) == MLAGEN_INVALID_ARGUMENT);
  CHECK(runtime == nullptr);
  CHECK(mlagen_runtime_create(nullptr, 0, nullptr) == MLAGEN_INVALID_ARGUMENT);

  REQUIRE(mlagen_runtime_create(nullptr,
                                MLAGEN_RUNTIME_COMPILE_ONLY |
                                    MLAGEN_RUNTIME_NO_DISK_CACHE,
                                &runtime) == MLAGEN_OK);
  CHECK_THAT(mlagen_runtime_backend(runtime), Catch::StartsWith("compile-only"));

  mlagen_kernel *kernel = nullptr;
  CHECK(mlagen_get_kernel(runtime, "prefill qk=1", &kernel) ==
        MLAGEN_INVALID_SIGNATURE);
  CHECK_THAT(mlagen_last_error(), Catch::Contains("missing field"));
  CHECK(mlagen_get_kernel(runtime, Signature().canonical().c_str(), &kernel) ==
        MLAGEN_NO_BACKEND);
  CHECK(kernel == nullptr);
  CHECK(std::strlen(mlagen_last_error()) > 0);

  // A set: a text that does not parse fails the call, naming its index,
  // before anything is fetched; every handle is null on failure.
  const std::string valid = Signature().canonical();
  const char *set[] = {valid.c_str(), "prefill qk=1"};
  int stale = 0; // a handle left from an earlier call
  mlagen_kernel *const old = reinterpret_cast<mlagen_kernel *>(&stale);
  mlagen_kernel *kernels[2] = {old, old};
  CHECK(mlagen_get_kernels(runtime, set, 2, 0, kernels) ==
        MLAGEN_INVALID_SIGNATURE);
  CHECK_THAT(mlagen_last_error(), Catch::StartsWith("signature 1: "));
  CHECK((kernels[0] == nullptr && kernels[1] == nullptr));
  set[1] = nullptr;
  kernels[0] = kernels[1] = old;
  CHECK(mlagen_get_kernels(runtime, set, 2, 0, kernels) ==
        MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) == "signature 1 is null");
  CHECK((kernels[0] == nullptr && kernels[1] == nullptr));
  kernels[0] = old;
  CHECK(mlagen_get_kernels(runtime, nullptr, 1, 0, kernels) ==
        MLAGEN_INVALID_ARGUMENT);
  CHECK(kernels[0] == nullptr);
  CHECK(mlagen_get_kernels(runtime, nullptr, 0, 0, kernels) == MLAGEN_OK);
  // Parsed, then refused as getKernel refuses it (no device here).
  kernels[0] = old;
  CHECK(mlagen_get_kernels(runtime, set, 1, 2, kernels) == MLAGEN_NO_BACKEND);
  CHECK_THAT(mlagen_last_error(), Catch::StartsWith("kernel 0 ('" + valid + "'): "));
  CHECK(kernels[0] == nullptr);

  CHECK(mlagen_prefill_run(nullptr, nullptr, nullptr, nullptr, nullptr,
                           nullptr, nullptr, nullptr, 1, 1, 0, nullptr, 0.0f,
                           nullptr, nullptr) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) == "kernel is null");
  mlagen_runtime_destroy(runtime);
  mlagen_runtime_destroy(nullptr);
}

namespace {
std::unique_ptr<SourceGenerator> makeFakeGenerator() {
  return std::make_unique<mlagen::test::CountingGenerator>("installed/1");
}
} // namespace

TEST_CASE("a library installs the default generator", "[capi]") {
  CHECK(createDefaultSourceGenerator() == nullptr);
  CHECK(setDefaultSourceGenerator(&makeFakeGenerator));
  std::unique_ptr<SourceGenerator> generator = createDefaultSourceGenerator();
  REQUIRE(generator != nullptr);
  CHECK(generator->identity() == "installed/1");

  mlagen_runtime *runtime = nullptr;
  REQUIRE(mlagen_runtime_create(nullptr,
                                MLAGEN_RUNTIME_COMPILE_ONLY |
                                    MLAGEN_RUNTIME_NO_DISK_CACHE,
                                &runtime) == MLAGEN_OK);
  mlagen_runtime_destroy(runtime);
  setDefaultSourceGenerator(nullptr);
  CHECK(createDefaultSourceGenerator() == nullptr);
}

TEST_CASE("C hosts compile without a device and name status codes",
          "[capi]") {
  CHECK(std::string(mlagen_status_name(MLAGEN_INVALID_ARGUMENT)) ==
        "InvalidArgument");
  CHECK(std::string(mlagen_status_name(42)) == "Unknown");
  CHECK(std::string(mlagen_status_name(-1)) == "Unknown");

  mlagen::test::CompileTarget target = mlagen::test::findCompileTarget();
  if (!target.arch) {
    WARN("skipped: no device compiler (" << target.whyNot << ")");
    return;
  }
  REQUIRE(setDefaultSourceGenerator(&makeFakeGenerator));
  mlagen_runtime *runtime = nullptr;
  REQUIRE(mlagen_runtime_create(nullptr,
                                MLAGEN_RUNTIME_COMPILE_ONLY |
                                    MLAGEN_RUNTIME_NO_DISK_CACHE,
                                &runtime) == MLAGEN_OK);
  const std::string sig = mlagen::test::testSignature(*target.arch).canonical();
  size_t size = 0;
  REQUIRE(mlagen_compile(runtime, sig.c_str(), nullptr, 0, &size) ==
          MLAGEN_OK);
  CHECK(size > 4);
  std::string binary(size, '\0');
  CHECK(mlagen_compile(runtime, sig.c_str(), binary.data(), size - 1,
                       nullptr) == MLAGEN_INVALID_ARGUMENT);
  CHECK_THAT(mlagen_last_error(), Catch::Contains("needs"));
  REQUIRE(mlagen_compile(runtime, sig.c_str(), binary.data(), size, &size) ==
          MLAGEN_OK);
  CHECK(binary.compare(0, 4, "\x7f" "ELF") == 0);

  CHECK(mlagen_compile(runtime, nullptr, nullptr, 0, &size) ==
        MLAGEN_INVALID_ARGUMENT);
  CHECK(size == 0);
  CHECK(mlagen_compile(runtime, "prefill qk=7", nullptr, 0, nullptr) ==
        MLAGEN_INVALID_SIGNATURE);
  CHECK(mlagen_compile(nullptr, sig.c_str(), nullptr, 0, nullptr) ==
        MLAGEN_INVALID_ARGUMENT);
  mlagen_kernel *kernel = nullptr;
  CHECK(mlagen_get_kernel(runtime, nullptr, &kernel) ==
        MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) == "signature is null");
  mlagen_runtime_destroy(runtime);
  setDefaultSourceGenerator(nullptr);
}

TEST_CASE("the C API works from C", "[capi]") {
  CHECK(mlagen_test_c_api_round_trip() == 0);
}
