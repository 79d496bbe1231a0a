// GQA KV-cache gather (vLLM's gather_and_maybe_dequant_cache, NHD layout):
// tokens of two paged caches into two dense tensors, so that a request's
// context can be attended to in chunks by the varlen prefill kernel.
//
//   for flat token i with slot = slots[i], for head h < kNumKVHeads:
//     out_k[i][h][0, kHeadDim) = dequant(k_cache[slot / kPageSize][slot % kPageSize][h])
//     out_v[i][h][0, kHeadDim) = dequant(v_cache[slot / kPageSize][slot % kPageSize][h])
//   slot -1 (a padded token) writes zeros.
//
// A 16-bit cache (kCacheFP8 false) has the outputs' type and is copied bit
// for bit. An fp8 e4m3 cache (OCP on NVIDIA and gfx950, FNUZ on gfx942)
// gives float(e4m3) * *k_scale for keys and * *v_scale for values, rounded
// to the output type, as vLLM dequantises. slots is int32 (what
// expand_page_indices writes) or, with slots_64, int64.
// Grid: x = ceil(tokens * 2 * kNumKVHeads * kHeadDim / 8 / kThreads); a
// thread moves 8 elements (16 output bytes) of one key or value head.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/GatherCacheLaunch.h. Strides are in elements
// (of the cache's type for the cache strides).
struct mlagen_gather_cache_params {
  const void *k_cache;  // [num_blocks, kPageSize, kNumKVHeads, kHeadDim]
  const void *v_cache;  // same shape, its own strides
  void *out_k;          // [tokens, kNumKVHeads, kHeadDim], strided
  void *out_v;          // [tokens, kNumKVHeads, kHeadDim], strided
  const void *slots;    // [tokens] int32, or int64 with slots_64
  const float *k_scale; // fp8 cache: [1], key = float(stored) * *k_scale
  const float *v_scale; // fp8 cache: [1], value = float(stored) * *v_scale
  long long out_k_token_stride, out_k_head_stride;
  long long out_v_token_stride, out_v_head_stride;
  long long k_cache_block_stride, k_cache_token_stride, k_cache_head_stride;
  long long v_cache_block_stride, v_cache_token_stride, v_cache_head_stride;
  int num_tokens;
  int slots_64;
};

namespace mlagen {
namespace gather_cache {

using namespace mlagen_config;

static_assert(kHeadDim % 8 == 0, "a thread moves 8 elements (16 output bytes)");
#if MLAGEN_ARCH_GFX90A
static_assert(!kCacheFP8, "gfx90a has no fp8 conversion instructions");
#endif
typedef select_type<kOutputBF16, bf16, fp16>::type Elem;

struct alignas(16) Vec16 {
  u32 w[4];
};
struct alignas(8) Vec8 {
  u32 w[2];
};

// Eight fp8 bytes -> eight outputs of float(e4m3) * scale. The prelude
// decodes fp8 exactly into a 16-bit type (fp16 on NVIDIA, bf16 on CDNA),
// so the only rounding is the final one, as in vLLM's scaled_convert.
MLAGEN_DEVICE Vec16 dequantise(const Vec8 &in, float scale) {
#if MLAGEN_TARGET_NVIDIA
  typedef fp16 Exact;
#else
  typedef bf16 Exact;
#endif
  Vec16 out;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    u32 lo, hi;
#if MLAGEN_TARGET_NVIDIA
    fp8e4m3x4_to_f16(in.w[i], lo, hi);
#else
    fp8e4m3x4_to_bf16(in.w[i], lo, hi);
#endif
    float a, b, c, d;
    unpack2<Exact>(lo, a, b);
    unpack2<Exact>(hi, c, d);
    out.w[2 * i] = pack2<Elem>(a * scale, b * scale);
    out.w[2 * i + 1] = pack2<Elem>(c * scale, d * scale);
  }
  return out;
}

} // namespace gather_cache
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_gather_cache(mlagen_gather_cache_params p) {
  using namespace mlagen;
  using namespace mlagen::gather_cache;
  constexpr int kHeadVectors = kHeadDim / 8;
  // One token's keys, then its values: consecutive threads write
  // consecutive 16-byte vectors of one output row.
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
  const long long slot = p.slots_64 ? static_cast<const long long *>(p.slots)[token]
                                    : static_cast<const int *>(p.slots)[token];
  u16 *dst = isValue ? static_cast<u16 *>(p.out_v) + token * p.out_v_token_stride +
                           head * p.out_v_head_stride + column
                     : static_cast<u16 *>(p.out_k) + token * p.out_k_token_stride +
                           head * p.out_k_head_stride + column;
  Vec16 value = {{0u, 0u, 0u, 0u}};
  if (slot >= 0) {
    const long long block = slot / kPageSize, offset = slot % kPageSize;
    const long long src = isValue ? block * p.v_cache_block_stride + offset * p.v_cache_token_stride +
                                        head * p.v_cache_head_stride + column
                                  : block * p.k_cache_block_stride + offset * p.k_cache_token_stride +
                                        head * p.k_cache_head_stride + column;
    const void *cache = isValue ? p.v_cache : p.k_cache;
    if (kCacheFP8)
      value = dequantise(*reinterpret_cast<const Vec8 *>(static_cast<const u8 *>(cache) + src),
                         *(isValue ? p.v_scale : p.k_scale));
    else
      value = *reinterpret_cast<const Vec16 *>(static_cast<const u16 *>(cache) + src);
  }
  *reinterpret_cast<Vec16 *>(dst) = value;
}
