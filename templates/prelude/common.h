// mlagen prelude, target-neutral part: storage types, constants and small
// helpers shared by every kernel. The emitted source has no #include, so this
// uses only language features and attribute spellings that NVRTC, hiprtc
// (ROCm 5.2, C++14 by default) and clang -x hip -nogpuinc all accept.

// `__attribute__((device))` is what `__device__` expands to under both CUDA
// and HIP, and needs no header on either.
#define MLAGEN_DEVICE __attribute__((device)) inline __attribute__((always_inline))
// For compile-time helpers that also size arrays at namespace scope.
#define MLAGEN_CONSTEXPR __attribute__((host)) __attribute__((device)) constexpr

namespace mlagen {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

// 16-bit element types. Kernels never compute on them: they move raw bits
// into matrix-core operands and convert float results back.
struct bf16 {
  u16 bits;
};
struct fp16 {
  u16 bits;
};

template <bool kCondition, class T, class F>
struct select_type {
  typedef T type;
};
template <class T, class F>
struct select_type<false, T, F> {
  typedef F type;
};

constexpr float kNegInf = __builtin_bit_cast(float, 0xff800000u);
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;

MLAGEN_CONSTEXPR int ceil_div(int a, int b) { return (a + b - 1) / b; }
MLAGEN_CONSTEXPR int min_int(int a, int b) { return a < b ? a : b; }
MLAGEN_CONSTEXPR int max_int(int a, int b) { return a > b ? a : b; }
// max_float(a, b): in the target preludes.

MLAGEN_DEVICE u32 float_bits(float x) { return __builtin_bit_cast(u32, x); }

// float -> bf16 with round-to-nearest-even, for targets without a conversion
// instruction. A NaN stays a (quiet) NaN instead of rounding into infinity.
MLAGEN_DEVICE u32 bf16_bits_rne(float x) {
  u32 bits = float_bits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (bits >> 16) | 0x40u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

// fp8 e4m3 (OCP, bias 7) -> float, exact, for targets without a conversion
// instruction. Subnormals are m * 2^-9; the NaN encoding (0x7f/0xff) is not
// special-cased (it reads as +-480): a quantised cache holds none.
MLAGEN_DEVICE float fp8e4m3_to_float_sw(u32 byte) {
  const u32 e = (byte >> 3) & 15u, m = byte & 7u;
  const float magnitude = e ? __builtin_bit_cast(float, ((e + 120u) << 23) | (m << 20)) : (float)m * 0.001953125f;
  return __builtin_bit_cast(float, float_bits(magnitude) | ((byte & 0x80u) << 24));
}

// Rounds x >= 0 to the nearest integer, ties to even (the target's own
// instruction; defined by nvidia.h and cdna.h).
MLAGEN_DEVICE u32 round_even_u32(float x);

// float -> fp8 e4m3 byte for targets without a conversion instruction:
// round to nearest even, saturating at the largest finite value (vLLM's
// SATFINITE; NaN saturates too). OCP: bias 7, max 448. FNUZ (`fnuz`): bias
// 8, max 240, and no negative zero (0x80 is its NaN).
MLAGEN_DEVICE u32 float_to_fp8e4m3_sw(float x, bool fnuz) {
  const u32 sign = (float_bits(x) >> 24) & 0x80u;
  const float max = fnuz ? 240.0f : 448.0f;
  float a = __builtin_bit_cast(float, float_bits(x) & 0x7fffffffu);
  a = a < max ? a : max;
  const u32 bias = fnuz ? 8u : 7u;
  u32 code;
  if (a < (fnuz ? 0.0078125f : 0.015625f)) {
    // Subnormal: steps of 2^(-bias-2); 8 steps is the smallest normal's code.
    code = round_even_u32(a * (fnuz ? 1024.0f : 512.0f));
  } else {
    const u32 exponent = ((float_bits(a) >> 23) & 0xffu) - 127u + bias;
    const float mantissa = __builtin_bit_cast(float, (float_bits(a) & 0x007fffffu) | 0x3f800000u);
    // A mantissa that rounds up to 8 carries into the exponent.
    code = exponent * 8u + round_even_u32((mantissa - 1.0f) * 8.0f);
  }
  return fnuz && code == 0u ? 0u : code | sign;
}

// Two floats that are exact in bf16 (dequantised fp8) -> two bf16, `lo` in
// the low half: a truncation, no rounding needed.
MLAGEN_DEVICE u32 pack2_bf16_exact(float lo, float hi) {
  return (float_bits(lo) >> 16) | (float_bits(hi) & 0xffff0000u);
}

} // namespace mlagen
