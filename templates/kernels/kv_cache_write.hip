// MLA KV-cache write (vLLM's concat_and_cache_mla): the new tokens' latent
// kv (kv_c_normed) and rope key (k_pe) into one paged cache row each.
//
//   for token t with slot = slot_mapping[t] >= 0 (-1 skips a padded token):
//     cache[slot / kPageSize][slot % kPageSize][0, kLatentDim) = kv_c[t]
//     cache[slot / kPageSize][slot % kPageSize][kLatentDim, +kRopeDim) = k_pe[t]
//
// 16-bit elements, moved raw (bf16 or fp16 alike); an fp8 cache with a scale
// comes later. Grid: x = ceil(tokens * (kLatentDim + kRopeDim) / 8 /
// kThreads); a thread moves one 16-byte vector.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/KVCacheWriteLaunch.h. Strides are in elements.
struct mlagen_kv_cache_write_params {
  const void *kv_c;        // [tokens, kLatentDim], token stride
  const void *k_pe;        // [tokens, kRopeDim], token stride
  void *kv_cache;          // [num_blocks, kPageSize, kLatentDim + kRopeDim]
  const int *slot_mapping; // [tokens]
  long long kv_c_token_stride, k_pe_token_stride;
  long long cache_block_stride, cache_token_stride;
  int num_tokens;
  int reserved;
};

namespace mlagen {
namespace kv_write {

using namespace mlagen_config;

static_assert(kLatentDim % 8 == 0 && kRopeDim % 8 == 0, "a thread moves 8 elements (16 bytes)");

struct alignas(16) Vec16 {
  u32 w[4];
};

} // namespace kv_write
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_kv_cache_write(mlagen_kv_cache_write_params p) {
  using namespace mlagen;
  using namespace mlagen::kv_write;
  constexpr int kVectors = (kLatentDim + kRopeDim) / 8;
  const long long index = (long long)block_index_x() * kThreads + thread_index();
  if (index >= (long long)p.num_tokens * kVectors)
    return;
  const long long token = index / kVectors;
  const int column = (int)(index % kVectors) * 8;
  const int slot = p.slot_mapping[token];
  if (slot < 0)
    return;
  const u16 *src = column < kLatentDim
                       ? static_cast<const u16 *>(p.kv_c) + token * p.kv_c_token_stride + column
                       : static_cast<const u16 *>(p.k_pe) + token * p.k_pe_token_stride + (column - kLatentDim);
  u16 *dst = static_cast<u16 *>(p.kv_cache) + (long long)(slot / kPageSize) * p.cache_block_stride +
             (long long)(slot % kPageSize) * p.cache_token_stride + column;
  *reinterpret_cast<Vec16 *>(dst) = *reinterpret_cast<const Vec16 *>(src);
}
