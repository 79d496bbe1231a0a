//===- DecodeLaunch.cpp - check a decode step and lay out its launches ----===//
//
// Everything a host can get wrong is checked here, before anything reaches
// the device. What lives only in device memory (seq_lens against the pages
// of the block table, page ids against the cache) is checked by the kernel
// in checked mode (DecodeArgs::checked), which records the first violation
// in error_flags; checkDecodeErrors turns a host copy of those into a Status.
//
//===----------------------------------------------------------------------===//

#include "DecodeLaunch.h"
#include "LaunchChecks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace mlagen {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// planWork: -1 (unknown) or the plan's work items, which give each of the
// batch's requests one at least and fit the work list.
Status checkPlanWork(int planWork, int batch, int workCapacity) {
  if (planWork == -1 || (planWork >= batch && planWork <= workCapacity))
    return Status::ok();
  return invalidArgument(
      "plan_work must be the plan's work items, in [batch = " +
      std::to_string(batch) + ", work capacity = " +
      std::to_string(workCapacity) + "] (a plan gives every request one), "
      "or -1 for unknown (got " + std::to_string(planWork) + ")");
}

} // namespace

Status prepareDecodeLaunch(const Signature &sig, const CodeObject &code,
                           const DecodeArgs &args, DecodeLaunch &out,
                           bool &empty) {
  empty = false;
  if (sig.op != OpKind::Decode)
    return invalidArgument(
        std::string("runDecode needs a decode kernel, not ") +
        opKindName(sig.op));
  if (code.tileQ < 1 || code.paddedHeads < sig.numQHeads ||
      code.extraEntries.empty() || code.extraEntries[0].rowsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the decode code object for '" + sig.canonical() +
                      "' lacks its geometry or its reduce entry");
  if (args.batch < 0)
    return invalidArgument("batch must be >= 0 (got " +
                           std::to_string(args.batch) + ")");
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
    return invalidArgument("work_capacity must be >= 1, the planner's (got " +
                           std::to_string(args.workCapacity) + ")");
  if (args.clusterBlocks != 1 &&
      (args.clusterBlocks < 1 || args.clusterBlocks > code.clusterParts ||
       args.workCapacity % args.clusterBlocks != 0))
    return invalidArgument(
        "cluster_blocks (" + std::to_string(args.clusterBlocks) +
        ") must be 1, or at most the kernel's cluster parts (" +
        std::to_string(code.clusterParts) + ") and divide work_capacity (" +
        std::to_string(args.workCapacity) +
        "): set both with DecodePlanner::bindPlan");
  if (args.qLen != sig.qLen)
    return invalidArgument("q_len (" + std::to_string(args.qLen) +
                           ") must equal the kernel's (" +
                           std::to_string(sig.qLen) + ")");
  if (args.numQHeads != sig.numQHeads)
    return invalidArgument("num_q_heads (" + std::to_string(args.numQHeads) +
                           ") must equal the kernel's (" +
                           std::to_string(sig.numQHeads) + ")");
  if (args.blockTableStride < 1)
    return invalidArgument("block_table_stride must be > 0 (got " +
                           std::to_string(args.blockTableStride) + ")");
  if (args.workSlack < -1)
    return invalidArgument("work_slack must be >= 0, or -1 for unbounded (got " +
                           std::to_string(args.workSlack) +
                           "): set it with DecodePlanner::bindPlan");
  if (Status status = checkPlanSlots(args.planSlots); !status)
    return status;
  if (Status status =
          checkPlanWork(args.planWork, args.batch, args.workCapacity);
      !status)
    return status;
  if (!args.mergeArrivals)
    return invalidArgument("merge_arrivals is null: bind the device plan with "
                           "DecodePlanner::bindPlan, which points it into "
                           "the plan");
  if (args.planGroups < -1)
    return invalidArgument("plan_groups must be >= 0, or -1 for unknown (got " +
                           std::to_string(args.planGroups) + ")");

  int maxPages = 0;
  if (args.checked) {
    if (!args.errorFlags)
      return invalidArgument("checked decode needs error_flags (" +
                             std::to_string(kDecodeErrorFlagInts) +
                             " zeroed device ints)");
    if (reinterpret_cast<uintptr_t>(args.errorFlags) % 4 != 0)
      return invalidArgument("error_flags must be 4-byte aligned");
    if (args.numBlocks < 1 || args.numBlocks > INT32_MAX)
      return invalidArgument("checked decode needs num_blocks, the pages in "
                             "the cache, in [1, 2^31) (got " +
                             std::to_string(args.numBlocks) + ")");
    if (args.maxPages < 0 || args.maxPages > args.blockTableStride)
      return invalidArgument("max_pages must be in [0, block_table_stride " +
                             std::to_string(args.blockTableStride) +
                             "], 0 meaning block_table_stride (got " +
                             std::to_string(args.maxPages) + ")");
    maxPages = args.maxPages ? args.maxPages : args.blockTableStride;
  }

  float *lse = sig.returnLSE ? args.lse : nullptr;
  if (Status status = checkDevicePointers(
          {{"q", args.q, 16, true},
           {"kv_cache", args.kvCache, 16, true},
           {"out", args.out, 16, true},
           {"lse", lse, 4, false},
           {"block_table", args.blockTable, 4, true},
           {"seq_lens", args.seqLens, 4, true},
           {"work", args.work, 16, true},
           {"num_work", args.numWork, 4, true},
           {"merge", args.merge, 8, true},
           {"partial_out", args.partialOut, 16, true},
           {"partial_lse", args.partialLse, 4, true}},
          "loads");
      !status)
    return status;

  const int64_t hq = sig.numQHeads, dqk = sig.headDimQK, dv = sig.headDimV;
  const int64_t kvToken = args.kvTokenStride ? args.kvTokenStride : dqk;
  long long resolved[8];
  if (Status status = resolveStrides(
          {
              {"q_batch_stride", args.qBatchStride, sig.qLen * hq * dqk},
              {"q_token_stride", args.qTokenStride, hq * dqk},
              {"q_head_stride", args.qHeadStride, dqk},
              {"out_batch_stride", args.outBatchStride, sig.qLen * hq * dv},
              {"out_token_stride", args.outTokenStride, hq * dv},
              {"out_head_stride", args.outHeadStride, dv},
              {"kv_block_stride", args.kvBlockStride, sig.pageSize * kvToken},
              {"kv_token_stride", args.kvTokenStride, dqk},
          },
          resolved);
      !status)
    return status;
  // fp8 cache rows are read 16 one-byte elements at a time.
  for (auto [name, stride] : {std::pair{"kv_block_stride", resolved[6]},
                              std::pair{"kv_token_stride", resolved[7]}})
    if (sig.kvType == DType::FP8E4M3 && stride % 16 != 0)
      return invalidArgument(std::string(name) +
                             " must be a multiple of 16 elements for an fp8 "
                             "cache, so rows stay 16-byte aligned (got " +
                             std::to_string(stride) + ")");
  const bool fp8Cache = sig.kvType == DType::FP8E4M3;
  if (fp8Cache && (!std::isfinite(args.kvScale) || args.kvScale <= 0.0f))
    return invalidArgument("kv_scale must be finite and > 0 for an fp8 cache "
                           "(got " + std::to_string(args.kvScale) + ")");
  const bool fp8Query = sig.qType == DType::FP8E4M3;
  if (fp8Query && (!std::isfinite(args.qScale) || args.qScale <= 0.0f))
    return invalidArgument("q_scale must be finite and > 0 for fp8 q (got " +
                           std::to_string(args.qScale) + ")");
  if (!std::isfinite(args.softmaxScale) || args.softmaxScale <= 0.0f)
    return invalidArgument(
        "softmax_scale must be finite and > 0: absorbed MLA scales by the "
        "unabsorbed head dim (DeepSeek-V3: 1/sqrt(192)), so there is no "
        "default");

  out.params = {args.q,
                args.kvCache,
                args.out,
                lse,
                args.blockTable,
                args.seqLens,
                args.work,
                args.numWork,
                args.merge,
                args.partialOut,
                args.partialLse,
                resolved[0],
                resolved[1],
                resolved[2],
                resolved[3],
                resolved[4],
                resolved[5],
                resolved[6],
                resolved[7],
                args.blockTableStride,
                args.batch,
                // q only scales the logits: its scale joins softmax_scale.
                fp8Query ? args.softmaxScale * args.qScale : args.softmaxScale,
                fp8Cache ? args.kvScale : 1.0f,
                args.checked ? args.errorFlags : nullptr,
                args.checked ? static_cast<int>(args.numBlocks) : 0,
                maxPages};
  out.params.merge_arrivals = args.mergeArrivals;

  const int64_t rows = int64_t(sig.qLen) * code.paddedHeads;
  const KernelEntry &reduce = code.extraEntries[0];
  // No plan of this batch holds more than batch + workSlack items, so the
  // blocks past them (which would only exit) are not launched, even in a
  // captured graph: its replays keep the batch.
  int64_t items = args.workCapacity;
  if (args.workSlack >= 0)
    items = std::min(items, ceilDiv(int64_t(args.batch) + args.workSlack,
                                    args.clusterBlocks) *
                                args.clusterBlocks);
  out.decode.grid[0] = static_cast<unsigned>(items);
  out.decode.grid[1] = static_cast<unsigned>(ceilDiv(rows, code.tileQ));
  out.decode.grid[2] = 1;
  out.decode.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.decode.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  out.decode.clusterX = static_cast<unsigned>(args.clusterBlocks);
  out.reduce.grid[0] = static_cast<unsigned>(args.batch);
  out.reduce.grid[1] =
      static_cast<unsigned>(ceilDiv(rows, reduce.rowsPerBlock));
  // Few requests (and so few reduce blocks) of many slots each: split the
  // columns over grid z and the slots of a column over more threads, so
  // their partials stream on more SMs (the kernel's sums do not depend on
  // the split). Aims at about two blocks an SM on the largest parts.
  constexpr int64_t kReduceTargetBlocks = 256;
  const int64_t reduceBlocks = int64_t(args.batch) * out.reduce.grid[1];
  unsigned split = 1;
  while (split < 8 && reduceBlocks * split * 2 <= kReduceTargetBlocks)
    split *= 2;
  out.reduce.grid[2] = split;
  out.reduce.threadsPerBlock = static_cast<unsigned>(reduce.threadsPerBlock);
  out.reduce.sharedBytes = static_cast<unsigned>(reduce.sharedBytes);
  // Both kernels wait for the previous grid before touching memory, so
  // each may be scheduled while its predecessor finishes (sm_90).
  out.decode.earlyStart = true;
  out.reduce.earlyStart = true;
  return Status::ok();
}

bool describeCacheTensorMap(const Signature &sig, const CodeObject &code,
                            const DecodeArgs &args, const DecodeLaunch &launch,
                            TensorMapRequest &request) {
  constexpr int kTile = 64;
  if (sig.arch != Arch::SM90A || code.tileQ != 64 || code.tileK != kTile ||
      sig.pageSize != kTile || sig.headDimQK % kTile != 0)
    return false;
  const DecodeParams &p = launch.params;
  request.base = p.kv_cache;
  // Unchecked launches do not say how many pages the cache holds: the map
  // then covers 2^31 of them (the kernel reads only pages of the table).
  // An fp8 cache is mapped as 16-bit pairs of its bytes: the kernel copies
  // raw bytes and widens them itself.
  const int64_t pages = args.checked ? args.numBlocks : (int64_t(1) << 31);
  const unsigned long long elemBytes = sig.kvType == DType::FP8E4M3 ? 1 : 2;
  request.sizes[0] = static_cast<unsigned long long>(sig.headDimQK) * elemBytes / 2;
  request.sizes[1] = kTile;
  request.sizes[2] = static_cast<unsigned long long>(pages);
  request.strides[0] = static_cast<unsigned long long>(p.kv_token_stride) * elemBytes;
  request.strides[1] = static_cast<unsigned long long>(p.kv_block_stride) * elemBytes;
  request.box[0] = kTile; // 128 bytes: the swizzle's span
  request.box[1] = kTile;
  request.box[2] = 1;
  return true;
}

Status checkDecodeErrors(const int *flags) {
  if (!flags)
    return invalidArgument("checkDecodeErrors: flags is null");
  const int code = flags[0];
  if (code == 0)
    return Status::ok();
  const std::string request = "request " + std::to_string(flags[1]) + ": ";
  const int64_t pageSize = flags[6] > 0 ? flags[6] : 1;
  if (code == kDecodeErrorSeqLen) {
    const int64_t seqLen = flags[2];
    if (seqLen < 0)
      return invalidArgument(request + "seq_len " + std::to_string(seqLen) +
                             " is negative");
    return invalidArgument(
        request + "seq_len " + std::to_string(seqLen) + " needs " +
        std::to_string(ceilDiv(seqLen, pageSize)) + " pages of " +
        std::to_string(pageSize) + " keys, block table has " +
        std::to_string(flags[4]));
  }
  if (code == kDecodeErrorPage)
    return invalidArgument(request + "block table entry " +
                           std::to_string(flags[2]) + " (page " +
                           std::to_string(flags[3]) +
                           ") is outside the cache (" +
                           std::to_string(flags[5]) + " blocks)");
  return Status(StatusCode::Internal,
                "decode error flags hold an unknown code " +
                    std::to_string(code));
}

} // namespace mlagen
