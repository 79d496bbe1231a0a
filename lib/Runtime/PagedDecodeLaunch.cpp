//===- PagedDecodeLaunch.cpp - check a paged decode step ------------------===//
//
// Everything a host can get wrong is checked here, before anything reaches
// the device; what lives only in device memory (seq_lens against the block
// table, page ids, the fp8 scales' values) is the caller's.
//
//===----------------------------------------------------------------------===//

#include "PagedDecodeLaunch.h"
#include "LaunchChecks.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace mlagen {
namespace {

std::string got(int64_t value) {
  return " (got " + std::to_string(value) + ")";
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

Status preparePagedDecodeLaunch(const Signature &sig, const CodeObject &code,
                                const PagedDecodeArgs &args,
                                PagedDecodeLaunch &out, bool &empty) {
  empty = false;
  if (sig.op != OpKind::PagedDecode)
    return invalidArgument(
        std::string("runPagedDecode needs a paged_decode kernel, not ") +
        opKindName(sig.op));
  if (code.tileQ < 1 || code.paddedHeads != sig.numQHeads ||
      code.extraEntries.empty() || code.extraEntries[0].rowsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the paged_decode code object for '" + sig.canonical() +
                      "' lacks its geometry or its reduce entry");
  if (args.batch < 0)
    return invalidArgument("batch must be >= 0" + got(args.batch));
  if (args.batch == 0) {
    empty = true;
    return Status::ok();
  }
  if (args.batch > args.maxBatch)
    return invalidArgument("batch (" + std::to_string(args.batch) +
                           ") exceeds max_batch (" +
                           std::to_string(args.maxBatch) +
                           "), the capacity of the plan's merge list (set by "
                           "DecodePlanner::bindPlan)");
  if (args.workCapacity < 1)
    return invalidArgument("work_capacity must be >= 1, the planner's" +
                           got(args.workCapacity));
  for (auto [name, given, kernel] :
       {std::tuple{"q_len", args.qLen, sig.qLen},
        std::tuple{"num_q_heads", args.numQHeads, sig.numQHeads},
        std::tuple{"num_kv_heads", args.numKVHeads, sig.numKVHeads}})
    if (given != kernel)
      return invalidArgument(std::string(name) + " (" +
                             std::to_string(given) +
                             ") must equal the kernel's (" +
                             std::to_string(kernel) + ")");
  if (args.blockTableStride < 1)
    return invalidArgument("block_table_stride must be > 0" +
                           got(args.blockTableStride));
  if (Status status = checkPlanSlots(args.planSlots); !status)
    return status;

  // A bias silently not applied is a wrong answer: slopes must match the
  // kernel's alibi flag both ways.
  if (sig.alibi && !args.alibiSlopes)
    return invalidArgument("alibi_slopes is null, but the kernel has alibi=1: "
                           "pass [num_q_heads] fp32 slopes");
  if (!sig.alibi && args.alibiSlopes)
    return invalidArgument("alibi_slopes is given, but the kernel has alibi=0 "
                           "and would ignore them: build it with alibi=1");

  const bool fp8Cache = sig.kvType == DType::FP8E4M3;
  float *lse = sig.returnLSE ? args.lse : nullptr;
  const char *kNeedsScale =
      ": an fp8 cache needs its per-tensor scale (device fp32)";
  if (Status status = checkDevicePointers(
          {{"q", args.q, 2, true},
           {"k_cache", args.kCache, 16, true},
           {"v_cache", args.vCache, 16, true},
           {"out", args.out, 16, true},
           {"lse", lse, 4, false},
           {"block_table", args.blockTable, 4, true},
           {"seq_lens", args.seqLens, 4, true},
           {"work", args.work, 16, true},
           {"num_work", args.numWork, 4, true},
           {"merge", args.merge, 8, true},
           {"partial_out", args.partialOut, 16, true},
           {"partial_lse", args.partialLse, 4, true},
           {"k_scale", fp8Cache ? args.kScale : nullptr, 4, fp8Cache,
            kNeedsScale},
           {"v_scale", fp8Cache ? args.vScale : nullptr, 4, fp8Cache,
            kNeedsScale},
           {"alibi_slopes", args.alibiSlopes, 4, false}},
          "loads");
      !status)
    return status;

  const int64_t hq = sig.numQHeads, hkv = sig.numKVHeads, d = sig.headDimV;
  const int64_t kvHead = args.kvHeadStride ? args.kvHeadStride : d;
  const int64_t kvToken = args.kvTokenStride ? args.kvTokenStride : hkv * kvHead;
  struct StrideArg {
    const char *name;
    int64_t given, contiguous;
    int multiple; // elements, so that the kernel's vectors stay aligned
  };
  // Cache rows are read in 16-byte vectors (8 bf16 or 16 fp8 elements);
  // out is written in 16-byte vectors; q is read by element.
  const int cacheMultiple = fp8Cache ? 16 : 8;
  const StrideArg strides[] = {
      {"q_batch_stride", args.qBatchStride, sig.qLen * hq * d, 1},
      {"q_token_stride", args.qTokenStride, hq * d, 1},
      {"q_head_stride", args.qHeadStride, d, 1},
      {"out_batch_stride", args.outBatchStride, sig.qLen * hq * d, 8},
      {"out_token_stride", args.outTokenStride, hq * d, 8},
      {"out_head_stride", args.outHeadStride, d, 8},
      {"kv_block_stride", args.kvBlockStride, sig.pageSize * kvToken,
       cacheMultiple},
      {"kv_token_stride", args.kvTokenStride, hkv * kvHead, cacheMultiple},
      {"kv_head_stride", args.kvHeadStride, d, cacheMultiple},
  };
  long long resolved[9];
  for (int i = 0; i < 9; ++i) {
    const StrideArg &s = strides[i];
    if (s.given < 0)
      return invalidArgument(std::string(s.name) +
                             " must be >= 0, 0 meaning contiguous" +
                             got(s.given));
    resolved[i] = s.given ? s.given : s.contiguous;
    if (resolved[i] % s.multiple != 0)
      return invalidArgument(std::string(s.name) + " must be a multiple of " +
                             std::to_string(s.multiple) +
                             " elements, so rows stay 16-byte aligned" +
                             got(resolved[i]));
  }
  if (!std::isfinite(args.softmaxScale) || args.softmaxScale <= 0.0f)
    return invalidArgument("softmax_scale must be finite and > 0 (Llama: "
                           "1/sqrt(head_dim)); got " +
                           std::to_string(args.softmaxScale));

  out.params = {args.q,          args.kCache,      args.vCache,
                args.out,        lse,              args.blockTable,
                args.seqLens,    args.work,        args.numWork,
                args.merge,      args.partialOut,  args.partialLse,
                fp8Cache ? args.kScale : nullptr,
                fp8Cache ? args.vScale : nullptr,
                args.alibiSlopes,
                resolved[0],     resolved[1],      resolved[2],
                resolved[3],     resolved[4],      resolved[5],
                resolved[6],     resolved[7],      resolved[8],
                args.blockTableStride,             args.batch,
                args.softmaxScale, 0};

  const int64_t rows = int64_t(sig.qLen) * sig.numQHeads;
  const KernelEntry &reduce = code.extraEntries[0];
  // One 1-d grid, the blocks of a work item adjacent (the kernel splits
  // blockIdx.x into item and kv head / row block).
  const int64_t blocksPerItem = ceilDiv(rows, code.tileQ);
  if (int64_t(args.workCapacity) * blocksPerItem > INT32_MAX)
    return invalidArgument("work_capacity " + std::to_string(args.workCapacity) +
                           " x " + std::to_string(blocksPerItem) +
                           " blocks per work item exceeds a grid (2^31 - 1)");
  out.decode.grid[0] = static_cast<unsigned>(args.workCapacity * blocksPerItem);
  out.decode.grid[1] = 1;
  out.decode.grid[2] = 1;
  out.decode.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.decode.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  out.reduce.grid[0] = static_cast<unsigned>(args.batch);
  out.reduce.grid[1] =
      static_cast<unsigned>(ceilDiv(rows, reduce.rowsPerBlock));
  out.reduce.grid[2] = 1;
  out.reduce.threadsPerBlock = static_cast<unsigned>(reduce.threadsPerBlock);
  out.reduce.sharedBytes = static_cast<unsigned>(reduce.sharedBytes);
  // Both kernels wait for the previous grid before touching memory, so
  // each may be scheduled while its predecessor finishes (sm_90).
  out.decode.earlyStart = true;
  out.reduce.earlyStart = true;
  return Status::ok();
}

} // namespace mlagen
