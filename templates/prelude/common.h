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
MLAGEN_DEVICE float max_float(float a, float b) { return a > b ? a : b; }

MLAGEN_DEVICE u32 float_bits(float x) { return __builtin_bit_cast(u32, x); }

// float -> bf16 with round-to-nearest-even, for targets without a conversion
// instruction. A NaN stays a (quiet) NaN instead of rounding into infinity.
MLAGEN_DEVICE u32 bf16_bits_rne(float x) {
  u32 bits = float_bits(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return (bits >> 16) | 0x40u;
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

} // namespace mlagen
