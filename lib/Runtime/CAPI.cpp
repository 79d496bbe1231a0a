//===- CAPI.cpp - C API of the mlagen runtime -----------------------------===//
//
// Handles are the C++ objects themselves: mlagen_runtime is a Runtime,
// mlagen_kernel a Kernel. No exception crosses into C.
//
//===----------------------------------------------------------------------===//

#include "mlagen-c/Runtime.h"
#include "RuntimeInternal.h"
#include "mlagen/Runtime/DefaultGenerator.h"
#include "mlagen/Runtime/Runtime.h"

#include <cstring>
#include <new>

using namespace mlagen;

static_assert(MLAGEN_INTERNAL == static_cast<int>(StatusCode::Internal) &&
                  MLAGEN_GENERATOR_ERROR ==
                      static_cast<int>(StatusCode::GeneratorError) &&
                  MLAGEN_NO_BACKEND == static_cast<int>(StatusCode::NoBackend),
              "C status codes must equal mlagen::StatusCode");

namespace {

struct RuntimeHandle {
  std::unique_ptr<Runtime> runtime;
  std::string backend;
};

thread_local std::string lastError;

int report(const Status &status) {
  lastError = status.isOk() ? "" : status.message();
  return static_cast<int>(status.code());
}

// Runs one API call: its Status becomes the return code and last error;
// an escaping exception (out of memory) becomes Internal.
template <typename Call> int guarded(Call call) {
  try {
    return report(call());
  } catch (const std::bad_alloc &) {
    return report(Status(StatusCode::Internal, "out of memory"));
  } catch (const std::exception &e) {
    return report(Status(StatusCode::Internal, e.what()));
  } catch (...) {
    return report(Status(StatusCode::Internal, "unknown exception"));
  }
}

Status parseAndValidate(const char *text, Signature &sig) {
  if (!text)
    return Status(StatusCode::InvalidArgument, "signature is null");
  if (Status status = parseSignature(text, sig); !status)
    return status;
  return sig.validate();
}

} // namespace

extern "C" {

const char *mlagen_last_error(void) { return lastError.c_str(); }

int mlagen_runtime_create(const char *cache_dir, unsigned flags,
                          mlagen_runtime **out) {
  return guarded([&]() -> Status {
    if (!out)
      return Status(StatusCode::InvalidArgument, "out is null");
    *out = nullptr;
    const unsigned backends = MLAGEN_RUNTIME_BACKEND_CUDA |
                              MLAGEN_RUNTIME_BACKEND_HIP |
                              MLAGEN_RUNTIME_COMPILE_ONLY;
    if ((flags & backends) & ((flags & backends) - 1))
      return Status(StatusCode::InvalidArgument,
                    "flags name more than one backend");
    RuntimeOptions options;
    options.cacheDir = cache_dir ? cache_dir : "";
    options.diskCache = !(flags & MLAGEN_RUNTIME_NO_DISK_CACHE);
    options.backend = flags & MLAGEN_RUNTIME_BACKEND_CUDA ? BackendKind::CUDA
                      : flags & MLAGEN_RUNTIME_BACKEND_HIP
                          ? BackendKind::HIP
                      : flags & MLAGEN_RUNTIME_COMPILE_ONLY ? BackendKind::None
                                                            : BackendKind::Auto;
    if (!(flags & MLAGEN_RUNTIME_NO_GENERATOR))
      options.generator = createDefaultSourceGenerator();

    auto handle = std::make_unique<RuntimeHandle>();
    if (Status status = Runtime::create(std::move(options), handle->runtime);
        !status)
      return status;
    handle->backend = handle->runtime->backendDescription();
    *out = reinterpret_cast<mlagen_runtime *>(handle.release());
    return Status::ok();
  });
}

void mlagen_runtime_destroy(mlagen_runtime *runtime) {
  delete reinterpret_cast<RuntimeHandle *>(runtime);
}

const char *mlagen_runtime_backend(const mlagen_runtime *runtime) {
  return runtime ? reinterpret_cast<const RuntimeHandle *>(runtime)
                       ->backend.c_str()
                 : "";
}

int mlagen_signature_canonicalize(const char *signature, char *canonical,
                                  size_t size) {
  return guarded([&]() -> Status {
    Signature sig;
    if (Status status = parseAndValidate(signature, sig); !status)
      return status;
    if (!canonical)
      return Status::ok();
    std::string text = sig.canonical();
    if (text.size() + 1 > size)
      return Status(StatusCode::InvalidArgument,
                    "canonical signature needs " +
                        std::to_string(text.size() + 1) + " bytes, got " +
                        std::to_string(size));
    std::memcpy(canonical, text.c_str(), text.size() + 1);
    return Status::ok();
  });
}

int mlagen_get_kernel(mlagen_runtime *runtime, const char *signature,
                      mlagen_kernel **out) {
  return guarded([&]() -> Status {
    if (!runtime || !out)
      return Status(StatusCode::InvalidArgument, "runtime or out is null");
    *out = nullptr;
    Signature sig;
    if (Status status = parseSignature(signature ? signature : "", sig);
        !status)
      return status;
    const Kernel *kernel = nullptr;
    if (Status status = reinterpret_cast<RuntimeHandle *>(runtime)
                            ->runtime->getKernel(sig, kernel);
        !status)
      return status;
    *out = reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernel));
    return Status::ok();
  });
}

int mlagen_prefill_run(const mlagen_kernel *kernel, const void *q,
                       const void *k, const void *v, void *out, float *lse,
                       const int *cu_seqlens_q, const int *cu_seqlens_k,
                       int batch, int max_seqlen_q, const int64_t *strides,
                       float softmax_scale, void *stream) {
  return guarded([&]() -> Status {
    if (!kernel)
      return Status(StatusCode::InvalidArgument, "kernel is null");
    const Kernel &cxxKernel = *reinterpret_cast<const Kernel *>(kernel);
    Runtime *runtime = owningRuntime(cxxKernel);
    if (!runtime)
      return Status(StatusCode::InvalidArgument,
                    "kernel is not a handle from mlagen_get_kernel");
    PrefillArgs args;
    args.q = q;
    args.k = k;
    args.v = v;
    args.out = out;
    args.lse = lse;
    args.cuSeqlensQ = cu_seqlens_q;
    args.cuSeqlensK = cu_seqlens_k;
    args.batch = batch;
    args.maxSeqlenQ = max_seqlen_q;
    if (strides) {
      int64_t *fields[] = {&args.qTokenStride,   &args.qHeadStride,
                           &args.kTokenStride,   &args.kHeadStride,
                           &args.vTokenStride,   &args.vHeadStride,
                           &args.outTokenStride, &args.outHeadStride,
                           &args.lseHeadStride};
      for (int i = 0; i < 9; ++i)
        *fields[i] = strides[i];
    }
    args.softmaxScale = softmax_scale;
    args.stream = stream;
    return runtime->runPrefill(cxxKernel, args);
  });
}

} // extern "C"
