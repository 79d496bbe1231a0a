//===- ReshapeAndCacheLaunch.cpp - check a GQA KV-cache write -------------===//
#include "ReshapeAndCacheLaunch.h"
#include "GQACacheChecks.h"

#include <string>

namespace mlagen {

Status prepareReshapeAndCacheLaunch(const Signature &sig,
                                    const CodeObject &code,
                                    const ReshapeAndCacheArgs &args,
                                    ReshapeAndCacheLaunch &out, bool &empty) {
  empty = false;
  if (sig.op != OpKind::ReshapeAndCache)
    return invalidArgument(
        std::string("runReshapeAndCache needs a reshape_and_cache kernel, "
                    "not ") +
        opKindName(sig.op));
  if (code.threadsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the reshape_and_cache code object for '" + sig.canonical() +
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
                                         /*dequantise=*/false);
        !status)
      return status;
  // An fp8 cache takes 8 bytes per 8 elements.
  const unsigned cacheAlignment = fp8 ? 8u : 16u;
  if (Status status = checkDevicePointers(
          {{"key", args.key, 16},
           {"value", args.value, 16},
           {"k_cache", args.kCache, cacheAlignment},
           {"v_cache", args.vCache, cacheAlignment},
           {"slot_mapping", args.slotMapping, args.slotMappingInt64 ? 8u : 4u}},
          "moves");
      !status)
    return status;

  ReshapeAndCacheParams &p = out.params;
  p = {};
  // Each resolved in order; the first failure is the one reported.
  for (Status status :
       {resolveTokenStrides("key", args.keyTokenStride, args.keyHeadStride,
                            sig, p.key_token_stride, p.key_head_stride),
        resolveTokenStrides("value", args.valueTokenStride,
                            args.valueHeadStride, sig, p.value_token_stride,
                            p.value_head_stride),
        resolveCacheStrides("k_cache", args.kCacheBlockStride,
                            args.kCacheTokenStride, args.kCacheHeadStride, sig,
                            p.k_cache_block_stride, p.k_cache_token_stride,
                            p.k_cache_head_stride),
        resolveCacheStrides("v_cache", args.vCacheBlockStride,
                            args.vCacheTokenStride, args.vCacheHeadStride, sig,
                            p.v_cache_block_stride, p.v_cache_token_stride,
                            p.v_cache_head_stride),
        cacheCopyGeometry(args.numTokens, sig, code, "write", out.geometry)})
    if (!status)
      return status;
  p.key = args.key;
  p.value = args.value;
  p.k_cache = args.kCache;
  p.v_cache = args.vCache;
  p.slot_mapping = args.slotMapping;
  p.k_scale = fp8 ? args.kScale : nullptr;
  p.v_scale = fp8 ? args.vScale : nullptr;
  p.num_tokens = args.numTokens;
  p.slot_mapping_64 = args.slotMappingInt64 ? 1 : 0;
  return Status::ok();
}

} // namespace mlagen
