// GQA KV-cache write (vLLM's reshape_and_cache_flash, NHD layout): the new
// tokens' keys and values into two paged caches.
//
//   for token t with slot = slot_mapping[t] >= 0 (-1 skips a padded token),
//   for head h < kNumKVHeads:
//     k_cache[slot / kPageSize][slot % kPageSize][h][0, kHeadDim) = key[t][h]
//     v_cache[slot / kPageSize][slot % kPageSize][h][0, kHeadDim) = value[t][h]
//
// A 16-bit cache (kCacheFP8 false) has the inputs' type and takes them raw.
// An fp8 e4m3 cache stores fp8(x / *k_scale) for keys and fp8(x / *v_scale)
// for values, rounded to nearest even and saturated at the largest finite
// value (OCP on NVIDIA and gfx950, FNUZ on gfx942), as vLLM quantises.
// slot_mapping is int32 or, with slot_mapping_64, int64 (what vLLM passes).
// Grid: x = ceil(tokens * 2 * kNumKVHeads * kHeadDim / 8 / kThreads); a
// thread moves 8 elements (16 input bytes) of one key or value head.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/ReshapeAndCacheLaunch.h. Strides are in elements
// (of the cache's type for the cache strides).
struct mlagen_reshape_and_cache_params {
  const void *key;          // [tokens, kNumKVHeads, kHeadDim], strided
  const void *value;        // [tokens, kNumKVHeads, kHeadDim], strided
  void *k_cache;            // [num_blocks, kPageSize, kNumKVHeads, kHeadDim]
  void *v_cache;            // same shape, its own strides
  const void *slot_mapping; // [tokens] int32, or int64 with slot_mapping_64
  const float *k_scale;     // fp8 cache: [1], stored = key / *k_scale
  const float *v_scale;     // fp8 cache: [1], stored = value / *v_scale
  long long key_token_stride, key_head_stride;
  long long value_token_stride, value_head_stride;
  long long k_cache_block_stride, k_cache_token_stride, k_cache_head_stride;
  long long v_cache_block_stride, v_cache_token_stride, v_cache_head_stride;
  int num_tokens;
  int slot_mapping_64;
};

namespace mlagen {
namespace reshape_cache {

using namespace mlagen_config;

static_assert(kHeadDim % 8 == 0, "a thread moves 8 elements (16 input bytes)");
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

} // namespace reshape_cache
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_reshape_and_cache(mlagen_reshape_and_cache_params p) {
  using namespace mlagen;
  using namespace mlagen::reshape_cache;
  constexpr int kHeadVectors = kHeadDim / 8;
  // One token's keys, then its values: consecutive threads write
  // consecutive 16-byte vectors of one cache row.
  constexpr int kPartVectors = kNumKVHeads * kHeadVectors;
  const long long index = (long long)block_index_x() * kThreads + thread_index();
  if (index >= (long long)p.num_tokens * (2 * kPartVectors))
    return;
  const long long token = index / (2 * kPartVectors);
  const int inToken = (int)(index % (2 * kPartVectors));
  const bool isValue = inToken >= kPartVectors;
  const int inPart = isValue ? inToken - kPartVectors : inToken;
  const int head = inPart / kHeadVectors;
  const int column = (inPart % kHeadVectors) * 8;
  const long long slot = p.slot_mapping_64 ? static_cast<const long long *>(p.slot_mapping)[token]
                                           : static_cast<const int *>(p.slot_mapping)[token];
  if (slot < 0)
    return;
  const long long block = slot / kPageSize, offset = slot % kPageSize;
  const u16 *src = isValue ? static_cast<const u16 *>(p.value) + token * p.value_token_stride +
                                 head * p.value_head_stride + column
                           : static_cast<const u16 *>(p.key) + token * p.key_token_stride +
                                 head * p.key_head_stride + column;
  const long long dst = isValue ? block * p.v_cache_block_stride + offset * p.v_cache_token_stride +
                                      head * p.v_cache_head_stride + column
                                : block * p.k_cache_block_stride + offset * p.k_cache_token_stride +
                                      head * p.k_cache_head_stride + column;
  void *cache = isValue ? p.v_cache : p.k_cache;
  const Vec16 value = *reinterpret_cast<const Vec16 *>(src);
  if (kCacheFP8)
    *reinterpret_cast<Vec8 *>(static_cast<u8 *>(cache) + dst) = quantise(value, *(isValue ? p.v_scale : p.k_scale));
  else
    *reinterpret_cast<Vec16 *>(static_cast<u16 *>(cache) + dst) = value;
}
