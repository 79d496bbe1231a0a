//===- Runtime.h - get, cache and launch generated kernels ------*- C++ -*-===//
//
// A Runtime turns a Signature into a Kernel it can launch: memory cache,
// then AOT bundles, then the disk cache, then generate + compile.
// GPU drivers and compilers are found at run time (dlopen), so one binary
// runs on a CPU-only machine (compile-only), an NVIDIA box and a ROCm box.
//
// Thread safety: every member of Runtime may be called from any number of
// threads at once. Concurrent requests for one signature generate and compile
// it once: in this process, and across processes sharing the cache directory
// (through a file lock released if its holder dies). A Kernel is immutable
// and valid until its Runtime is destroyed; synchronize the streams that use
// it first. runPrefill and runDecode never block the host on the device.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_RUNTIME_H
#define MLAGEN_RUNTIME_RUNTIME_H

#include "mlagen/Runtime/Signature.h"
#include "mlagen/Runtime/SourceGenerator.h"
#include "mlagen/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlagen {

class PrebuiltKernels; // mlagen/Runtime/PrebuiltKernels.h

// Auto: CUDA if libcuda.so.1 finds a device, else HIP, else compile-only.
// None: compile-only; no driver is loaded.
enum class BackendKind { Auto, CUDA, HIP, None };
// Auto: NVRTC for sm_*, hiprtc for gfx90a (clang if hiprtc is missing),
// clang-22 for gfx942 and gfx950.
enum class CompilerKind { Auto, NVRTC, Hiprtc, Clang };

struct RuntimeOptions {
  // Makes device source on a cache miss. Null: only kernels built before
  // (AOT bundles, the disk cache) can be found.
  std::shared_ptr<SourceGenerator> generator;
  // AOT bundles, consulted in order before the disk cache.
  std::vector<std::shared_ptr<const PrebuiltKernels>> prebuilt;
  // Bundle directories written by `mlagen` (manifest.json + code objects),
  // opened by create() and consulted after `prebuilt`; then those named by
  // $MLAGEN_BUNDLE_PATH (colon-separated). A malformed bundle named here
  // fails create(); one named by the variable is skipped with a warning, as
  // is a bundle of another format, or with no kernel for the device's arch.
  // A runtime with a generator also skips bundled kernels that another
  // generator or compiler built (see PrebuiltKernels.h).
  std::vector<std::string> bundlePaths;
  BackendKind backend = BackendKind::Auto;
  int device = 0; // one Runtime per device
  CompilerKind compiler = CompilerKind::Auto;
  // What NVRTC compiles the portable sm_80 kernels for ("sm_80", "sm_90",
  // "sm_100", ...). Empty: the device's own (sm_80 on 8.x, e.g. sm_100 on a
  // 10.0 device), sm_80 without one. With a device, anything but its own is
  // refused, since the cubins would not load there (ahead-of-time builds for
  // another GPU set it on a compile-only runtime).
  std::string portableNvidiaTarget;
  // Empty: $MLAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mlagen, else
  // ~/.cache/mlagen. Entries live in a versioned subdirectory (v2/).
  std::string cacheDir;
  bool diskCache = true;
  // Receives each warning (a cache that degraded to memory, a corrupt entry
  // rebuilt, a bundle skipped). Default: one line on stderr. Called from any
  // thread. $MLAGEN_LOG=debug|info|warn|off sets what else goes to stderr:
  // info adds cache and bundle decisions and compile times.
  std::function<void(const std::string &)> onWarning;
};

// A compiled kernel and what launching it needs.
struct CodeObject {
  Arch arch = Arch::SM90A;
  std::string binary;   // cubin (sm_*) or hsaco (gfx*)
  std::string entryName;
  int threadsPerBlock = 0;
  int sharedBytes = 0;  // dynamic shared memory per block
  int tileQ = 0;        // query rows per block
  // Decode: keys per inner step, q heads after padding, and the kernels
  // launched after entryName (see GeneratedKernel).
  int tileK = 0;
  int paddedHeads = 0;
  // Decode only: chunks of one request merged inside a cluster (1 = none).
  int clusterParts = 1;
  // Decode: blocks an SM holds, as the kernel's launch bounds promise (0:
  // not stated; the planner then counts what shared memory allows).
  int blocksPerSM = 0;
  std::vector<KernelEntry> extraEntries;
  std::string cacheKey; // 32 hex digits: XXH3-128 of signature, generator,
                        // compiler and flags; names the disk entry
  // What built it; empty when a PrebuiltKernels does not say.
  std::string generatorIdentity; // SourceGenerator::identity()
  std::string compilerIdentity;  // "nvrtc 13.0", "clang version 22..."
  std::string compilerFlags;
};

// A kernel loaded on the runtime's device; owned by the Runtime.
class Kernel {
public:
  virtual ~Kernel() = default;
  virtual const Signature &signature() const = 0;
  virtual const CodeObject &codeObject() const = 0;
};

// One prefill launch (templates/CONTRACT.md). Pointers are device memory,
// strides are in elements.
struct PrefillArgs {
  const void *q = nullptr;   // [total_q, num_q_heads, head_dim_qk]
  const void *k = nullptr;   // [total_k, num_kv_heads, head_dim_qk]
  const void *v = nullptr;   // [total_k, num_kv_heads, head_dim_v]
  void *out = nullptr;       // [total_q, num_q_heads * head_dim_v]
  float *lse = nullptr;      // [num_q_heads, total_q]; null: not written
  const int *cuSeqlensQ = nullptr; // [batch + 1]
  const int *cuSeqlensK = nullptr; // [batch + 1]
  int batch = 0;             // >= 1
  int maxSeqlenQ = 0;        // 0: nothing to launch
  // Rows of k and v (k.shape[0]); 0: unknown. Given, the sm_90a kernel
  // copies K and V tiles with TMA, which reads whole tiles past a sequence's
  // last key (never past total_k rows); unknown, it uses cp.async (slower).
  int64_t totalK = 0;
  // 0 means contiguous: token stride = heads * head dim, head stride = head
  // dim (out: num_q_heads * head_dim_v and head_dim_v).
  int64_t qTokenStride = 0, qHeadStride = 0;
  int64_t kTokenStride = 0, kHeadStride = 0;
  int64_t vTokenStride = 0, vHeadStride = 0;
  int64_t outTokenStride = 0, outHeadStride = 0;
  // Required when lse is given (total_q for [num_q_heads, total_q]): the
  // runtime cannot read total_q from device memory without a host sync.
  int64_t lseHeadStride = 0;
  float softmaxScale = 0.0f; // 0: 1/sqrt(head_dim_qk); must be finite
  // [num_q_heads] fp32 ALiBi slopes: required by a kernel whose signature
  // has alibi=1 and refused by one without (a bias silently not applied is
  // a wrong answer). The runtime cannot check the length.
  const float *alibiSlopes = nullptr;
  void *stream = nullptr;    // cudaStream_t or hipStream_t; null: default
};

// Checked decode's error flags (templates/DECODE_CONTRACT.md, "Checked
// mode"): [code, request, value, page index, max_pages, num_blocks,
// page_size, 0]; code 0 means no error.
constexpr int kDecodeErrorFlagInts = 8;
enum DecodeErrorCode : int {
  kDecodeErrorNone = 0,
  kDecodeErrorSeqLen = 1, // value = seq_len
  kDecodeErrorPage = 2,   // value = the block-table entry
};
// Ok when `hostFlags` (a host copy of DecodeArgs::errorFlags, taken after
// the decode finished) hold no error, else InvalidArgument naming the
// request and the rule it broke. Never touches the device.
Status checkDecodeErrors(const int *hostFlags);

// One absorbed MLA decode step (templates/DECODE_CONTRACT.md). Pointers are
// device memory, strides are in elements; 0 selects the contiguous stride.
struct DecodeArgs {
  const void *q = nullptr;       // [batch, q_len, num_q_heads, head_dim_qk]
  const void *kvCache = nullptr; // [num_blocks, page_size, head_dim_qk]
  void *out = nullptr;           // [batch, q_len, num_q_heads, head_dim_v]
  float *lse = nullptr; // [batch, q_len, num_q_heads], contiguous; null: none
  const int *blockTable = nullptr; // [batch, blockTableStride] page ids
  int blockTableStride = 0;        // > 0
  const int *seqLens = nullptr;    // [batch] keys, the q_len new ones included
  int batch = 0;                   // 0: nothing to launch
  // Must equal the kernel's: a mismatched tensor is caught here, not as
  // wrong numbers.
  int qLen = 0;
  int numQHeads = 0;
  // The plan, copied to the device; DecodePlanner::bindPlan fills these.
  const int *work = nullptr;    // int4 [workCapacity], 16-byte aligned
  const int *numWork = nullptr; // int [1]
  const int *merge = nullptr;   // int2 [maxBatch]
  // Arrival counters of pairs merged in the grid, inside the device plan
  // (required: the kernel writes them and leaves them zero).
  int *mergeArrivals = nullptr;
  int workCapacity = 0;         // grid.x of mlagen_decode, at most
  // Items a plan holds beyond one a request (DecodePlanner::workSlack), or
  // -1 if unbounded: no plan of `batch` requests holds more than batch +
  // workSlack, so the grid covers no more, even in a captured graph (whose
  // replays keep the batch).
  int workSlack = -1;
  // Blocks per thread-block cluster (DecodeBufferSizes::clusterBlocks): the
  // plan's merge groups must meet clusters of this size. 1: no cluster.
  int clusterBlocks = 1;
  int maxBatch = 0;             // capacity of merge: batch <= maxBatch
  // fp32 [slots, q_len * padded heads, head_dim_v] and [slots, rows]
  float *partialOut = nullptr;
  float *partialLse = nullptr;
  // Partial slots the bound plan leaves to the reduce (DecodePlanSummary::
  // reduceSlots, plan[1]), where the caller knows it; 0 lets the op skip
  // the reduce launch, which would merge nothing, unless the stream is
  // being captured into a graph (a replay may meet a plan that needs it).
  // -1: unknown, the reduce always runs.
  int planSlots = -1;
  // Work items of the bound plan (DecodePlanSummary::numWork, plan[0]),
  // where the caller knows it; outside graph capture the grid then covers
  // only those (rounded up to whole clusters) instead of the most a plan
  // of `batch` may hold (workSlack), whose blocks past them only exit. A
  // count below the plan's leaves items unrun. -1: unknown.
  int planWork = -1;
  // Merge groups the bound plan runs in clusters (DecodePlanSummary::
  // mergeGroups, plan[3]), where the caller knows it; 0 lets the op launch
  // without clusters (a little faster) outside graph capture. -1: unknown,
  // clusters whenever clusterBlocks > 1. A plan with groups launched
  // without clusters writes NaN rows.
  int planGroups = -1;
  int64_t qBatchStride = 0, qTokenStride = 0, qHeadStride = 0;
  int64_t outBatchStride = 0, outTokenStride = 0, outHeadStride = 0;
  int64_t kvBlockStride = 0, kvTokenStride = 0;
  // Required: absorbed MLA scales by the unabsorbed head dim (DeepSeek-V3:
  // 1/sqrt(192)), which the kernel cannot infer from 576.
  float softmaxScale = 0.0f;
  // fp8 e4m3 cache (signature kv=fp8e4m3): the per-tensor scale, key and
  // value = kv_scale * stored value; finite and > 0. Ignored by 16-bit caches.
  // sm_90a multiplies it as e4m3 with fp8 q, and with bf16 q where q_len x
  // heads <= 16 (q split into e4m3 hi + lo): the tensor cores' sums carry
  // about 2^-12 of each logit (2^-11 where its terms share a sign; fp8 q in
  // 64-row blocks, one accumulator: an LSE 1.6e-2 off at logits of 80);
  // bf16 q in larger blocks is widened, exact.
  float kvScale = 1.0f;
  // fp8 e4m3 q (signature q=fp8e4m3): its per-tensor scale, dequantised q =
  // q_scale * stored; finite and > 0. It only scales the logits, so the
  // runtime folds it into softmax_scale. Ignored by 16-bit q.
  float qScale = 1.0f;
  // Checked mode: the kernel verifies on the device what the host cannot
  // see without a sync: seq_lens[b] <= maxPages * page_size and every page id
  // it reads in [0, numBlocks). A bad request reads nothing of the cache, its
  // rows get zeros and LSE -inf, and the first violation is recorded in
  // errorFlags (kDecodeErrorFlagInts device ints the caller zeroes and keeps
  // zeroed between steps; they are never read back by the runtime). After
  // the caller's own sync, checkDecodeErrors(host copy) reports it.
  bool checked = false;
  int *errorFlags = nullptr; // device, int [kDecodeErrorFlagInts]
  int64_t numBlocks = 0;     // pages in the cache; required when checked
  int maxPages = 0;          // pages per block-table row; 0: blockTableStride
  void *stream = nullptr; // cudaStream_t or hipStream_t; null: default
};

// One merge_attn_states launch: out = the LSE-weighted merge of two partial
// attention results over disjoint key sets (vLLM semantics; an infinite LSE
// is an empty part). Pointers are device memory, strides in elements; 0
// selects the contiguous stride.
struct MergeAttnStatesArgs {
  const void *prefixOut = nullptr; // [num_tokens, num_heads, head_dim]
  const float *prefixLse = nullptr; // [num_heads, *] fp32, natural log
  const void *suffixOut = nullptr; // [num_tokens, num_heads, head_dim]
  const float *suffixLse = nullptr; // [num_heads, *]
  void *out = nullptr;              // [num_tokens, num_heads, head_dim]
  float *outLse = nullptr; // [num_heads, *]; null (or lse=0): not written
  int numTokens = 0;       // 0: nothing to launch
  // Must equal the kernel's (hq and v): a mismatched tensor is caught here.
  int numHeads = 0;
  int headDim = 0;
  int64_t prefixTokenStride = 0, prefixHeadStride = 0;
  int64_t suffixTokenStride = 0, suffixHeadStride = 0;
  int64_t outTokenStride = 0, outHeadStride = 0;
  // Head strides of the [num_heads, tokens] LSEs; 0 means num_tokens. A
  // prefill's LSE over more tokens (lse_head_stride = its total_q) merges
  // as is.
  int64_t prefixLseHeadStride = 0, suffixLseHeadStride = 0,
          outLseHeadStride = 0;
  void *stream = nullptr; // cudaStream_t or hipStream_t; null: default
};

// One page-index expansion: for request b and token i < cu_seqlens[b + 1] -
// cu_seqlens[b], slots[cu_seqlens[b] + i] = the cache slot (page * page_size
// + offset) of position seqStarts[b] + i through row b of the block table.
// Device pointers, int32.
struct ExpandPageIndicesArgs {
  const int *blockTable = nullptr; // [batch, blockTableStride] page ids
  int blockTableStride = 0;        // > 0
  const int *cuSeqlens = nullptr;  // [batch + 1], non-decreasing
  const int *seqStarts = nullptr;  // [batch] first position; null: 0
  int *slots = nullptr;            // [cu_seqlens[batch]]
  int batch = 0;                   // 0: nothing to launch
  // >= every cu_seqlens[b + 1] - cu_seqlens[b]; sizes the grid (it is not
  // read back from the device). 0: nothing to launch.
  int maxSeqlen = 0;
  void *stream = nullptr;
};

// One MLA KV-cache write: for token t with slot = slotMapping[t] >= 0 (-1
// skips it), cache row (slot / page, slot % page) = kvC[t] ++ kPe[t]; an
// fp8 cache (kv=fp8e4m3) stores fp8(x / *scale), rounded to nearest even and
// saturated (vLLM's concat_and_cache_mla). Pointers are device memory,
// strides in elements (the cache's in its own type); 0 selects the
// contiguous stride.
struct KVCacheWriteArgs {
  const void *kvC = nullptr;         // [num_tokens, v] (latent), in type
  const void *kPe = nullptr;         // [num_tokens, qk - v] (rope)
  void *kvCache = nullptr;           // [num_blocks, page_size, qk]
  const void *slotMapping = nullptr; // [num_tokens] int32 or int64, -1 skips
  bool slotMappingInt64 = false;     // vLLM's slot_mapping is int64
  const float *scale = nullptr;      // fp8 cache: [1] fp32; else unused
  int numTokens = 0;                 // 0: nothing to launch
  int64_t kvCTokenStride = 0, kPeTokenStride = 0;
  int64_t cacheBlockStride = 0, cacheTokenStride = 0;
  void *stream = nullptr;
};

// One GQA KV-cache write (vLLM's reshape_and_cache_flash): for token t with
// slot = slotMapping[t] >= 0 (-1 skips it) and each kv head h,
// kCache[slot / page][slot % page][h] = key[t][h] and vCache[...][h] =
// value[t][h]; an fp8 cache (kv=fp8e4m3) stores fp8(key / *kScale) and
// fp8(value / *vScale), rounded to nearest even and saturated. Pointers are
// device memory, strides in elements (a cache's in its own type), each a
// multiple of 8. A stride of 0 is contiguous given the strides inside it:
// head = v, token = hkv * head, block = page * token.
struct ReshapeAndCacheArgs {
  const void *key = nullptr;         // [num_tokens, hkv, v], in type
  const void *value = nullptr;       // [num_tokens, hkv, v]
  void *kCache = nullptr;            // [num_blocks, page, hkv, v], kv type
  void *vCache = nullptr;            // [num_blocks, page, hkv, v]
  const void *slotMapping = nullptr; // [num_tokens] int32 or int64, -1 skips
  bool slotMappingInt64 = false;     // vLLM's slot_mapping is int64
  const float *kScale = nullptr;     // fp8 cache: [1] fp32; else unused
  const float *vScale = nullptr;     // fp8 cache: [1] fp32; else unused
  int numTokens = 0;                 // 0: nothing to launch
  int64_t keyTokenStride = 0, keyHeadStride = 0;
  int64_t valueTokenStride = 0, valueHeadStride = 0;
  int64_t kCacheBlockStride = 0, kCacheTokenStride = 0, kCacheHeadStride = 0;
  int64_t vCacheBlockStride = 0, vCacheTokenStride = 0, vCacheHeadStride = 0;
  void *stream = nullptr;
};

// One GQA KV-cache gather (vLLM's gather_and_maybe_dequant_cache): for
// flat token i with slot = slots[i] >= 0 and each kv head h, outK[i][h] =
// kCache[slot / page][slot % page][h] and outV[i][h] = vCache[...][h]; slot
// -1 writes zeros. A 16-bit cache is copied bit for bit; an fp8 cache
// (kv=fp8e4m3) gives float(stored) * *kScale (*vScale for values) rounded
// to nearest even in the out type. Pointers are device memory, strides in
// elements (a cache's in its own type), each a multiple of 8. A stride of 0
// is contiguous given the strides inside it: head = v, token = hkv * head,
// block = page * token.
struct GatherCacheArgs {
  const void *kCache = nullptr; // [num_blocks, page, hkv, v], kv type
  const void *vCache = nullptr; // [num_blocks, page, hkv, v]
  void *outK = nullptr;         // [num_tokens, hkv, v], out type
  void *outV = nullptr;         // [num_tokens, hkv, v]
  const void *slots = nullptr;  // [num_tokens] int32 or int64, -1: zeros
  bool slotsInt64 = false;      // expand_page_indices writes int32
  const float *kScale = nullptr; // fp8 cache: [1] fp32; else unused
  const float *vScale = nullptr; // fp8 cache: [1] fp32; else unused
  int numTokens = 0;             // 0: nothing to launch
  int64_t outKTokenStride = 0, outKHeadStride = 0;
  int64_t outVTokenStride = 0, outVHeadStride = 0;
  int64_t kCacheBlockStride = 0, kCacheTokenStride = 0, kCacheHeadStride = 0;
  int64_t vCacheBlockStride = 0, vCacheTokenStride = 0, vCacheHeadStride = 0;
  void *stream = nullptr;
};

// One paged GQA decode step (templates/PAGED_DECODE_CONTRACT.md). Pointers
// are device memory, strides in elements (the caches' in their own type);
// 0 selects the contiguous stride. The K and V caches share one set of
// strides (vLLM's kv_cache[:, 0] and [:, 1] views do). The plan fields are
// DecodePlanner::bindPlan's, as for DecodeArgs.
struct PagedDecodeArgs {
  const void *q = nullptr;      // [batch, q_len, hq, d]
  const void *kCache = nullptr; // [num_blocks, page_size, hkv, d]
  const void *vCache = nullptr; // [num_blocks, page_size, hkv, d]
  void *out = nullptr;          // [batch, q_len, hq, d]
  float *lse = nullptr; // [batch, q_len, hq], contiguous; null: none
  const int *blockTable = nullptr; // [batch, blockTableStride] page ids
  int blockTableStride = 0;        // > 0
  const int *seqLens = nullptr;    // [batch] keys, the q_len new ones included
  int batch = 0;                   // 0: nothing to launch
  // Must equal the kernel's: a mismatched tensor is caught here.
  int qLen = 0;
  int numQHeads = 0;
  int numKVHeads = 0;
  const int *work = nullptr;
  const int *numWork = nullptr;
  const int *merge = nullptr;
  int workCapacity = 0;
  int maxBatch = 0;
  float *partialOut = nullptr; // fp32 [slots, q_len * hq, d]
  float *partialLse = nullptr; // fp32 [slots, q_len * hq]
  // As DecodeArgs::planSlots.
  int planSlots = -1;
  int64_t qBatchStride = 0, qTokenStride = 0, qHeadStride = 0;
  int64_t outBatchStride = 0, outTokenStride = 0, outHeadStride = 0;
  // Contiguous: head = d, token = hkv * d, block = page_size * token.
  int64_t kvBlockStride = 0, kvTokenStride = 0, kvHeadStride = 0;
  float softmaxScale = 0.0f; // required, finite and > 0
  // fp8 cache (kv=fp8e4m3): device fp32 [1] each, key = *kScale * stored,
  // value = *vScale * stored (vLLM's layer._k_scale / _v_scale tensors;
  // pointers, so a captured graph follows later scale updates). Required
  // for an fp8 cache, ignored otherwise.
  const float *kScale = nullptr;
  const float *vScale = nullptr;
  // [num_q_heads] fp32 ALiBi slopes on the device: required by a kernel
  // with alibi=1, refused by one without (as PrefillArgs::alibiSlopes).
  const float *alibiSlopes = nullptr;
  void *stream = nullptr;
};

class Runtime {
public:
  static Status create(RuntimeOptions options, std::unique_ptr<Runtime> &out);
  virtual ~Runtime() = default;

  // "cuda device 0: NVIDIA H100 80GB HBM3 (sm_90a)", or "compile-only: no
  // GPU backend: libcuda.so.1 not found; libamdhip64.so.5 not found".
  virtual std::string backendDescription() const = 0;
  // The device's arch; NoBackend (saying why) when compile-only.
  virtual Status deviceArch(Arch &out) const = 0;

  // A kernel for `sig` loaded on the device; sig.arch must be one the
  // device runs: its own, or sm_80 on any NVIDIA device (compiled for the
  // device's own target from 9.0 on).
  // The pointer stays valid until the Runtime is destroyed.
  virtual Status getKernel(const Signature &sig, const Kernel *&out) = 0;
  // getKernel for each of `sigs`, up to `jobs` at once (<= 0: one per core):
  // an engine's cold start then waits for its slowest compile rather than
  // their sum. out[i] is sigs[i]'s kernel, or null where that one failed.
  // Every signature is tried, so the others stay cached; the first failure
  // in order is returned, naming its index and signature.
  Status getKernels(const std::vector<Signature> &sigs,
                    std::vector<const Kernel *> &out, int jobs = 0);
  // The code object for `sig`, for any arch a compiler here can target; no
  // device needed (AOT builds, tests). Uses and fills the same caches.
  virtual Status compile(const Signature &sig, CodeObject &out) = 0;
  // Checks `args` and enqueues one launch on args.stream: grid
  // (ceil(maxSeqlenQ / tileQ), numQHeads, batch). A kernel built with
  // lse=1 skips the LSE write when args.lse is null (the kernel checks);
  // with lse=0 args.lse is ignored.
  virtual Status runPrefill(const Kernel &kernel, const PrefillArgs &args) = 0;
  // Checks `args` and enqueues mlagen_decode, grid (the plan's items, or
  // under graph capture or without planWork min(workCapacity, batch +
  // workSlack) rounded up to whole clusters; ceil(q_len * padded heads /
  // tileQ)), then mlagen_decode_reduce, grid
  // (batch, ceil(rows / its rowsPerBlock), 1 to 8 column splits, more when
  // batch is small), on args.stream. Reads the plan
  // from device memory only, so the two launches can be captured in a
  // graph. lse as for runPrefill.
  virtual Status runDecode(const Kernel &kernel, const DecodeArgs &args) = 0;
  // Checks `args` and enqueues mlagen_merge_attn_states on args.stream,
  // grid ceil(num_tokens * num_heads * head_dim / 8 / threads).
  virtual Status runMergeAttnStates(const Kernel &kernel,
                                    const MergeAttnStatesArgs &args) = 0;
  // Checks `args` and enqueues mlagen_expand_page_indices on args.stream,
  // grid (ceil(maxSeqlen / threads), batch).
  virtual Status runExpandPageIndices(const Kernel &kernel,
                                      const ExpandPageIndicesArgs &args) = 0;
  // Checks `args` and enqueues mlagen_kv_cache_write on args.stream, grid
  // ceil(num_tokens * qk / 8 / threads).
  virtual Status runKVCacheWrite(const Kernel &kernel,
                                 const KVCacheWriteArgs &args) = 0;
  // Checks `args` and enqueues mlagen_reshape_and_cache on args.stream, grid
  // ceil(num_tokens * 2 * hkv * v / 8 / threads).
  virtual Status runReshapeAndCache(const Kernel &kernel,
                                    const ReshapeAndCacheArgs &args) = 0;
  // Checks `args` and enqueues mlagen_paged_decode, grid (workCapacity,
  // q_len * hq / rows per block), then mlagen_paged_decode_reduce, grid
  // (batch, ceil(q_len * hq / 4)), on args.stream; no host sync, graph
  // capturable as runDecode.
  virtual Status runPagedDecode(const Kernel &kernel,
                                const PagedDecodeArgs &args) = 0;
  // Checks `args` and enqueues mlagen_gather_cache on args.stream, grid
  // ceil(num_tokens * 2 * hkv * v / 8 / threads).
  virtual Status runGatherCache(const Kernel &kernel,
                                const GatherCacheArgs &args) = 0;
};

} // namespace mlagen

#endif // MLAGEN_RUNTIME_RUNTIME_H
