// mlagen prelude, NVIDIA part (sm_80, sm_90a): thread indexing, warp
// shuffles, fast math, and the inline-PTX tile primitives the kernels build
// on: mma.sync m16n8k16, ldmatrix and cp.async. NVRTC provides threadIdx,
// __syncthreads and __shfl_xor_sync without headers.

namespace mlagen {

MLAGEN_DEVICE int thread_index() { return (int)threadIdx.x; }
MLAGEN_DEVICE int block_index_x() { return (int)blockIdx.x; }
MLAGEN_DEVICE int block_index_y() { return (int)blockIdx.y; }
MLAGEN_DEVICE int block_index_z() { return (int)blockIdx.z; }
MLAGEN_DEVICE void block_barrier() { __syncthreads(); }

MLAGEN_DEVICE float shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

// exp2(-inf) = +0, which online softmax relies on.
MLAGEN_DEVICE float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
MLAGEN_DEVICE float log2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// tanh(x) = 1 - 2 / (e^(2x) + 1), as on CDNA. Not tanh.approx: its 2^-11
// relative error moves the logits of a soft cap of 30 by 0.015.
MLAGEN_DEVICE float tanh_approx(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(exp2_approx(2.0f * kLog2e * x) + 1.0f));
  return 1.0f - 2.0f * r;
}

// Two floats -> two 16-bit elements in one register, `lo` in the low half
// (the element order mma.sync fragments use). Round to nearest even.
template <class T>
MLAGEN_DEVICE u32 pack2(float lo, float hi);
template <>
MLAGEN_DEVICE u32 pack2<bf16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <>
MLAGEN_DEVICE u32 pack2<fp16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
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
  asm("{ .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h; }"
      : "=f"(lo), "=f"(hi) : "r"(packed));
}

// What pack2 rounded away, itself packed: pack2(lo, hi) plus this residue
// carries about 16 significant bits.
template <class T>
MLAGEN_DEVICE u32 rounding_residue(float lo, float hi, u32 packed) {
  float lo16, hi16;
  unpack2<T>(packed, lo16, hi16);
  return pack2<T>(lo - lo16, hi - hi16);
}

namespace nv {

MLAGEN_DEVICE u32 shared_address(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

// 16-byte global -> shared copy that bypasses L1. With `fill` false nothing
// is read and the destination is zero-filled (rows past the sequence end).
MLAGEN_DEVICE void cp_async_16(u32 dst, const void *src, bool fill) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(src), "r"(fill ? 16 : 0)
               : "memory");
}
MLAGEN_DEVICE void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are in flight.
template <int kPending>
MLAGEN_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Four 8x8 b16 matrices; lane i addresses row i % 8 of matrix i / 8, and
// register j receives lane's slice of matrix j (row lane / 4, columns
// 2 * (lane % 4) + {0, 1}; transposed with .trans). Volatile: shared memory
// changes between calls with the same address.
MLAGEN_DEVICE void ldmatrix_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
MLAGEN_DEVICE void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

// d += a * b for a 16x16 (row) by 16x8 (col) tile, fp32 accumulate.
// Fragments (g = lane / 4, t = lane % 4): a[0..3] = A[g][2t..], A[g+8][2t..],
// A[g][2t+8..], A[g+8][2t+8..]; b[0..1] = B[2t..][g], B[2t+8..][g];
// d[0..3] = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1].
template <class T>
MLAGEN_DEVICE void mma_16x8x16(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <>
MLAGEN_DEVICE void mma_16x8x16<bf16>(float (&d)[4], const u32 (&a)[4], u32 b0,
                                     u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
MLAGEN_DEVICE void mma_16x8x16<fp16>(float (&d)[4], const u32 (&a)[4], u32 b0,
                                     u32 b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

} // namespace nv
} // namespace mlagen
