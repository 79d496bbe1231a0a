// MLA KV-cache write (vLLM's concat_and_cache_mla): the new tokens' latent
// kv (kv_c_normed) and rope key (k_pe) into one paged cache row each.
//
//   for token t with slot = slot_mapping[t] >= 0 (-1 skips a padded token):
//     cache[slot / kPageSize][slot % kPageSize][0, kLatentDim) = kv_c[t]
//     cache[slot / kPageSize][slot % kPageSize][kLatentDim, +kRopeDim) = k_pe[t]
//
// A 16-bit cache (kCacheFP8 false) has the inputs' type and takes them raw.
// An fp8 e4m3 cache stores fp8(x / *scale), rounded to nearest even and
// saturated at the largest finite value (OCP on NVIDIA and gfx950, FNUZ on
// gfx942), as vLLM quantises. slot_mapping is int32 or, with slot_mapping_64,
// int64 (what vLLM passes). Grid: x = ceil(tokens * (kLatentDim + kRopeDim)
// / 8 / kThreads); a thread moves 8 elements (16 input bytes).

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/KVCacheWriteLaunch.h. Strides are in elements
// (of the cache's type for the cache strides).
struct mlagen_kv_cache_write_params {
  const void *kv_c;         // [tokens, kLatentDim], token stride
  const void *k_pe;         // [tokens, kRopeDim], token stride
  void *kv_cache;           // [num_blocks, kPageSize, kLatentDim + kRopeDim]
  const void *slot_mapping; // [tokens] int32, or int64 with slot_mapping_64
  long long kv_c_token_stride, k_pe_token_stride;
  long long cache_block_stride, cache_token_stride;
  int num_tokens;
  int slot_mapping_64;
  const float *scale; // fp8 cache: [1], stored = x / *scale; else unused
};

namespace mlagen {
namespace kv_write {

using namespace mlagen_config;

static_assert(kLatentDim % 8 == 0 && kRopeDim % 8 == 0, "a thread moves 8 elements (16 input bytes)");
#if MLAGEN_ARCH_GFX90A
static_assert(!kCacheFP8, "gfx90a has no fp8 conversion instructions");
#endif
typedef select_type<kInputBF16, bf16, fp16>::type Elem;

struct alignas(16) Vec16 {
  u32 w[4];
};
struct alignas(8) Vec8 {
  u32 w[2];
};

// Eight 16-bit inputs -> eight fp8 bytes of x / scale, divided as vLLM
// does (a multiply by the reciprocal would round some values differently).
MLAGEN_DEVICE Vec8 quantise(const Vec16 &in, float scale) {
  Vec8 out;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float a, b, c, d;
    unpack2<Elem>(in.w[2 * i], a, b);
    unpack2<Elem>(in.w[2 * i + 1], c, d);
    out.w[i] = float2_to_fp8e4m3x2(a / scale, b / scale) | float2_to_fp8e4m3x2(c / scale, d / scale) << 16;
  }
  return out;
}

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
  const long long slot = p.slot_mapping_64 ? static_cast<const long long *>(p.slot_mapping)[token]
                                           : static_cast<const int *>(p.slot_mapping)[token];
  if (slot < 0)
    return;
  const u16 *src = column < kLatentDim
                       ? static_cast<const u16 *>(p.kv_c) + token * p.kv_c_token_stride + column
                       : static_cast<const u16 *>(p.k_pe) + token * p.k_pe_token_stride + (column - kLatentDim);
  const long long row = (slot / kPageSize) * p.cache_block_stride + (slot % kPageSize) * p.cache_token_stride + column;
  const Vec16 value = *reinterpret_cast<const Vec16 *>(src);
  if (kCacheFP8)
    *reinterpret_cast<Vec8 *>(static_cast<u8 *>(p.kv_cache) + row) = quantise(value, *p.scale);
  else
    *reinterpret_cast<Vec16 *>(static_cast<u16 *>(p.kv_cache) + row) = value;
}
