//===- KVCacheWriteLaunch.h - check an MLA KV-cache write ------*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_KVCACHEWRITELAUNCH_H
#define MLAGEN_LIB_RUNTIME_KVCACHEWRITELAUNCH_H

#include "DeviceBackend.h"

#include <cstddef>

namespace mlagen {

// Host mirror of mlagen_kv_cache_write_params
// (templates/kernels/kv_cache_write.hip), passed by value.
struct KVCacheWriteParams {
  const void *kv_c;
  const void *k_pe;
  void *kv_cache;
  const void *slot_mapping;
  long long kv_c_token_stride, k_pe_token_stride;
  long long cache_block_stride, cache_token_stride;
  int num_tokens;
  int slot_mapping_64;
  const float *scale;
};

static_assert(offsetof(KVCacheWriteParams, kv_c_token_stride) == 32);
static_assert(offsetof(KVCacheWriteParams, num_tokens) == 64);
static_assert(offsetof(KVCacheWriteParams, slot_mapping_64) == 68);
static_assert(offsetof(KVCacheWriteParams, scale) == 72);
static_assert(sizeof(KVCacheWriteParams) == 80);

struct KVCacheWriteLaunch {
  KVCacheWriteParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the kernel built for `sig` as `code` and fills
// `out`; InvalidArgument names the argument. 0 tokens sets `empty`.
Status prepareKVCacheWriteLaunch(const Signature &sig, const CodeObject &code,
                                 const KVCacheWriteArgs &args,
                                 KVCacheWriteLaunch &out, bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_KVCACHEWRITELAUNCH_H
