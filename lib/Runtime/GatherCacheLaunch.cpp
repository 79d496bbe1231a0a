//===- GatherCacheLaunch.cpp - check a GQA KV-cache gather ----------------===//
#include "GatherCacheLaunch.h"

#include <cstdint>
#include <string>
#include <tuple>

namespace mlagen {
namespace {

Status invalidArgument(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

// A stride as given, or (0) the contiguous one; >= 0 and a multiple of 8
// elements so every 8-element vector stays 16-byte (fp8: 8-byte) aligned.
Status resolveStride(const char *name, int64_t given, int64_t contiguous,
                     long long &out) {
  if (given < 0)
    return invalidArgument(std::string(name) +
                           " must be >= 0, 0 meaning contiguous (got " +
                           std::to_string(given) + ")");
  out = given ? given : contiguous;
  if (out % 8 != 0)
    return invalidArgument(std::string(name) +
                           " must be a multiple of 8 elements, so vectors "
                           "stay aligned (got " +
                           std::to_string(out) + ")");
  return Status::ok();
}

} // namespace

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
  if (fp8) {
    for (auto [name, part, scale] :
         {std::tuple{"k_scale", "key", args.kScale},
          std::tuple{"v_scale", "value", args.vScale}}) {
      if (!scale)
        return invalidArgument(std::string(name) + " is null: an fp8 cache "
                               "gives " + part + " = stored * " + name +
                               " (a device fp32 [1])");
      if (reinterpret_cast<uintptr_t>(scale) % 4 != 0)
        return invalidArgument(std::string(name) + " must be 4-byte aligned");
    }
  }
  // An fp8 cache gives 8 bytes per 8 elements.
  const unsigned cacheAlignment = fp8 ? 8u : 16u;
  const struct {
    const char *name;
    const void *ptr;
    unsigned alignment; // what the kernel moves it in
  } pointers[] = {
      {"k_cache", args.kCache, cacheAlignment},
      {"v_cache", args.vCache, cacheAlignment},
      {"out_k", args.outK, 16},
      {"out_v", args.outV, 16},
      {"slots", args.slots, args.slotsInt64 ? 8u : 4u},
  };
  for (const auto &p : pointers) {
    if (!p.ptr)
      return invalidArgument(std::string(p.name) + " is null");
    if (reinterpret_cast<uintptr_t>(p.ptr) % p.alignment != 0)
      return invalidArgument(std::string(p.name) + " must be " +
                             std::to_string(p.alignment) +
                             "-byte aligned (the kernel moves it in " +
                             std::to_string(p.alignment) + "-byte units)");
  }

  // 0 is contiguous given the stride inside it, innermost first: head =
  // head_dim, token = kv heads * head, block = page * token.
  GatherCacheParams &p = out.params;
  p = {};
  const int64_t headDim = sig.headDimV, heads = sig.numKVHeads,
                page = sig.pageSize;
  const struct {
    const char *name;
    int64_t given;
    const long long *inner; // null: the head stride, contiguous = headDim
    int64_t factor;
    long long *resolved;
  } strides[] = {
      {"out_k_head_stride", args.outKHeadStride, nullptr, headDim,
       &p.out_k_head_stride},
      {"out_k_token_stride", args.outKTokenStride, &p.out_k_head_stride,
       heads, &p.out_k_token_stride},
      {"out_v_head_stride", args.outVHeadStride, nullptr, headDim,
       &p.out_v_head_stride},
      {"out_v_token_stride", args.outVTokenStride, &p.out_v_head_stride,
       heads, &p.out_v_token_stride},
      {"k_cache_head_stride", args.kCacheHeadStride, nullptr, headDim,
       &p.k_cache_head_stride},
      {"k_cache_token_stride", args.kCacheTokenStride, &p.k_cache_head_stride,
       heads, &p.k_cache_token_stride},
      {"k_cache_block_stride", args.kCacheBlockStride,
       &p.k_cache_token_stride, page, &p.k_cache_block_stride},
      {"v_cache_head_stride", args.vCacheHeadStride, nullptr, headDim,
       &p.v_cache_head_stride},
      {"v_cache_token_stride", args.vCacheTokenStride, &p.v_cache_head_stride,
       heads, &p.v_cache_token_stride},
      {"v_cache_block_stride", args.vCacheBlockStride,
       &p.v_cache_token_stride, page, &p.v_cache_block_stride},
  };
  for (const auto &stride : strides) {
    const int64_t contiguous =
        stride.inner ? stride.factor * *stride.inner : stride.factor;
    if (Status status = resolveStride(stride.name, stride.given, contiguous,
                                      *stride.resolved);
        !status)
      return status;
  }

  // grid.x: CUDA's limit is 2^31 - 1 blocks.
  const int64_t vectorsPerToken = 2 * heads * (headDim / 8);
  const int64_t blocks =
      (int64_t(args.numTokens) * vectorsPerToken + code.threadsPerBlock - 1) /
      code.threadsPerBlock;
  if (blocks > INT32_MAX)
    return invalidArgument("num_tokens (" + std::to_string(args.numTokens) +
                           ") needs " + std::to_string(blocks) +
                           " blocks, more than a grid holds (2^31 - 1): "
                           "split the gather");
  p.k_cache = args.kCache;
  p.v_cache = args.vCache;
  p.out_k = args.outK;
  p.out_v = args.outV;
  p.slots = args.slots;
  p.k_scale = fp8 ? args.kScale : nullptr;
  p.v_scale = fp8 ? args.vScale : nullptr;
  p.num_tokens = args.numTokens;
  p.slots_64 = args.slotsInt64 ? 1 : 0;
  out.geometry.grid[0] = static_cast<unsigned>(blocks);
  out.geometry.grid[1] = 1;
  out.geometry.grid[2] = 1;
  out.geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

} // namespace mlagen
