//===- GQACacheChecks.cpp - checks both GQA cache ops share ---------------===//
#include "GQACacheChecks.h"

#include <cstdint>
#include <string>
#include <tuple>

namespace mlagen {
namespace {

// A stride as given, or (0) the contiguous one; >= 0 and a multiple of 8
// elements so every 8-element vector stays 16-byte (fp8: 8-byte) aligned.
Status resolveStride(const std::string &name, int64_t given, int64_t contiguous,
                     long long &out) {
  if (given < 0)
    return invalidArgument(name + " must be >= 0, 0 meaning contiguous (got " +
                           std::to_string(given) + ")");
  out = given ? given : contiguous;
  if (out % 8 != 0)
    return invalidArgument(name +
                           " must be a multiple of 8 elements, so vectors "
                           "stay aligned (got " +
                           std::to_string(out) + ")");
  return Status::ok();
}

} // namespace

Status checkCacheScales(const float *kScale, const float *vScale,
                        bool dequantise) {
  for (auto [name, part, scale] : {std::tuple{"k_scale", "key", kScale},
                                   std::tuple{"v_scale", "value", vScale}}) {
    if (!scale)
      return invalidArgument(
          std::string(name) + " is null: an fp8 cache " +
          (dequantise ? std::string("gives ") + part + " = stored * " + name
                      : std::string("stores ") + part + " / " + name) +
          " (a device fp32 [1])");
    if (reinterpret_cast<uintptr_t>(scale) % 4 != 0)
      return invalidArgument(std::string(name) + " must be 4-byte aligned");
  }
  return Status::ok();
}

Status resolveTokenStrides(const char *name, int64_t givenToken,
                           int64_t givenHead, const Signature &sig,
                           long long &token, long long &head) {
  const std::string prefix = name;
  if (Status status =
          resolveStride(prefix + "_head_stride", givenHead, sig.headDimV, head);
      !status)
    return status;
  return resolveStride(prefix + "_token_stride", givenToken,
                       int64_t(sig.numKVHeads) * head, token);
}

Status resolveCacheStrides(const char *name, int64_t givenBlock,
                           int64_t givenToken, int64_t givenHead,
                           const Signature &sig, long long &block,
                           long long &token, long long &head) {
  if (Status status =
          resolveTokenStrides(name, givenToken, givenHead, sig, token, head);
      !status)
    return status;
  return resolveStride(std::string(name) + "_block_stride", givenBlock,
                       int64_t(sig.pageSize) * token, block);
}

Status cacheCopyGeometry(int numTokens, const Signature &sig,
                         const CodeObject &code, const char *what,
                         LaunchGeometry &out) {
  // grid.x: CUDA's limit is 2^31 - 1 blocks.
  const int64_t vectorsPerToken =
      2 * int64_t(sig.numKVHeads) * (sig.headDimV / 8);
  const int64_t blocks =
      (int64_t(numTokens) * vectorsPerToken + code.threadsPerBlock - 1) /
      code.threadsPerBlock;
  if (blocks > INT32_MAX)
    return invalidArgument("num_tokens (" + std::to_string(numTokens) +
                           ") needs " + std::to_string(blocks) +
                           " blocks, more than a grid holds (2^31 - 1): "
                           "split the " +
                           what);
  out.grid[0] = static_cast<unsigned>(blocks);
  out.grid[1] = 1;
  out.grid[2] = 1;
  out.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

} // namespace mlagen
