// mlagen prelude, AMD CDNA part (gfx90a, gfx942, gfx950; wave64): thread
// indexing, wave shuffles, fast math and the MFMA wrapper. Only compiler
// builtins are used, so the same text compiles under hiprtc (which
// pre-includes the HIP runtime) and clang -x hip -nogpuinc (which has none).

#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(threads) \
  __attribute__((amdgpu_flat_work_group_size(1, threads)))
#endif

// A kernel's parameter block (bulk tensor copies are NVIDIA's).
#define MLAGEN_GRID_CONSTANT const

namespace mlagen {

typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef u32 u32x2 __attribute__((ext_vector_type(2)));
typedef u32 u32x4 __attribute__((ext_vector_type(4)));

MLAGEN_DEVICE int thread_index() { return (int)__builtin_amdgcn_workitem_id_x(); }
MLAGEN_DEVICE int block_index_x() { return (int)__builtin_amdgcn_workgroup_id_x(); }
MLAGEN_DEVICE int block_index_y() { return (int)__builtin_amdgcn_workgroup_id_y(); }
MLAGEN_DEVICE int block_index_z() { return (int)__builtin_amdgcn_workgroup_id_z(); }
// Blocks along x, from the dispatch packet (hsa_kernel_dispatch_packet_t:
// workgroup_size_x, a u16 at byte 4; grid_size_x in work-items, a u32 at
// byte 12).
MLAGEN_DEVICE int grid_size_x() {
  const unsigned char *packet = (const unsigned char *)__builtin_amdgcn_dispatch_ptr();
  const unsigned block = *(const unsigned short *)(packet + 4);
  const unsigned items = *(const unsigned *)(packet + 12);
  return (int)((items + block - 1) / block);
}
// Blocks along z (workgroup_size_z, a u16 at byte 8; grid_size_z, a u32 at
// byte 20).
MLAGEN_DEVICE int grid_size_z() {
  const unsigned char *packet = (const unsigned char *)__builtin_amdgcn_dispatch_ptr();
  const unsigned block = *(const unsigned short *)(packet + 8);
  const unsigned items = *(const unsigned *)(packet + 20);
  return (int)((items + block - 1) / block);
}
// Same value in every lane of the wave; lets the compiler keep it in an SGPR.
MLAGEN_DEVICE int wave_uniform(int v) { return __builtin_amdgcn_readfirstlane(v); }
MLAGEN_DEVICE int lane_index() {
  return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

// What HIP's __syncthreads does: LDS writes before the barrier are visible
// to every wave of the workgroup after it.
MLAGEN_DEVICE void block_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// NVIDIA's programmatic dependent launch has no CDNA counterpart: kernels
// start after the previous one has finished (prelude/nvidia.h).
MLAGEN_DEVICE void grid_dependency_wait() {}
MLAGEN_DEVICE void allow_next_kernel() {}

// Hand-over between blocks of one grid (prelude/nvidia.h): agent-scope
// fences write back and invalidate the caches that are not coherent across
// CUs (and, on gfx942, across XCDs), so plain loads after the acquiring
// fence see the other blocks' writes.
MLAGEN_DEVICE void fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
MLAGEN_DEVICE int atomic_add_device(int *counter, int value) {
  return __atomic_fetch_add(counter, value, __ATOMIC_RELAXED);
}
MLAGEN_DEVICE void load_l2_f32x4(const float *p, float &x, float &y, float &z, float &w) {
  const f32x4 v = *reinterpret_cast<const f32x4 *>(p);
  x = v.x;
  y = v.y;
  z = v.z;
  w = v.w;
}
MLAGEN_DEVICE float load_l2_f32(const float *p) { return *p; }

MLAGEN_DEVICE float shfl_xor(float v, int lane_mask) {
  int source = (lane_index() ^ lane_mask) << 2;
  return __builtin_bit_cast(
      float, __builtin_amdgcn_ds_bpermute(source, __builtin_bit_cast(int, v)));
}

// v_max_f32 (fused into v_max3_f32 where maxima chain) rather than a
// compare and a select: scores are never NaN (masked ones are -inf).
MLAGEN_DEVICE float max_float(float a, float b) { return __builtin_fmaxf(a, b); }

// The hardware instructions (v_exp_f32, v_log_f32) where the compiler names
// them; the generic builtins add denormal range reduction we do not need.
MLAGEN_DEVICE float exp2_approx(float x) {
#if __has_builtin(__builtin_amdgcn_exp2f)
  return __builtin_amdgcn_exp2f(x);
#else
  return __builtin_exp2f(x);
#endif
}
MLAGEN_DEVICE float log2_approx(float x) {
#if __has_builtin(__builtin_amdgcn_logf)
  return __builtin_amdgcn_logf(x);
#else
  return __builtin_log2f(x);
#endif
}
// a * b + c rounded once (v_fma_f32).
MLAGEN_DEVICE float fma_float(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
// tanh(x) = 1 - 2 / (e^(2x) + 1); saturates to +-1 through exp2 -> inf / 0.
MLAGEN_DEVICE float tanh_approx(float x) {
  return 1.0f - 2.0f * __builtin_amdgcn_rcpf(exp2_approx(2.0f * kLog2e * x) + 1.0f);
}

// Two floats -> two 16-bit elements in one register, `lo` in the low half.
// Round to nearest even.
template <class T>
MLAGEN_DEVICE u32 pack2(float lo, float hi);
template <>
MLAGEN_DEVICE u32 pack2<bf16>(float lo, float hi) {
#if defined(__gfx950__)
  typedef __bf16 bf16x2 __attribute__((ext_vector_type(2)));
  return __builtin_bit_cast(u32, __builtin_convertvector((f32x2){lo, hi}, bf16x2));
#else
  return bf16_bits_rne(lo) | (bf16_bits_rne(hi) << 16);
#endif
}
template <>
MLAGEN_DEVICE u32 pack2<fp16>(float lo, float hi) {
  typedef _Float16 f16x2 __attribute__((ext_vector_type(2)));
  return __builtin_bit_cast(u32, __builtin_convertvector((f32x2){lo, hi}, f16x2));
}

// The two 16-bit elements of `packed` as floats (exact).
template <class T>
MLAGEN_DEVICE void unpack2(u32 packed, float &lo, float &hi);
template <>
MLAGEN_DEVICE void unpack2<bf16>(u32 packed, float &lo, float &hi) {
  lo = __builtin_bit_cast(float, packed << 16);
  hi = __builtin_bit_cast(float, packed & 0xffff0000u);
}
template <>
MLAGEN_DEVICE void unpack2<fp16>(u32 packed, float &lo, float &hi) {
  typedef _Float16 f16x2 __attribute__((ext_vector_type(2)));
  const f32x2 v = __builtin_convertvector(__builtin_bit_cast(f16x2, packed), f32x2);
  lo = v.x;
  hi = v.y;
}

// What pack2 rounded away, itself packed: pack2(lo, hi) plus this residue
// carries about 16 significant bits.
template <class T>
MLAGEN_DEVICE u32 rounding_residue(float lo, float hi, u32 packed) {
  float lo16, hi16;
  unpack2<T>(packed, lo16, hi16);
  return pack2<T>(lo - lo16, hi - hi16);
}

MLAGEN_DEVICE u32 round_even_u32(float x) { return (u32)__builtin_rintf(x); }

// Two floats -> two fp8 e4m3 bytes in the arch's encoding (FNUZ on gfx942,
// OCP on gfx950), `lo` in byte 0: round to nearest even, clamped first to
// the largest finite value (240 or 448) so nothing overflows to NaN.
MLAGEN_DEVICE u32 float2_to_fp8e4m3x2(float lo, float hi) {
#if defined(__gfx942__) || defined(__gfx950__)
#if defined(__gfx942__)
  constexpr float kMax = 240.0f;
#else
  constexpr float kMax = 448.0f;
#endif
  lo = __builtin_fminf(__builtin_fmaxf(lo, -kMax), kMax);
  hi = __builtin_fminf(__builtin_fmaxf(hi, -kMax), kMax);
  return (u32)__builtin_amdgcn_cvt_pk_fp8_f32(lo, hi, 0, false) & 0xffffu;
#else
  return float_to_fp8e4m3_sw(lo, false) | float_to_fp8e4m3_sw(hi, false) << 8;
#endif
}

// Four fp8 e4m3 bytes -> four bf16, exactly (byte i -> element i): `lo`
// holds bytes 0 and 1, `hi` bytes 2 and 3. v_cvt_pk_f32_fp8 reads the
// arch's encoding: FNUZ (bias 8) on gfx942, OCP (bias 7) on gfx950. gfx90a
// has no fp8 conversion; the compiler refuses fp8 caches there, and this
// software OCP decode only keeps the text compiling.
MLAGEN_DEVICE void fp8e4m3x4_to_bf16(u32 v, u32 &lo, u32 &hi) {
#if defined(__gfx942__) || defined(__gfx950__)
  const f32x2 a = __builtin_amdgcn_cvt_pk_f32_fp8((int)v, false);
  const f32x2 b = __builtin_amdgcn_cvt_pk_f32_fp8((int)v, true);
  lo = pack2_bf16_exact(a.x, a.y);
  hi = pack2_bf16_exact(b.x, b.y);
#else
  lo = pack2_bf16_exact(fp8e4m3_to_float_sw(v & 0xffu), fp8e4m3_to_float_sw((v >> 8) & 0xffu));
  hi = pack2_bf16_exact(fp8e4m3_to_float_sw((v >> 16) & 0xffu), fp8e4m3_to_float_sw(v >> 24));
#endif
}

namespace cdna {

// Contraction depth of the 16x16 MFMA: gfx950 has double-depth bf16/f16
// instructions at twice the rate.
#if defined(__gfx950__)
constexpr int kMfmaK = 32;
#else
constexpr int kMfmaK = 16;
#endif
// Elements of the contraction each lane holds (A and B alike).
constexpr int kLaneK = kMfmaK / 4;
typedef u32 mfma_operand __attribute__((ext_vector_type(kLaneK / 2)));

// D (16x16) += A (16 x kMfmaK) * B (kMfmaK x 16), fp32 accumulate. Lane l
// holds A[l % 16][kLaneK * (l / 16) + i], B[kLaneK * (l / 16) + i][l % 16]
// (i < kLaneK) and D[4 * (l / 16) + i][l % 16] (i < 4). Any one-to-one
// relabelling of the contraction index used by both A and B gives the same D.
template <class T>
MLAGEN_DEVICE f32x4 mfma_16x16(mfma_operand a, mfma_operand b, f32x4 d);
// The 16-deep MFMA on every CDNA target (lane l holds 4 elements at
// 4 * (l / 16) + i): gfx950 runs a contraction tail of 16 with it.
template <class T>
MLAGEN_DEVICE f32x4 mfma_16x16x16(u32x2 a, u32x2 b, f32x4 d);
template <>
MLAGEN_DEVICE f32x4 mfma_16x16x16<bf16>(u32x2 a, u32x2 b, f32x4 d) {
  typedef short i16x4 __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(i16x4, a),
                                                   __builtin_bit_cast(i16x4, b), d, 0, 0, 0);
}
template <>
MLAGEN_DEVICE f32x4 mfma_16x16x16<fp16>(u32x2 a, u32x2 b, f32x4 d) {
  typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, a),
                                               __builtin_bit_cast(f16x4, b), d, 0, 0, 0);
}

#if defined(__gfx950__)
template <>
MLAGEN_DEVICE f32x4 mfma_16x16<bf16>(mfma_operand a, mfma_operand b, f32x4 d) {
  typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
  return __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(bf16x8, a),
                                                 __builtin_bit_cast(bf16x8, b), d, 0, 0, 0);
}
template <>
MLAGEN_DEVICE f32x4 mfma_16x16<fp16>(mfma_operand a, mfma_operand b, f32x4 d) {
  typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
  return __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(f16x8, a),
                                                __builtin_bit_cast(f16x8, b), d, 0, 0, 0);
}
#else
template <>
MLAGEN_DEVICE f32x4 mfma_16x16<bf16>(mfma_operand a, mfma_operand b, f32x4 d) {
  typedef short i16x4 __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(i16x4, a),
                                                   __builtin_bit_cast(i16x4, b), d, 0, 0, 0);
}
template <>
MLAGEN_DEVICE f32x4 mfma_16x16<fp16>(mfma_operand a, mfma_operand b, f32x4 d) {
  typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(f16x4, a),
                                               __builtin_bit_cast(f16x4, b), d, 0, 0, 0);
}
#endif

} // namespace cdna
} // namespace mlagen
