//===- GatherCacheLaunch.h - check a GQA KV-cache gather -------*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_GATHERCACHELAUNCH_H
#define MLAGEN_LIB_RUNTIME_GATHERCACHELAUNCH_H

#include "DeviceBackend.h"

#include <cstddef>

namespace mlagen {

// Host mirror of mlagen_gather_cache_params
// (templates/kernels/gather_cache.hip), passed by value.
struct GatherCacheParams {
  const void *k_cache;
  const void *v_cache;
  void *out_k;
  void *out_v;
  const void *slots;
  const float *k_scale;
  const float *v_scale;
  long long out_k_token_stride, out_k_head_stride;
  long long out_v_token_stride, out_v_head_stride;
  long long k_cache_block_stride, k_cache_token_stride, k_cache_head_stride;
  long long v_cache_block_stride, v_cache_token_stride, v_cache_head_stride;
  int num_tokens;
  int slots_64;
};

static_assert(offsetof(GatherCacheParams, k_scale) == 40);
static_assert(offsetof(GatherCacheParams, out_k_token_stride) == 56);
static_assert(offsetof(GatherCacheParams, k_cache_block_stride) == 88);
static_assert(offsetof(GatherCacheParams, v_cache_head_stride) == 128);
static_assert(offsetof(GatherCacheParams, num_tokens) == 136);
static_assert(offsetof(GatherCacheParams, slots_64) == 140);
static_assert(sizeof(GatherCacheParams) == 144);

struct GatherCacheLaunch {
  GatherCacheParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the kernel built for `sig` as `code` and fills
// `out`; InvalidArgument names the argument. 0 tokens sets `empty`.
Status prepareGatherCacheLaunch(const Signature &sig, const CodeObject &code,
                                const GatherCacheArgs &args,
                                GatherCacheLaunch &out, bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_GATHERCACHELAUNCH_H
