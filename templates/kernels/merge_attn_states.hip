// Merges two partial attention results by their log-sum-exp (vLLM's
// merge_attn_states): the output of attention over a key set that was split
// in two, e.g. a paged context and the new tokens of a chunked prefill.
//
//   m = max(lse_p, lse_s), w_p = e^(lse_p - m), w_s = e^(lse_s - m)
//   out = (w_p o_p + w_s o_s) / (w_p + w_s), out_lse = m + log(w_p + w_s)
//
// An infinite LSE (a part that saw no key; +inf is taken as -inf, as vLLM
// does) weighs 0 and its output is never read into the result, so a NaN
// or garbage there does not leak; both empty give zeros and -inf.
//
// Layouts: o_p, o_s, out [tokens, kNumHeads, kHeadDim] with token and head
// strides (elements, multiples of 8); lse [kNumHeads, tokens] with a head
// stride (mla prefill's layout). Grid: x = ceil(tokens * kNumHeads *
// kHeadDim / 8 / kThreads); a thread moves one 16-byte vector of each.

@@MLAGEN_CONFIG@@

@@MLAGEN_PRELUDE@@

// Host mirror: lib/Runtime/MergeAttnStatesParams.h. Strides are in elements.
struct mlagen_merge_attn_states_params {
  const void *prefix_out;
  const float *prefix_lse;
  const void *suffix_out;
  const float *suffix_lse;
  void *out;
  float *out_lse; // null: not written
  long long prefix_token_stride, prefix_head_stride;
  long long suffix_token_stride, suffix_head_stride;
  long long out_token_stride, out_head_stride;
  long long prefix_lse_head_stride, suffix_lse_head_stride, out_lse_head_stride;
  int num_tokens;
  int reserved;
};

namespace mlagen {
namespace merge {

using namespace mlagen_config;

typedef select_type<kOutputBF16, bf16, fp16>::type Elem;

static_assert(kHeadDim % 8 == 0, "a thread moves 8 elements (16 bytes)");
static_assert(kThreads >= 32 && kThreads <= 1024, "kThreads in [32, 1024]");

struct alignas(16) Vec16 {
  u32 w[4];
};

// A part's LSE with every infinity as -inf (no key seen).
MLAGEN_DEVICE float finite_or_empty(float lse) {
  return (float_bits(lse) & 0x7fffffffu) == 0x7f800000u ? kNegInf : lse;
}

} // namespace merge
} // namespace mlagen

extern "C" __global__ void __launch_bounds__(mlagen_config::kThreads)
    mlagen_merge_attn_states(mlagen_merge_attn_states_params p) {
  using namespace mlagen;
  using namespace mlagen::merge;
  constexpr int kVectors = kHeadDim / 8;
  const long long index = (long long)block_index_x() * kThreads + thread_index();
  if (index >= (long long)p.num_tokens * kNumHeads * kVectors)
    return;
  const int vector = (int)(index % kVectors);
  const long long token_head = index / kVectors;
  const int head = (int)(token_head % kNumHeads);
  const long long token = token_head / kNumHeads;

  const float lse_p = finite_or_empty(p.prefix_lse[head * p.prefix_lse_head_stride + token]);
  const float lse_s = finite_or_empty(p.suffix_lse[head * p.suffix_lse_head_stride + token]);
  const float m = max_float(lse_p, lse_s);
  // exp2 of -inf is 0: an empty part weighs nothing.
  const float w_p = m == kNegInf ? 0.0f : exp2_approx((lse_p - m) * kLog2e);
  const float w_s = m == kNegInf ? 0.0f : exp2_approx((lse_s - m) * kLog2e);
  const float total = w_p + w_s;
  const float scale_p = total > 0.0f ? w_p / total : 0.0f;
  const float scale_s = total > 0.0f ? w_s / total : 0.0f;

  float merged[8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
    merged[i] = 0.0f;
  // Only a part with weight is read: an empty part's rows may hold anything.
  if (scale_p > 0.0f) {
    const Vec16 v = *reinterpret_cast<const Vec16 *>(
        static_cast<const u16 *>(p.prefix_out) + token * p.prefix_token_stride + head * p.prefix_head_stride + vector * 8);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      unpack2<Elem>(v.w[i], lo, hi);
      merged[2 * i] += scale_p * lo;
      merged[2 * i + 1] += scale_p * hi;
    }
  }
  if (scale_s > 0.0f) {
    const Vec16 v = *reinterpret_cast<const Vec16 *>(
        static_cast<const u16 *>(p.suffix_out) + token * p.suffix_token_stride + head * p.suffix_head_stride + vector * 8);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo, hi;
      unpack2<Elem>(v.w[i], lo, hi);
      merged[2 * i] += scale_s * lo;
      merged[2 * i + 1] += scale_s * hi;
    }
  }
  Vec16 result;
#pragma unroll
  for (int i = 0; i < 4; ++i)
    result.w[i] = pack2<Elem>(merged[2 * i], merged[2 * i + 1]);
  *reinterpret_cast<Vec16 *>(static_cast<u16 *>(p.out) + token * p.out_token_stride + head * p.out_head_stride + vector * 8) = result;

  if (kReturnLSE && p.out_lse && vector == 0)
    p.out_lse[head * p.out_lse_head_stride + token] = total > 0.0f ? m + log2_approx(total) * kLn2 : kNegInf;
}
