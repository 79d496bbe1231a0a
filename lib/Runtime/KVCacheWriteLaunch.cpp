//===- KVCacheWriteLaunch.cpp - check an MLA KV-cache write ---------------===//
#include "KVCacheWriteLaunch.h"
#include "LaunchChecks.h"

#include <cstdint>
#include <string>

namespace mlagen {

Status prepareKVCacheWriteLaunch(const Signature &sig, const CodeObject &code,
                                 const KVCacheWriteArgs &args,
                                 KVCacheWriteLaunch &out, bool &empty) {
  empty = false;
  if (sig.op != OpKind::KVCacheWrite)
    return invalidArgument(
        std::string("runKVCacheWrite needs a kv_cache_write kernel, not ") +
        opKindName(sig.op));
  if (code.threadsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the kv_cache_write code object for '" + sig.canonical() +
                      "' lacks its block size");
  if (args.numTokens < 0)
    return invalidArgument("num_tokens must be >= 0 (got " +
                           std::to_string(args.numTokens) + ")");
  if (args.numTokens == 0) {
    empty = true;
    return Status::ok();
  }
  const bool fp8 = sig.kvType == DType::FP8E4M3;
  if (fp8 && !args.scale)
    return invalidArgument("scale is null: an fp8 cache stores x / scale "
                           "(a device fp32 [1])");
  if (fp8 && reinterpret_cast<uintptr_t>(args.scale) % 4 != 0)
    return invalidArgument("scale must be 4-byte aligned");
  if (Status status = checkDevicePointers(
          {{"kv_c", args.kvC, 16},
           {"k_pe", args.kPe, 16},
           // An fp8 cache takes 8 bytes per 8 elements.
           {"kv_cache", args.kvCache, fp8 ? 8u : 16u},
           {"slot_mapping", args.slotMapping, args.slotMappingInt64 ? 8u : 4u}},
          "moves");
      !status)
    return status;
  const int64_t row = sig.headDimQK, latent = sig.headDimV;
  const int64_t cacheToken =
      args.cacheTokenStride ? args.cacheTokenStride : row;
  long long resolved[4];
  if (Status status = resolveStrides(
          {
              {"kv_c_token_stride", args.kvCTokenStride, latent},
              {"k_pe_token_stride", args.kPeTokenStride, row - latent},
              {"cache_block_stride", args.cacheBlockStride,
               int64_t(sig.pageSize) * cacheToken},
              {"cache_token_stride", args.cacheTokenStride, row},
          },
          resolved);
      !status)
    return status;
  if (resolved[3] < row)
    return invalidArgument("cache_token_stride must be >= the row of " +
                           std::to_string(row) + " elements (got " +
                           std::to_string(resolved[3]) + ")");

  const int64_t blocks = (int64_t(args.numTokens) * (row / 8) +
                          code.threadsPerBlock - 1) /
                         code.threadsPerBlock;
  out.params = {args.kvC,
                args.kPe,
                args.kvCache,
                args.slotMapping,
                resolved[0],
                resolved[1],
                resolved[2],
                resolved[3],
                args.numTokens,
                args.slotMappingInt64 ? 1 : 0,
                fp8 ? args.scale : nullptr};
  out.geometry.grid[0] = static_cast<unsigned>(blocks);
  out.geometry.grid[1] = 1;
  out.geometry.grid[2] = 1;
  out.geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

} // namespace mlagen
