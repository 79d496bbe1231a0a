//===- CAPI.cpp - C API of the mlagen runtime -----------------------------===//
//
// Handles are the C++ objects themselves: mlagen_runtime is a Runtime,
// mlagen_kernel a Kernel. No exception crosses into C.
//
//===----------------------------------------------------------------------===//

#include "mlagen-c/Runtime.h"
#include "RuntimeInternal.h"
#include "mlagen/Runtime/DecodePlan.h"
#include "mlagen/Runtime/DefaultGenerator.h"
#include "mlagen/Runtime/Runtime.h"

#include <algorithm>
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

struct DecodePlannerHandle {
  const Kernel *kernel;
  Runtime *runtime; // the kernel's: runs its launches
  DecodePlanner planner;
};

const DecodePlannerHandle *plannerOf(const mlagen_decode_planner *planner) {
  return reinterpret_cast<const DecodePlannerHandle *>(planner);
}

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

// The C++ kernel behind a C handle, and the Runtime that owns it.
Status resolveKernel(const mlagen_kernel *handle, const Kernel *&kernel,
                     Runtime *&runtime) {
  if (!handle)
    return Status(StatusCode::InvalidArgument, "kernel is null");
  kernel = reinterpret_cast<const Kernel *>(handle);
  runtime = owningRuntime(*kernel);
  if (!runtime)
    return Status(StatusCode::InvalidArgument,
                  "kernel is not a handle from mlagen_get_kernel");
  return Status::ok();
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

const char *mlagen_status_name(int code) {
  if (code < 0 || code > static_cast<int>(StatusCode::Internal))
    return "Unknown";
  return statusCodeName(static_cast<StatusCode>(code));
}

int mlagen_compile(mlagen_runtime *runtime, const char *signature,
                   void *binary, size_t size, size_t *binary_size) {
  return guarded([&]() -> Status {
    if (!runtime)
      return Status(StatusCode::InvalidArgument, "runtime is null");
    if (binary_size)
      *binary_size = 0;
    Signature sig;
    if (Status status = parseAndValidate(signature, sig); !status)
      return status;
    CodeObject code;
    if (Status status =
            reinterpret_cast<RuntimeHandle *>(runtime)->runtime->compile(sig,
                                                                         code);
        !status)
      return status;
    if (binary_size)
      *binary_size = code.binary.size();
    if (!binary)
      return Status::ok();
    if (size < code.binary.size())
      return Status(StatusCode::InvalidArgument,
                    "the code object needs " +
                        std::to_string(code.binary.size()) + " bytes, got " +
                        std::to_string(size));
    std::memcpy(binary, code.binary.data(), code.binary.size());
    return Status::ok();
  });
}

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
    if (!signature)
      return Status(StatusCode::InvalidArgument, "signature is null");
    if (Status status = parseSignature(signature, sig); !status)
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

int mlagen_get_kernels(mlagen_runtime *runtime, const char *const *signatures,
                       size_t count, int jobs, mlagen_kernel **out) {
  return guarded([&]() -> Status {
    if (out)
      std::fill(out, out + count, nullptr);
    if (!runtime || !out || (count > 0 && !signatures))
      return Status(StatusCode::InvalidArgument,
                    "runtime, signatures or out is null");
    std::vector<Signature> sigs(count);
    for (size_t i = 0; i < count; ++i) {
      if (!signatures[i])
        return Status(StatusCode::InvalidArgument,
                      "signature " + std::to_string(i) + " is null");
      if (Status status = parseSignature(signatures[i], sigs[i]); !status)
        return Status(status.code(), "signature " + std::to_string(i) + ": " +
                                         status.message());
    }
    std::vector<const Kernel *> kernels;
    Status status = reinterpret_cast<RuntimeHandle *>(runtime)
                        ->runtime->getKernels(sigs, kernels, jobs);
    for (size_t i = 0; i < count; ++i)
      out[i] = reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernels[i]));
    return status;
  });
}

int mlagen_prefill_run(const mlagen_kernel *kernel, const void *q,
                       const void *k, const void *v, void *out, float *lse,
                       const int *cu_seqlens_q, const int *cu_seqlens_k,
                       int batch, int max_seqlen_q, int64_t total_k,
                       const int64_t *strides, float softmax_scale,
                       const float *alibi_slopes, void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    const Kernel &cxxKernel = *resolved;
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
    args.totalK = total_k;
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
    args.alibiSlopes = alibi_slopes;
    args.stream = stream;
    return runtime->runPrefill(cxxKernel, args);
  });
}

int mlagen_merge_attn_states_run(const mlagen_kernel *kernel,
                                 const void *prefix_out,
                                 const float *prefix_lse,
                                 const void *suffix_out,
                                 const float *suffix_lse, void *out,
                                 float *out_lse, int num_tokens, int num_heads,
                                 int head_dim, const int64_t *strides,
                                 void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    const Kernel &cxxKernel = *resolved;
    MergeAttnStatesArgs args;
    args.prefixOut = prefix_out;
    args.prefixLse = prefix_lse;
    args.suffixOut = suffix_out;
    args.suffixLse = suffix_lse;
    args.out = out;
    args.outLse = out_lse;
    args.numTokens = num_tokens;
    args.numHeads = num_heads;
    args.headDim = head_dim;
    if (strides) {
      int64_t *fields[] = {
          &args.prefixTokenStride,   &args.prefixHeadStride,
          &args.suffixTokenStride,   &args.suffixHeadStride,
          &args.outTokenStride,      &args.outHeadStride,
          &args.prefixLseHeadStride, &args.suffixLseHeadStride,
          &args.outLseHeadStride};
      for (int i = 0; i < 9; ++i)
        *fields[i] = strides[i];
    }
    args.stream = stream;
    return runtime->runMergeAttnStates(cxxKernel, args);
  });
}

int mlagen_expand_page_indices_run(const mlagen_kernel *kernel,
                                   const int32_t *block_table,
                                   int block_table_stride,
                                   const int32_t *cu_seqlens,
                                   const int32_t *seq_starts, int32_t *slots,
                                   int batch, int max_seqlen, void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    const Kernel &cxxKernel = *resolved;
    ExpandPageIndicesArgs args;
    args.blockTable = block_table;
    args.blockTableStride = block_table_stride;
    args.cuSeqlens = cu_seqlens;
    args.seqStarts = seq_starts;
    args.slots = slots;
    args.batch = batch;
    args.maxSeqlen = max_seqlen;
    args.stream = stream;
    return runtime->runExpandPageIndices(cxxKernel, args);
  });
}

int mlagen_kv_cache_write_run(const mlagen_kernel *kernel, const void *kv_c,
                              const void *k_pe, void *kv_cache,
                              const void *slot_mapping, int slot_mapping_bits,
                              const float *scale, int num_tokens,
                              const int64_t *strides, void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    const Kernel &cxxKernel = *resolved;
    KVCacheWriteArgs args;
    args.kvC = kv_c;
    args.kPe = k_pe;
    args.kvCache = kv_cache;
    if (slot_mapping_bits != 32 && slot_mapping_bits != 64)
      return Status(StatusCode::InvalidArgument,
                    "slot_mapping_bits must be 32 or 64 (got " +
                        std::to_string(slot_mapping_bits) + ")");
    args.slotMapping = slot_mapping;
    args.slotMappingInt64 = slot_mapping_bits == 64;
    args.scale = scale;
    args.numTokens = num_tokens;
    if (strides) {
      args.kvCTokenStride = strides[0];
      args.kPeTokenStride = strides[1];
      args.cacheBlockStride = strides[2];
      args.cacheTokenStride = strides[3];
    }
    args.stream = stream;
    return runtime->runKVCacheWrite(cxxKernel, args);
  });
}

int mlagen_reshape_and_cache_run(const mlagen_kernel *kernel, const void *key,
                                 const void *value, void *k_cache,
                                 void *v_cache, const void *slot_mapping,
                                 int slot_mapping_bits, const float *k_scale,
                                 const float *v_scale, int num_tokens,
                                 const int64_t *strides, void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    if (slot_mapping_bits != 32 && slot_mapping_bits != 64)
      return Status(StatusCode::InvalidArgument,
                    "slot_mapping_bits must be 32 or 64 (got " +
                        std::to_string(slot_mapping_bits) + ")");
    ReshapeAndCacheArgs args;
    args.key = key;
    args.value = value;
    args.kCache = k_cache;
    args.vCache = v_cache;
    args.slotMapping = slot_mapping;
    args.slotMappingInt64 = slot_mapping_bits == 64;
    args.kScale = k_scale;
    args.vScale = v_scale;
    args.numTokens = num_tokens;
    if (strides) {
      int64_t *fields[] = {
          &args.keyTokenStride,    &args.keyHeadStride,
          &args.valueTokenStride,  &args.valueHeadStride,
          &args.kCacheBlockStride, &args.kCacheTokenStride,
          &args.kCacheHeadStride,  &args.vCacheBlockStride,
          &args.vCacheTokenStride, &args.vCacheHeadStride};
      for (int i = 0; i < 10; ++i)
        *fields[i] = strides[i];
    }
    args.stream = stream;
    return runtime->runReshapeAndCache(*resolved, args);
  });
}

int mlagen_gather_cache_run(const mlagen_kernel *kernel, const void *k_cache,
                            const void *v_cache, void *out_k, void *out_v,
                            const void *slots, int slots_bits,
                            const float *k_scale, const float *v_scale,
                            int num_tokens, const int64_t *strides,
                            void *stream) {
  return guarded([&]() -> Status {
    const Kernel *resolved = nullptr;
    Runtime *runtime = nullptr;
    if (Status status = resolveKernel(kernel, resolved, runtime); !status)
      return status;
    if (slots_bits != 32 && slots_bits != 64)
      return Status(StatusCode::InvalidArgument,
                    "slots_bits must be 32 or 64 (got " +
                        std::to_string(slots_bits) + ")");
    GatherCacheArgs args;
    args.kCache = k_cache;
    args.vCache = v_cache;
    args.outK = out_k;
    args.outV = out_v;
    args.slots = slots;
    args.slotsInt64 = slots_bits == 64;
    args.kScale = k_scale;
    args.vScale = v_scale;
    args.numTokens = num_tokens;
    if (strides) {
      int64_t *fields[] = {
          &args.outKTokenStride,   &args.outKHeadStride,
          &args.outVTokenStride,   &args.outVHeadStride,
          &args.kCacheBlockStride, &args.kCacheTokenStride,
          &args.kCacheHeadStride,  &args.vCacheBlockStride,
          &args.vCacheTokenStride, &args.vCacheHeadStride};
      for (int i = 0; i < 10; ++i)
        *fields[i] = strides[i];
    }
    args.stream = stream;
    return runtime->runGatherCache(*resolved, args);
  });
}

int mlagen_decode_planner_create(const mlagen_kernel *kernel, int max_batch,
                                 int num_sms, int64_t max_seq_len,
                                 mlagen_decode_planner **out) {
  return guarded([&]() -> Status {
    if (!kernel || !out)
      return Status(StatusCode::InvalidArgument, "kernel or out is null");
    *out = nullptr;
    const Kernel &cxxKernel = *reinterpret_cast<const Kernel *>(kernel);
    Runtime *runtime = owningRuntime(cxxKernel);
    if (!runtime)
      return Status(StatusCode::InvalidArgument,
                    "kernel is not a handle from mlagen_get_kernel");
    DecodePlanOptions options;
    options.maxBatch = max_batch;
    options.numSMs = num_sms;
    options.maxSeqLen = max_seq_len;
    auto handle = std::make_unique<DecodePlannerHandle>(
        DecodePlannerHandle{&cxxKernel, runtime, DecodePlanner()});
    if (Status status =
            DecodePlanner::create(cxxKernel, options, handle->planner);
        !status)
      return status;
    *out = reinterpret_cast<mlagen_decode_planner *>(handle.release());
    return Status::ok();
  });
}

void mlagen_decode_planner_destroy(mlagen_decode_planner *planner) {
  delete reinterpret_cast<DecodePlannerHandle *>(planner);
}

int mlagen_decode_planner_sizes(const mlagen_decode_planner *planner,
                                int64_t *sizes, size_t count) {
  return guarded([&]() -> Status {
    if (!planner || (!sizes && count > 0))
      return Status(StatusCode::InvalidArgument, "planner or sizes is null");
    if (count > MLAGEN_DECODE_NUM_SIZES)
      return Status(StatusCode::InvalidArgument,
                    "count must be <= MLAGEN_DECODE_NUM_SIZES (" +
                        std::to_string(MLAGEN_DECODE_NUM_SIZES) + "), got " +
                        std::to_string(count));
    const DecodeBufferSizes &s = plannerOf(planner)->planner.sizes();
    const int64_t all[MLAGEN_DECODE_NUM_SIZES] = {
        s.planInts, s.partialOutFloats, s.partialLseFloats, s.workCapacity,
        s.slotCapacity};
    std::copy(all, all + count, sizes);
    return Status::ok();
  });
}

int mlagen_decode_plan(const mlagen_decode_planner *planner,
                       const int32_t *seq_lens, int batch, int32_t *plan,
                       size_t plan_ints, int64_t *used_ints) {
  return guarded([&]() -> Status {
    if (!planner)
      return Status(StatusCode::InvalidArgument, "planner is null");
    DecodePlanSummary summary;
    if (Status status = plannerOf(planner)->planner.plan(
            seq_lens, batch, plan, static_cast<int64_t>(plan_ints), &summary);
        !status)
      return status;
    if (used_ints)
      *used_ints = summary.usedInts;
    return Status::ok();
  });
}

int mlagen_decode_run(const mlagen_decode_planner *planner, const void *q,
                      const void *kv_cache, void *out, float *lse,
                      const int32_t *block_table, int block_table_stride,
                      const int32_t *seq_lens, const int32_t *device_plan,
                      float *partial_out, float *partial_lse, int batch,
                      int q_len, int num_heads, const int64_t *strides,
                      float softmax_scale, float q_scale, float kv_scale,
                      int plan_work, int plan_slots, int plan_groups,
                      void *stream) {
  return mlagen_decode_run_checked(
      planner, q, kv_cache, out, lse, block_table, block_table_stride, seq_lens,
      device_plan, partial_out, partial_lse, batch, q_len, num_heads, strides,
      softmax_scale, q_scale, kv_scale, nullptr, 0, 0, plan_work, plan_slots,
      plan_groups, stream);
}

int mlagen_decode_error_check(const int32_t *host_flags) {
  return guarded([&]() -> Status { return checkDecodeErrors(host_flags); });
}

int mlagen_decode_run_checked(
    const mlagen_decode_planner *planner, const void *q, const void *kv_cache,
    void *out, float *lse, const int32_t *block_table, int block_table_stride,
    const int32_t *seq_lens, const int32_t *device_plan, float *partial_out,
    float *partial_lse, int batch, int q_len, int num_heads,
    const int64_t *strides, float softmax_scale, float q_scale, float kv_scale,
    int32_t *error_flags, int64_t num_blocks, int max_pages, int plan_work,
    int plan_slots, int plan_groups, void *stream) {
  return guarded([&]() -> Status {
    if (!planner)
      return Status(StatusCode::InvalidArgument, "planner is null");
    const DecodePlannerHandle &handle = *plannerOf(planner);
    DecodeArgs args;
    args.q = q;
    args.kvCache = kv_cache;
    args.out = out;
    args.lse = lse;
    args.blockTable = block_table;
    args.blockTableStride = block_table_stride;
    args.seqLens = seq_lens;
    args.batch = batch;
    args.qLen = q_len;
    args.numQHeads = num_heads;
    if (batch > 0 && !device_plan)
      return Status(StatusCode::InvalidArgument, "device_plan is null");
    handle.planner.bindPlan(device_plan, partial_out, partial_lse, args);
    if (strides) {
      int64_t *fields[] = {&args.qBatchStride,   &args.qTokenStride,
                           &args.qHeadStride,    &args.outBatchStride,
                           &args.outTokenStride, &args.outHeadStride,
                           &args.kvBlockStride,  &args.kvTokenStride};
      for (int i = 0; i < 8; ++i)
        *fields[i] = strides[i];
    }
    args.softmaxScale = softmax_scale;
    args.qScale = q_scale;
    args.kvScale = kv_scale;
    args.checked = error_flags != nullptr;
    args.errorFlags = error_flags;
    args.numBlocks = num_blocks;
    args.maxPages = max_pages;
    args.planWork = plan_work;
    args.planSlots = plan_slots;
    args.planGroups = plan_groups;
    args.stream = stream;
    return handle.runtime->runDecode(*handle.kernel, args);
  });
}

int mlagen_paged_decode_run(
    const mlagen_decode_planner *planner, const void *q, const void *k_cache,
    const void *v_cache, void *out, float *lse, const int32_t *block_table,
    int block_table_stride, const int32_t *seq_lens, const int32_t *device_plan,
    float *partial_out, float *partial_lse, int batch, int q_len,
    int num_q_heads, int num_kv_heads, const int64_t *strides,
    float softmax_scale, const float *k_scale, const float *v_scale,
    const float *alibi_slopes, int plan_slots, void *stream) {
  return guarded([&]() -> Status {
    if (!planner)
      return Status(StatusCode::InvalidArgument, "planner is null");
    const DecodePlannerHandle &handle = *plannerOf(planner);
    PagedDecodeArgs args;
    args.q = q;
    args.kCache = k_cache;
    args.vCache = v_cache;
    args.out = out;
    args.lse = lse;
    args.blockTable = block_table;
    args.blockTableStride = block_table_stride;
    args.seqLens = seq_lens;
    args.batch = batch;
    args.qLen = q_len;
    args.numQHeads = num_q_heads;
    args.numKVHeads = num_kv_heads;
    if (batch > 0 && !device_plan)
      return Status(StatusCode::InvalidArgument, "device_plan is null");
    handle.planner.bindPlan(device_plan, partial_out, partial_lse, args);
    if (strides) {
      int64_t *fields[] = {&args.qBatchStride,   &args.qTokenStride,
                           &args.qHeadStride,    &args.outBatchStride,
                           &args.outTokenStride, &args.outHeadStride,
                           &args.kvBlockStride,  &args.kvTokenStride,
                           &args.kvHeadStride};
      for (int i = 0; i < 9; ++i)
        *fields[i] = strides[i];
    }
    args.softmaxScale = softmax_scale;
    args.kScale = k_scale;
    args.vScale = v_scale;
    args.alibiSlopes = alibi_slopes;
    args.planSlots = plan_slots;
    args.stream = stream;
    return handle.runtime->runPagedDecode(*handle.kernel, args);
  });
}

} // extern "C"
