//===- Runtime.cpp - memory -> prebuilt -> disk -> generate + compile -----===//

#include "mlagen/Runtime/Runtime.h"
#include "mlagen/Runtime/PrebuiltKernels.h"
#include "CompilerSelection.h"
#include "DeviceBackend.h"
#include "DiskCache.h"
#include "Hash.h"
#include "KernelCache.h"
#include "Log.h"
#include "DecodeLaunch.h"
#include "ExpandPageIndicesLaunch.h"
#include "GatherCacheLaunch.h"
#include "KVCacheWriteLaunch.h"
#include "MergeAttnStatesLaunch.h"
#include "PrefillLaunch.h"
#include "PagedDecodeLaunch.h"
#include "ReshapeAndCacheLaunch.h"
#include "RuntimeInternal.h"
#include "TensorMapCache.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

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
  // The range the disk cache and bundle manifests accept.
  if (kernel.clusterParts < 1 || kernel.clusterParts > 8)
    return bad("clusterParts must be in [1, 8] (got " +
               std::to_string(kernel.clusterParts) + ")");
  if (kernel.blocksPerSM < 0 || kernel.blocksPerSM > 32)
    return bad("blocksPerSM must be in [0, 32] (got " +
               std::to_string(kernel.blocksPerSM) + ")");
  for (const KernelEntry &entry : kernel.extraEntries) {
    if (!isIdentifier(entry.name))
      return bad("entry name '" + entry.name + "' is not an identifier");
    if (entry.threadsPerBlock < 1 || entry.threadsPerBlock > 1024 ||
        entry.sharedBytes < 0 || entry.rowsPerBlock < 1)
      return bad("entry " + entry.name +
                 " needs threads in [1, 1024], shared bytes >= 0 and rows "
                 "per block >= 1");
  }
  if (sig.op == OpKind::Decode || sig.op == OpKind::PagedDecode) {
    // runDecode launches the reduce after the decode kernel, and the
    // planner cuts keys in multiples of tileK.
    if (kernel.extraEntries.size() != 1)
      return bad("a decode kernel has one extra entry, the reduce (got " +
                 std::to_string(kernel.extraEntries.size()) + ")");
    if (kernel.tileK < 1 || kernel.paddedHeads < sig.numQHeads)
      return bad("decode needs tileK >= 1 and paddedHeads >= num_q_heads "
                 "(got " +
                 std::to_string(kernel.tileK) + " and " +
                 std::to_string(kernel.paddedHeads) + ")");
    if (sig.tileK != 0 && kernel.tileK != sig.tileK)
      return bad("tileK is " + std::to_string(kernel.tileK) +
                 " but the signature pins tile_k=" + std::to_string(sig.tileK));
  }
  return Status::ok();
}

// $NAME=0 turns a kernel family's bulk tensor copies off.
bool tensorMapsEnabled(const char *name) {
  const char *text = std::getenv(name);
  return !(text && std::string(text) == "0");
}

// "sm_" and a compute capability from 80 on, as NVRTC names targets
// ("sm_80", "sm_100", "sm_90a"): the portable kernels need sm_80.
bool isNvidiaTarget(const std::string &name) {
  if (name.rfind("sm_", 0) != 0)
    return false;
  size_t digits = 3;
  while (digits < name.size() && std::isdigit((unsigned char)name[digits]))
    ++digits;
  if (digits - 3 < 2 || digits - 3 > 4 || name[3] == '0' ||
      std::stoi(name.substr(3, digits - 3)) < 80)
    return false;
  return digits == name.size() ||
         (digits + 1 == name.size() && (name[digits] == 'a' || name[digits] == 'f'));
}

// The NVRTC target in compiler flags ("--gpu-architecture=sm_90 ..." ->
// "sm_90"); empty when the flags name none.
std::string flagsTarget(const std::string &flags) {
  const std::string option = "--gpu-architecture=";
  size_t at = flags.find(option);
  if (at == std::string::npos)
    return "";
  at += option.size();
  return flags.substr(at, flags.find(' ', at) - at);
}

class RuntimeImpl final : public Runtime {
public:
  explicit RuntimeImpl(RuntimeOptions options)
      : options_(std::move(options)), compilers_(options_.compiler) {
    warn_ = options_.onWarning ? options_.onWarning : [](const std::string &m) {
      if (logEnabled(LogLevel::Warn))
        logMessage(LogLevel::Warn, m);
    };
  }

  // `backend`: use this one instead of opening options.backend (tests).
  Status open(std::unique_ptr<DeviceBackend> backend) {
    if (options_.device < 0)
      return invalidArgument("device must be >= 0 (got " +
                             std::to_string(options_.device) + ")");
    // Enums arrive from FFI hosts and casts: name a bad one here rather
    // than route it somewhere by default.
    if (static_cast<unsigned>(options_.backend) >
        static_cast<unsigned>(BackendKind::None))
      return invalidArgument("backend has an unknown value (got " +
                             std::to_string(static_cast<int>(options_.backend)) +
                             ")");
    if (static_cast<unsigned>(options_.compiler) >
        static_cast<unsigned>(CompilerKind::Clang))
      return invalidArgument(
          "compiler has an unknown value (got " +
          std::to_string(static_cast<int>(options_.compiler)) + ")");
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
    std::string portable = backend_ ? backend_->portableTarget() : "";
    if (!options_.portableNvidiaTarget.empty()) {
      if (!isNvidiaTarget(options_.portableNvidiaTarget))
        return invalidArgument("portableNvidiaTarget '" +
                               options_.portableNvidiaTarget +
                               "' is not an NVIDIA target from sm_80 on, such as sm_100");
      if (!portable.empty() && portable != options_.portableNvidiaTarget)
        return invalidArgument(
            "portableNvidiaTarget " + options_.portableNvidiaTarget +
            " does not run on " + backend_->description() + ", which takes " +
            portable + " (set it only for compile-only runtimes)");
      portable = options_.portableNvidiaTarget;
    }
    if (!portable.empty())
      compilers_.setPortableNvidiaTarget(portable);
    if (options_.diskCache)
      disk_ = std::make_unique<DiskCache>(
          DiskCache::resolveRoot(options_.cacheDir), warn_);
    if (Status status = openBundles(); !status)
      return status;
    MLAGEN_LOG(Info, "runtime on " + backendDescription() + "; disk cache " +
                         (disk_ ? disk_->directory() : "off") + "; " +
                         std::to_string(bundles_.size()) +
                         " prebuilt sources; generator " +
                         (options_.generator ? options_.generator->identity()
                                             : "none"));
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
  Status runDecode(const Kernel &kernel, const DecodeArgs &args) override;
  // A split-KV op's launches: the main kernel, then its reduce (extra entry
  // 0) unless the plan splits nothing (planSlots 0) and no graph captures
  // them (`captured`; the caller asks the driver only where planSlots is
  // 0). One parameter block for both: the reduce reads what the main
  // kernel wrote, in stream order, with no host sync between them.
  Status launchWithReduce(const LoadedKernel &loaded,
                          const LaunchGeometry &main,
                          const LaunchGeometry &reduce, void *params,
                          int planSlots, bool captured, void *stream);
  Status runMergeAttnStates(const Kernel &kernel,
                            const MergeAttnStatesArgs &args) override;
  Status runExpandPageIndices(const Kernel &kernel,
                              const ExpandPageIndicesArgs &args) override;
  Status runKVCacheWrite(const Kernel &kernel,
                         const KVCacheWriteArgs &args) override;
  Status runReshapeAndCache(const Kernel &kernel,
                            const ReshapeAndCacheArgs &args) override;
  Status runPagedDecode(const Kernel &kernel,
                        const PagedDecodeArgs &args) override;
  Status runGatherCache(const Kernel &kernel,
                        const GatherCacheArgs &args) override;

private:
  // `kernel` as this Runtime loaded it, or an error naming the mix-up.
  Status owned(const Kernel &kernel, const LoadedKernel *&out) const;
  // The one-launch ops: `prepare` checks `args` and fills the parameter
  // block, or says there is nothing to do.
  template <class Launch, class Args>
  Status launchOne(const Kernel &kernel, const Args &args,
                   Status (*prepare)(const Signature &, const CodeObject &,
                                     const Args &, Launch &, bool &));
  // Fills `map` (a parameter block's CUtensorMap) for `request`, kept or
  // newly encoded; false without one (no driver support, a layout TMA
  // cannot describe): the kernel then copies with cp.async, slower, same
  // results.
  bool tensorMap(const TensorMapRequest &request, void *map);
  Status openBundles();
  void addBundle(std::shared_ptr<const PrebuiltKernels> bundle);
  bool findPrebuilt(const Signature &sig, CodeObject &code);
  std::string prebuiltMismatch(const Signature &sig, const CodeObject &code);
  std::string targetMismatch(const CodeObject &code) const;
  bool loadBySignature(const Signature &sig, CodeObject &code,
                       std::string &why);
  std::string runnableArchs() const;
  void warnOnce(const std::string &message);
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
  // options_.prebuilt, then the bundles opened from paths.
  std::vector<std::shared_ptr<const PrebuiltKernels>> bundles_;
  std::mutex warnedMutex_;
  std::set<std::string> warned_;
  KernelCache memory_;
  // 64-row sm_90a decode reads whole pages with bulk tensor copies (H200
  // B128 H128: 300 us against 357 with cp.async); $MLAGEN_DECODE_TMA=0
  // turns them off (to compare, or to rule them out).
  const bool decodeTensorMaps_ = tensorMapsEnabled("MLAGEN_DECODE_TMA");
  // The sm_90a prefill copies K and V tiles with TMA when the caller gives
  // total_k; $MLAGEN_PREFILL_TMA=0 keeps it on cp.async.
  const bool prefillTensorMaps_ = tensorMapsEnabled("MLAGEN_PREFILL_TMA");
  TensorMapCache tensorMaps_;
};

// Splits $MLAGEN_BUNDLE_PATH at colons, dropping empty parts.
std::vector<std::string> bundlePathsFromEnvironment() {
  std::vector<std::string> paths;
  const char *text = std::getenv("MLAGEN_BUNDLE_PATH");
  std::stringstream in(text ? text : "");
  for (std::string path; std::getline(in, path, ':');)
    if (!path.empty())
      paths.push_back(path);
  return paths;
}

Status RuntimeImpl::openBundles() {
  for (const auto &bundle : options_.prebuilt)
    if (bundle)
      addBundle(bundle);
  // Paths the program names must be right; a variable in the environment
  // may be meant for another version, so its faults are warnings.
  std::vector<std::string> fromEnvironment = bundlePathsFromEnvironment();
  std::vector<std::pair<std::string, bool>> paths;
  for (const std::string &path : options_.bundlePaths)
    paths.emplace_back(path, true);
  for (const std::string &path : fromEnvironment)
    paths.emplace_back(path, false);
  for (const auto &[path, named] : paths) {
    std::shared_ptr<const PrebuiltKernels> bundle;
    Status status = openBundle(path, warn_, bundle);
    if (status) {
      addBundle(std::move(bundle));
    } else if (named && status.code() != StatusCode::Unsupported) {
      return status;
    } else {
      warn_(status.message() + "; skipping it" +
            (named ? "" : " (from MLAGEN_BUNDLE_PATH)"));
    }
  }
  return Status::ok();
}

void RuntimeImpl::addBundle(std::shared_ptr<const PrebuiltKernels> bundle) {
  std::vector<Arch> archs = bundle->archs();
  if (backend_ && !archs.empty() &&
      std::none_of(archs.begin(), archs.end(),
                   [&](Arch arch) { return backend_->runs(arch); })) {
    std::string held;
    for (Arch arch : archs)
      held += std::string(held.empty() ? "" : ", ") + archName(arch);
    warn_(bundle->description() + " holds kernels for " + held + ", not " +
          runnableArchs() + " (" + backend_->description() + "); skipping it");
    return;
  }
  MLAGEN_LOG(Info, "using " + bundle->description());
  bundles_.push_back(std::move(bundle));
}

// "sm_90a or sm_80": the archs whose kernels this device runs.
std::string RuntimeImpl::runnableArchs() const {
  std::string names = archName(backend_->arch());
  for (Arch arch : {Arch::GFX90A, Arch::GFX942, Arch::GFX950, Arch::SM80,
                    Arch::SM90A})
    if (arch != backend_->arch() && backend_->runs(arch))
      names += std::string(" or ") + archName(arch);
  return names;
}

// Why `code` would not run on this device although its arch does: a
// portable sm_80 kernel compiled for another NVIDIA target than the
// device's own. "" when it runs, and where no device or no flags tell.
std::string RuntimeImpl::targetMismatch(const CodeObject &code) const {
  if (!backend_ || code.arch != Arch::SM80 ||
      backend_->portableTarget().empty())
    return "";
  std::string target = flagsTarget(code.compilerFlags);
  if (target.empty() || target == backend_->portableTarget())
    return "";
  return "compiled for " + target + ", while " + backend_->description() +
         " runs sm_80 kernels compiled for " + backend_->portableTarget();
}

// The disk cache's kernel for `sig` whoever built it (no compiler here to
// make the key), if it runs on this device; else `why` says why not.
bool RuntimeImpl::loadBySignature(const Signature &sig, CodeObject &code,
                                  std::string &why) {
  if (!disk_ || !disk_->loadBySignature(sig, code))
    return false;
  why = targetMismatch(code);
  if (!why.empty()) {
    code = CodeObject();
    why = "; the disk cache's kernel was " + why;
    return false;
  }
  return true;
}

void RuntimeImpl::warnOnce(const std::string &message) {
  {
    std::lock_guard<std::mutex> lock(warnedMutex_);
    if (!warned_.insert(message).second)
      return;
  }
  warn_(message);
}

// Why this runtime will not use `code` from a bundle; "" when it will. With
// a generator it could build the kernel itself, so, like a cache key, it
// takes only what the same generator and compiler built.
std::string RuntimeImpl::prebuiltMismatch(const Signature &sig,
                                          const CodeObject &code) {
  if (!options_.generator)
    return "";
  std::string generator = options_.generator->identity();
  if (!code.generatorIdentity.empty() && code.generatorIdentity != generator)
    return "built by generator '" + code.generatorIdentity +
           "', this runtime generates with '" + generator + "'";
  DeviceCompiler *compiler = nullptr;
  if (code.compilerIdentity.empty() ||
      !compilers_.select(sig.arch, compiler))
    return ""; // nothing here could build it: take the bundle's
  if (code.compilerIdentity != compiler->identity() ||
      code.compilerFlags != compiler->flags(sig.arch))
    return std::string("built by '") + code.compilerIdentity + "' with '" +
           code.compilerFlags + "', this runtime compiles " +
           archName(sig.arch) + " with '" + compiler->identity() + "' and '" +
           compiler->flags(sig.arch) + "'";
  return "";
}

bool RuntimeImpl::findPrebuilt(const Signature &sig, CodeObject &code) {
  for (const auto &bundle : bundles_) {
    CodeObject found;
    if (!bundle->find(sig, found) || found.arch != sig.arch)
      continue;
    std::string why = prebuiltMismatch(sig, found);
    std::string remedy = "rebuild the bundle with this mlagen and compiler";
    if (why.empty()) {
      why = targetMismatch(found);
      remedy = "rebuild it with mlagen --portable-target=" +
               (backend_ ? backend_->portableTarget() : "");
    }
    if (!why.empty()) {
      // Once per bundle and reason, not per kernel: one stale bundle
      // should not flood the log.
      warnOnce(bundle->description() + ": skipping its kernels " + why +
               " (" + remedy + ")");
      continue;
    }
    MLAGEN_LOG(Info, "'" + sig.canonical() + "' from " +
                         bundle->description());
    code = std::move(found);
    return true;
  }
  return false;
}

Status RuntimeImpl::loadKernel(const Signature &sig, const Kernel *&out) {
  if (!backend_)
    return Status(StatusCode::NoBackend,
                  "getKernel needs a device; " + noDeviceReason_ +
                      " (compile() works without one)");
  if (Status status = sig.validate(); !status)
    return status;
  if (!backend_->runs(sig.arch))
    return Status(StatusCode::InvalidSignature,
                  std::string("arch is ") + archName(sig.arch) + " but " +
                      backend_->description() + " needs " + runnableArchs());

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
  if (findPrebuilt(sig, code))
    return Status::ok();

  std::string why;
  if (!options_.generator) {
    if (loadBySignature(sig, code, why)) {
      MLAGEN_LOG(Info, "disk cache hit (by signature) for '" +
                           sig.canonical() + "': " + code.cacheKey);
      return Status::ok();
    }
    return Status(StatusCode::NoBackend,
                  "no kernel for '" + sig.canonical() +
                      "': the runtime has no source generator and nothing "
                      "prebuilt matches" + why);
  }

  // The key names the compiler, so without one only a lookup by signature
  // can find a kernel (one built on another machine, say).
  DeviceCompiler *compiler = nullptr;
  if (Status status = compilers_.select(sig.arch, compiler); !status) {
    if (loadBySignature(sig, code, why)) {
      MLAGEN_LOG(Info, "disk cache hit (by signature, no compiler) for '" +
                           sig.canonical() + "': " + code.cacheKey);
      return Status::ok();
    }
    return Status(status.code(), status.message() + why);
  }
  std::string generatorIdentity = options_.generator->identity();
  std::string flags = compiler->flags(sig.arch);
  std::string key = computeCacheKey(sig, generatorIdentity,
                                    compiler->identity(), flags);
  if (!disk_) {
    code.cacheKey = key;
    return build(sig, *compiler, code);
  }

  auto diskHit = [&] {
    MLAGEN_LOG(Info, "disk cache hit for '" + sig.canonical() + "': " + key);
    return Status::ok();
  };
  if (disk_->load(key, sig, code))
    return diskHit();
  // Another process may be building this key: wait for it, then look again.
  DiskCache::KeyLock lock = disk_->lockKey(key);
  if (disk_->load(key, sig, code))
    return diskHit();
  MLAGEN_LOG(Info, "disk cache miss for '" + sig.canonical() + "': " + key);
  code.cacheKey = key;
  if (Status status = build(sig, *compiler, code); !status)
    return status;
  disk_->store(key, sig, code);
  return Status::ok();
}

Status RuntimeImpl::build(const Signature &sig, DeviceCompiler &compiler,
                          CodeObject &code) {
  using Clock = std::chrono::steady_clock;
  auto millis = [](Clock::duration d) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  Clock::time_point start = Clock::now();
  GeneratedKernel generated;
  if (Status status = options_.generator->generate(sig, generated); !status)
    return status;
  if (Status status = checkGenerated(sig, generated); !status)
    return status;
  Clock::time_point generatedAt = Clock::now();
  if (Status status = compiler.compile(generated, sig.arch, code.binary);
      !status)
    return status;
  MLAGEN_LOG(Info, "built '" + sig.canonical() + "': generate " +
                       millis(generatedAt - start) + " ms, " +
                       compiler.identity() + " " +
                       millis(Clock::now() - generatedAt) + " ms, " +
                       std::to_string(code.binary.size()) + " bytes");
  code.generatorIdentity = options_.generator->identity();
  code.compilerIdentity = compiler.identity();
  code.compilerFlags = compiler.flags(sig.arch);
  code.arch = sig.arch;
  code.entryName = generated.entryName;
  code.threadsPerBlock = generated.threadsPerBlock;
  code.sharedBytes = generated.sharedBytes;
  code.tileQ = generated.tileQ;
  code.tileK = generated.tileK;
  code.paddedHeads = generated.paddedHeads;
  code.clusterParts = generated.clusterParts;
  code.blocksPerSM = generated.blocksPerSM;
  code.extraEntries = generated.extraEntries;
  return Status::ok();
}

Status RuntimeImpl::runDecode(const Kernel &kernel, const DecodeArgs &args) {
  const LoadedKernel *loaded = nullptr;
  if (Status status = owned(kernel, loaded); !status)
    return status;
  DecodeLaunch launch;
  bool empty = false;
  if (Status status = prepareDecodeLaunch(
          loaded->signature(), loaded->codeObject(), args, launch, empty);
      !status || empty)
    return status;
  TensorMapRequest cacheMap;
  if (decodeTensorMaps_ &&
      describeCacheTensorMap(loaded->signature(), loaded->codeObject(), args,
                             launch, cacheMap)) {
    launch.params.kv_map_ready = tensorMap(cacheMap, launch.params.kv_map);
  }
  // A plan without merge groups runs a little faster without clusters, one
  // without slots needs no reduce, and one of fewer items than the work
  // list holds needs only their blocks (those past them read their item and
  // exit: with an engine's max_batch, hundreds of them, 1.1-1.7 us of a
  // small 128-head step on an H100), unless a graph captures the launches
  // (a replay may meet another plan): the driver is asked once, and only
  // where a count would drop something.
  const bool noGroups = launch.decode.clusterX > 1 && args.planGroups == 0;
  const bool fewerItems =
      args.planWork >= 0 && unsigned(args.planWork) < launch.decode.grid[0];
  const bool captured = (noGroups || args.planSlots == 0 || fewerItems) &&
                        backend_->capturing(args.stream);
  if (noGroups && !captured)
    launch.decode.clusterX = 1;
  if (fewerItems && !captured) { // whole clusters (planWork >= batch >= 1)
    const unsigned cluster = launch.decode.clusterX;
    launch.decode.grid[0] = (args.planWork + cluster - 1) / cluster * cluster;
  }
  return launchWithReduce(*loaded, launch.decode, launch.reduce, &launch.params,
                          args.planSlots, captured, args.stream);
}

Status RuntimeImpl::launchWithReduce(const LoadedKernel &loaded,
                                     const LaunchGeometry &main,
                                     const LaunchGeometry &reduce, void *params,
                                     int planSlots, bool captured,
                                     void *stream) {
  const DeviceFunction &function = loaded.function();
  if (function.extraFunctions.empty())
    return Status(StatusCode::Internal,
                  std::string(opKindName(loaded.signature().op)) +
                      " kernel loaded without its reduce entry");
  void *kernelArgs[] = {params};
  if (planSlots == 0 && !captured)
    return backend_->launch(function, main, stream, kernelArgs);
  return backend_->launchPair(function, main, function.extra(0), reduce,
                              stream, kernelArgs);
}

Status RuntimeImpl::runPagedDecode(const Kernel &kernel,
                                   const PagedDecodeArgs &args) {
  const LoadedKernel *loaded = nullptr;
  if (Status status = owned(kernel, loaded); !status)
    return status;
  PagedDecodeLaunch launch;
  bool empty = false;
  if (Status status = preparePagedDecodeLaunch(
          loaded->signature(), loaded->codeObject(), args, launch, empty);
      !status || empty)
    return status;
  // The grid stays the work list's capacity: sized to the plan's items it
  // measured 0.2-0.7 us slower on an H100 (bf16, B1-B16; bench/results/
  // plan-work-h100.md), unlike MLA decode's (DecodeArgs::planWork).
  return launchWithReduce(*loaded, launch.decode, launch.reduce, &launch.params,
                          args.planSlots,
                          args.planSlots == 0 && backend_->capturing(args.stream),
                          args.stream);
}

bool RuntimeImpl::tensorMap(const TensorMapRequest &request, void *map) {
  return tensorMaps_
      .get(request, map,
           [&](const TensorMapRequest &r, void *m) {
             return backend_->encodeTensorMap(r, m);
           })
      .isOk();
}

Status RuntimeImpl::owned(const Kernel &kernel,
                          const LoadedKernel *&out) const {
  out = dynamic_cast<const LoadedKernel *>(&kernel);
  if (!out || &out->owner() != this)
    return invalidArgument("kernel was not returned by this Runtime");
  return Status::ok();
}

template <class Launch, class Args>
Status RuntimeImpl::launchOne(const Kernel &kernel, const Args &args,
                              Status (*prepare)(const Signature &,
                                                const CodeObject &,
                                                const Args &, Launch &,
                                                bool &)) {
  const LoadedKernel *loaded = nullptr;
  if (Status status = owned(kernel, loaded); !status)
    return status;
  Launch launch;
  bool empty = false;
  if (Status status = prepare(loaded->signature(), loaded->codeObject(), args,
                              launch, empty);
      !status || empty)
    return status;
  void *kernelArgs[] = {&launch.params};
  return backend_->launch(loaded->function(), launch.geometry, args.stream,
                          kernelArgs);
}

Status RuntimeImpl::runMergeAttnStates(const Kernel &kernel,
                                       const MergeAttnStatesArgs &args) {
  return launchOne(kernel, args, &prepareMergeAttnStatesLaunch);
}

Status RuntimeImpl::runExpandPageIndices(const Kernel &kernel,
                                         const ExpandPageIndicesArgs &args) {
  return launchOne(kernel, args, &prepareExpandPageIndicesLaunch);
}

Status RuntimeImpl::runKVCacheWrite(const Kernel &kernel,
                                    const KVCacheWriteArgs &args) {
  return launchOne(kernel, args, &prepareKVCacheWriteLaunch);
}

Status RuntimeImpl::runReshapeAndCache(const Kernel &kernel,
                                       const ReshapeAndCacheArgs &args) {
  return launchOne(kernel, args, &prepareReshapeAndCacheLaunch);
}

Status RuntimeImpl::runGatherCache(const Kernel &kernel,
                                   const GatherCacheArgs &args) {
  return launchOne(kernel, args, &prepareGatherCacheLaunch);
}

Status RuntimeImpl::runPrefill(const Kernel &kernel, const PrefillArgs &args) {
  const LoadedKernel *loaded = nullptr;
  if (Status status = owned(kernel, loaded); !status)
    return status;
  PrefillLaunch launch;
  bool empty = false;
  if (Status status = preparePrefillLaunch(
          loaded->signature(), loaded->codeObject(), args, launch, empty);
      !status || empty)
    return status;
  TensorMapRequest kMap, vMap;
  if (prefillTensorMaps_ &&
      describePrefillTensorMaps(loaded->signature(), loaded->codeObject(),
                                args, launch, kMap, vMap)) {
    launch.params.kv_maps_ready = tensorMap(kMap, launch.params.k_map) &&
                                  tensorMap(vMap, launch.params.v_map);
  }
  void *kernelArgs[] = {&launch.params};
  return backend_->launch(loaded->function(), launch.geometry, args.stream,
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
