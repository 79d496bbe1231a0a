//===- ReshapeAndCacheLaunch.h - check a GQA KV-cache write ----*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_RESHAPEANDCACHELAUNCH_H
#define MLAGEN_LIB_RUNTIME_RESHAPEANDCACHELAUNCH_H

#include "DeviceBackend.h"

#include <cstddef>

namespace mlagen {

// Host mirror of mlagen_reshape_and_cache_params
// (templates/kernels/reshape_and_cache.hip), passed by value.
struct ReshapeAndCacheParams {
  const void *key;
  const void *value;
  void *k_cache;
  void *v_cache;
  const void *slot_mapping;
  const float *k_scale;
  const float *v_scale;
  long long key_token_stride, key_head_stride;
  long long value_token_stride, value_head_stride;
  long long k_cache_block_stride, k_cache_token_stride, k_cache_head_stride;
  long long v_cache_block_stride, v_cache_token_stride, v_cache_head_stride;
  int num_tokens;
  int slot_mapping_64;
};

static_assert(offsetof(ReshapeAndCacheParams, k_scale) == 40);
static_assert(offsetof(ReshapeAndCacheParams, key_token_stride) == 56);
static_assert(offsetof(ReshapeAndCacheParams, k_cache_block_stride) == 88);
static_assert(offsetof(ReshapeAndCacheParams, v_cache_head_stride) == 128);
static_assert(offsetof(ReshapeAndCacheParams, num_tokens) == 136);
static_assert(offsetof(ReshapeAndCacheParams, slot_mapping_64) == 140);
static_assert(sizeof(ReshapeAndCacheParams) == 144);

struct ReshapeAndCacheLaunch {
  ReshapeAndCacheParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the kernel built for `sig` as `code` and fills
// `out`; InvalidArgument names the argument. 0 tokens sets `empty`.
Status prepareReshapeAndCacheLaunch(const Signature &sig,
                                    const CodeObject &code,
                                    const ReshapeAndCacheArgs &args,
                                    ReshapeAndCacheLaunch &out, bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_RESHAPEANDCACHELAUNCH_H
