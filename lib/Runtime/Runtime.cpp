//===- Runtime.cpp - memory -> prebuilt -> disk -> generate + compile -----===//

#include "mlagen/Runtime/Runtime.h"
#include "mlagen/Runtime/PrebuiltKernels.h"
#include "CompilerSelection.h"
#include "DeviceBackend.h"
#include "DiskCache.h"
#include "Hash.h"
#include "KernelCache.h"
#include "PrefillParams.h"
#include "RuntimeInternal.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace mlagen {
namespace {

class RuntimeImpl;

// A code object loaded on the runtime's device; unloaded with its Runtime.
// `code` is its cache slot's, which is fixed once built and outlives it.
class LoadedKernel final : public Kernel {
public:
  LoadedKernel(RuntimeImpl &owner, DeviceBackend &backend,
               const Signature &sig, const CodeObject &code,
               DeviceFunction function)
      : owner_(owner), backend_(backend), signature_(sig), code_(code),
        function_(function) {}
  ~LoadedKernel() override { backend_.unload(function_); }

  const Signature &signature() const override { return signature_; }
  const CodeObject &codeObject() const override { return code_; }
  RuntimeImpl &owner() const { return owner_; }
  const DeviceFunction &function() const { return function_; }

private:
  RuntimeImpl &owner_;
  DeviceBackend &backend_;
  Signature signature_;
  const CodeObject &code_;
  DeviceFunction function_;
};

Status invalidArgument(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

// What the runtime relies on when it launches a generated kernel.
Status checkGenerated(const Signature &sig, const GeneratedKernel &kernel) {
  auto bad = [&](const std::string &what) {
    return Status(StatusCode::GeneratorError,
                  "generator output for '" + sig.canonical() + "': " + what);
  };
  if (kernel.source.empty())
    return bad("empty source");
  if (!isIdentifier(kernel.entryName))
    return bad("entry name '" + kernel.entryName + "' is not an identifier");
  if (kernel.threadsPerBlock < 1 || kernel.threadsPerBlock > 1024)
    return bad("threadsPerBlock must be in [1, 1024] (got " +
               std::to_string(kernel.threadsPerBlock) + ")");
  if (kernel.sharedBytes < 0)
    return bad("sharedBytes must be >= 0 (got " +
               std::to_string(kernel.sharedBytes) + ")");
  if (kernel.tileQ < 1)
    return bad("tileQ must be >= 1 (got " + std::to_string(kernel.tileQ) +
               ")");
  if (sig.tileQ != 0 && kernel.tileQ != sig.tileQ)
    return bad("tileQ is " + std::to_string(kernel.tileQ) +
               " but the signature pins tile_q=" + std::to_string(sig.tileQ));
  return Status::ok();
}

class RuntimeImpl final : public Runtime {
public:
  explicit RuntimeImpl(RuntimeOptions options)
      : options_(std::move(options)), compilers_(options_.compiler) {
    warn_ = options_.onWarning ? options_.onWarning : [](const std::string &m) {
      std::fprintf(stderr, "mlagen: warning: %s\n", m.c_str());
    };
  }

  // `backend`: use this one instead of opening options.backend (tests).
  Status open(std::unique_ptr<DeviceBackend> backend) {
    if (options_.device < 0)
      return invalidArgument("device must be >= 0 (got " +
                             std::to_string(options_.device) + ")");
    if (backend) {
      backend_ = std::move(backend);
    } else if (options_.backend == BackendKind::None) {
      noDeviceReason_ = "no GPU backend requested (backend=none)";
    } else if (Status status = openDeviceBackend(options_.backend,
                                                 options_.device, backend_);
               !status) {
      // Auto on a machine without a usable GPU: compile-only, and say why.
      if (options_.backend != BackendKind::Auto)
        return status;
      noDeviceReason_ = status.message();
    }
    if (options_.diskCache)
      disk_ = std::make_unique<DiskCache>(
          DiskCache::resolveRoot(options_.cacheDir), warn_);
    return Status::ok();
  }

  std::string backendDescription() const override {
    return backend_ ? backend_->description()
                    : "compile-only: " + noDeviceReason_;
  }

  Status deviceArch(Arch &out) const override {
    if (!backend_)
      return Status(StatusCode::NoBackend, noDeviceReason_);
    out = backend_->arch();
    return Status::ok();
  }

  Status getKernel(const Signature &sig, const Kernel *&out) override {
    if (KernelCache::Slot *slot = memory_.find(sig))
      if (const Kernel *kernel = slot->ready.load(std::memory_order_acquire)) {
        out = kernel;
        return Status::ok();
      }
    return loadKernel(sig, out);
  }

  Status compile(const Signature &sig, CodeObject &out) override {
    if (Status status = sig.validate(); !status)
      return status;
    KernelCache::Slot &slot = memory_.findOrCreate(sig);
    std::lock_guard<std::mutex> lock(slot.build);
    if (Status status = ensureCode(sig, slot); !status)
      return status;
    out = slot.code;
    return Status::ok();
  }

  Status runPrefill(const Kernel &kernel, const PrefillArgs &args) override;

private:
  Status loadKernel(const Signature &sig, const Kernel *&out);
  Status ensureCode(const Signature &sig, KernelCache::Slot &slot);
  Status obtainCode(const Signature &sig, CodeObject &code);
  Status build(const Signature &sig, DeviceCompiler &compiler,
               CodeObject &code);

  RuntimeOptions options_;
  std::function<void(const std::string &)> warn_;
  // Declared before memory_: loaded kernels unload through the backend.
  std::unique_ptr<DeviceBackend> backend_;
  std::string noDeviceReason_;
  CompilerSelection compilers_;
  std::unique_ptr<DiskCache> disk_;
  KernelCache memory_;
};

Status RuntimeImpl::loadKernel(const Signature &sig, const Kernel *&out) {
  if (!backend_)
    return Status(StatusCode::NoBackend,
                  "getKernel needs a device; " + noDeviceReason_ +
                      " (compile() works without one)");
  if (Status status = sig.validate(); !status)
    return status;
  if (sig.arch != backend_->arch())
    return Status(StatusCode::InvalidSignature,
                  std::string("arch is ") + archName(sig.arch) + " but " +
                      backend_->description() + " needs " +
                      archName(backend_->arch()));

  KernelCache::Slot &slot = memory_.findOrCreate(sig);
  std::lock_guard<std::mutex> lock(slot.build);
  if (const Kernel *kernel = slot.ready.load(std::memory_order_acquire)) {
    out = kernel; // another thread loaded it while this one waited
    return Status::ok();
  }
  if (Status status = ensureCode(sig, slot); !status)
    return status;
  DeviceFunction function;
  if (Status status = backend_->load(slot.code, function); !status)
    return status;
  slot.kernel = std::make_unique<LoadedKernel>(*this, *backend_, sig,
                                               slot.code, function);
  slot.ready.store(slot.kernel.get(), std::memory_order_release);
  out = slot.kernel.get();
  return Status::ok();
}

// Holds slot.build: one build per signature in this process.
Status RuntimeImpl::ensureCode(const Signature &sig, KernelCache::Slot &slot) {
  if (slot.hasCode)
    return Status::ok();
  CodeObject code;
  if (Status status = obtainCode(sig, code); !status)
    return status;
  slot.code = std::move(code);
  slot.hasCode = true;
  return Status::ok();
}

Status RuntimeImpl::obtainCode(const Signature &sig, CodeObject &code) {
  for (const auto &bundle : options_.prebuilt)
    if (bundle && bundle->find(sig, code) && code.arch == sig.arch)
      return Status::ok();

  if (!options_.generator) {
    if (disk_ && disk_->loadBySignature(sig, code))
      return Status::ok();
    return Status(StatusCode::NoBackend,
                  "no kernel for '" + sig.canonical() +
                      "': the runtime has no source generator and nothing "
                      "prebuilt matches");
  }

  // The key names the compiler, so without one only a lookup by signature
  // can find a kernel (one built on another machine, say).
  DeviceCompiler *compiler = nullptr;
  if (Status status = compilers_.select(sig.arch, compiler); !status) {
    if (disk_ && disk_->loadBySignature(sig, code))
      return Status::ok();
    return status;
  }
  std::string generatorIdentity = options_.generator->identity();
  std::string flags = compiler->flags(sig.arch);
  std::string key = computeCacheKey(sig, generatorIdentity,
                                    compiler->identity(), flags);
  if (!disk_) {
    code.cacheKey = key;
    return build(sig, *compiler, code);
  }

  if (disk_->load(key, code) && code.arch == sig.arch)
    return Status::ok();
  // Another process may be building this key: wait for it, then look again.
  DiskCache::KeyLock lock = disk_->lockKey(key);
  if (disk_->load(key, code) && code.arch == sig.arch)
    return Status::ok();
  code.cacheKey = key;
  if (Status status = build(sig, *compiler, code); !status)
    return status;
  disk_->store(key, sig, code,
               {sig.canonical(), generatorIdentity, compiler->identity(),
                flags});
  return Status::ok();
}

Status RuntimeImpl::build(const Signature &sig, DeviceCompiler &compiler,
                          CodeObject &code) {
  GeneratedKernel generated;
  if (Status status = options_.generator->generate(sig, generated); !status)
    return status;
  if (Status status = checkGenerated(sig, generated); !status)
    return status;
  if (Status status = compiler.compile(generated, sig.arch, code.binary);
      !status)
    return status;
  code.arch = sig.arch;
  code.entryName = generated.entryName;
  code.threadsPerBlock = generated.threadsPerBlock;
  code.sharedBytes = generated.sharedBytes;
  code.tileQ = generated.tileQ;
  return Status::ok();
}

Status RuntimeImpl::runPrefill(const Kernel &kernel, const PrefillArgs &args) {
  auto *loaded = dynamic_cast<const LoadedKernel *>(&kernel);
  if (!loaded || &loaded->owner() != this)
    return invalidArgument("kernel was not returned by this Runtime");
  const Signature &sig = loaded->signature();
  const CodeObject &code = loaded->codeObject();
  if (sig.op != OpKind::Prefill)
    return invalidArgument(std::string("runPrefill needs a prefill kernel, "
                                       "not ") +
                           opKindName(sig.op));

  // batch is grid.z: CUDA allows 65535.
  if (args.batch < 1 || args.batch > 65535)
    return invalidArgument("batch must be in [1, 65535] (got " +
                           std::to_string(args.batch) + ")");
  if (args.maxSeqlenQ < 0)
    return invalidArgument("max_seqlen_q must be >= 0 (got " +
                           std::to_string(args.maxSeqlenQ) + ")");
  if (args.maxSeqlenQ == 0)
    return Status::ok();
  for (auto [name, ptr] : {std::pair<const char *, const void *>{"q", args.q},
                           {"k", args.k},
                           {"v", args.v},
                           {"out", args.out},
                           {"cu_seqlens_q", args.cuSeqlensQ},
                           {"cu_seqlens_k", args.cuSeqlensK}})
    if (!ptr)
      return invalidArgument(std::string(name) + " is null");
  // The kernel moves q, k, v and out in 16-byte vectors (cp.async, ldmatrix).
  for (auto [name, ptr] : {std::pair<const char *, const void *>{"q", args.q},
                           {"k", args.k},
                           {"v", args.v},
                           {"out", args.out}})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      return invalidArgument(std::string(name) +
                             " must be 16-byte aligned (the kernel loads "
                             "16-byte vectors)");

  // 0 selects the contiguous stride.
  const int64_t hq = sig.numQHeads, hkv = sig.numKVHeads;
  const int64_t dqk = sig.headDimQK, dv = sig.headDimV;
  struct StrideArg {
    const char *name;
    int64_t given, contiguous;
  };
  const StrideArg strides[] = {
      {"q_token_stride", args.qTokenStride, hq * dqk},
      {"q_head_stride", args.qHeadStride, dqk},
      {"k_token_stride", args.kTokenStride, hkv * dqk},
      {"k_head_stride", args.kHeadStride, dqk},
      {"v_token_stride", args.vTokenStride, hkv * dv},
      {"v_head_stride", args.vHeadStride, dv},
      {"out_token_stride", args.outTokenStride, hq * dv},
      {"out_head_stride", args.outHeadStride, dv},
  };
  long long resolved[8];
  for (int i = 0; i < 8; ++i) {
    if (strides[i].given < 0)
      return invalidArgument(std::string(strides[i].name) +
                             " must be >= 0, 0 meaning contiguous (got " +
                             std::to_string(strides[i].given) + ")");
    resolved[i] = strides[i].given ? strides[i].given : strides[i].contiguous;
    if (resolved[i] % 8 != 0)
      return invalidArgument(std::string(strides[i].name) +
                             " must be a multiple of 8 elements, so rows stay "
                             "16-byte aligned (got " +
                             std::to_string(resolved[i]) + ")");
  }
  float *lse = sig.returnLSE ? args.lse : nullptr;
  if (lse && args.lseHeadStride <= 0)
    return invalidArgument("lse_head_stride must be > 0 when lse is given "
                           "(total_q for [num_q_heads, total_q]; got " +
                           std::to_string(args.lseHeadStride) + ")");
  if (!std::isfinite(args.softmaxScale))
    return invalidArgument("softmax_scale must be finite, 0 meaning "
                           "1/sqrt(head_dim_qk)");

  PrefillParams params = {
      args.q,
      args.k,
      args.v,
      args.out,
      lse,
      args.cuSeqlensQ,
      args.cuSeqlensK,
      resolved[0],
      resolved[1],
      resolved[2],
      resolved[3],
      resolved[4],
      resolved[5],
      resolved[6],
      resolved[7],
      lse ? args.lseHeadStride : 0,
      args.batch,
      args.maxSeqlenQ,
      args.softmaxScale != 0.0f
          ? args.softmaxScale
          : 1.0f / std::sqrt(static_cast<float>(sig.headDimQK)),
      0,
  };
  LaunchGeometry geometry;
  geometry.grid[0] =
      static_cast<unsigned>((args.maxSeqlenQ + code.tileQ - 1) / code.tileQ);
  geometry.grid[1] = static_cast<unsigned>(sig.numQHeads);
  geometry.grid[2] = static_cast<unsigned>(args.batch);
  geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  void *kernelArgs[] = {&params};
  return backend_->launch(loaded->function(), geometry, args.stream,
                          kernelArgs);
}

} // namespace

Status Runtime::create(RuntimeOptions options, std::unique_ptr<Runtime> &out) {
  return createRuntimeWithBackend(std::move(options), nullptr, out);
}

Status createRuntimeWithBackend(RuntimeOptions options,
                                std::unique_ptr<DeviceBackend> backend,
                                std::unique_ptr<Runtime> &out) {
  auto runtime = std::make_unique<RuntimeImpl>(std::move(options));
  if (Status status = runtime->open(std::move(backend)); !status)
    return status;
  out = std::move(runtime);
  return Status::ok();
}

Runtime *owningRuntime(const Kernel &kernel) {
  auto *loaded = dynamic_cast<const LoadedKernel *>(&kernel);
  return loaded ? &loaded->owner() : nullptr;
}

} // namespace mlagen
