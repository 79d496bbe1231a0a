//===- GatherCacheLaunch.cpp - check a GQA KV-cache gather ----------------===//
#include "GatherCacheLaunch.h"
#include "GQACacheChecks.h"

#include <string>

namespace mlagen {

Status prepareGatherCacheLaunch(const Signature &sig, const CodeObject &code,
                                const GatherCacheArgs &args,
                                GatherCacheLaunch &out, bool &empty) {
  empty = false;
  if (sig.op != OpKind::GatherCache)
    return invalidArgument(
        std::string("runGatherCache needs a gather_cache kernel, not ") +
        opKindName(sig.op));
  if (code.threadsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the gather_cache code object for '" + sig.canonical() +
                      "' lacks its block size");
  if (args.numTokens < 0)
    return invalidArgument("num_tokens must be >= 0 (got " +
                           std::to_string(args.numTokens) + ")");
  if (args.numTokens == 0) {
    empty = true;
    return Status::ok();
  }
  const bool fp8 = sig.kvType == DType::FP8E4M3;
  if (fp8)
    if (Status status = checkCacheScales(args.kScale, args.vScale,
                                         /*dequantise=*/true);
        !status)
      return status;
  // An fp8 cache gives 8 bytes per 8 elements.
  const unsigned cacheAlignment = fp8 ? 8u : 16u;
  if (Status status = checkDevicePointers(
          {{"k_cache", args.kCache, cacheAlignment},
           {"v_cache", args.vCache, cacheAlignment},
           {"out_k", args.outK, 16},
           {"out_v", args.outV, 16},
           {"slots", args.slots, args.slotsInt64 ? 8u : 4u}},
          "moves");
      !status)
    return status;

  GatherCacheParams &p = out.params;
  p = {};
  // Each resolved in order; the first failure is the one reported.
  for (Status status :
       {resolveTokenStrides("out_k", args.outKTokenStride, args.outKHeadStride,
                            sig, p.out_k_token_stride, p.out_k_head_stride),
        resolveTokenStrides("out_v", args.outVTokenStride, args.outVHeadStride,
                            sig, p.out_v_token_stride, p.out_v_head_stride),
        resolveCacheStrides("k_cache", args.kCacheBlockStride,
                            args.kCacheTokenStride, args.kCacheHeadStride, sig,
                            p.k_cache_block_stride, p.k_cache_token_stride,
                            p.k_cache_head_stride),
        resolveCacheStrides("v_cache", args.vCacheBlockStride,
                            args.vCacheTokenStride, args.vCacheHeadStride, sig,
                            p.v_cache_block_stride, p.v_cache_token_stride,
                            p.v_cache_head_stride),
        cacheCopyGeometry(args.numTokens, sig, code, "gather", out.geometry)})
    if (!status)
      return status;
  p.k_cache = args.kCache;
  p.v_cache = args.vCache;
  p.out_k = args.outK;
  p.out_v = args.outV;
  p.slots = args.slots;
  p.k_scale = fp8 ? args.kScale : nullptr;
  p.v_scale = fp8 ? args.vScale : nullptr;
  p.num_tokens = args.numTokens;
  p.slots_64 = args.slotsInt64 ? 1 : 0;
  return Status::ok();
}

} // namespace mlagen
