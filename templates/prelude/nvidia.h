// mlagen prelude, NVIDIA part (the sm_80 and sm_90a kernel families; the
// sm_80 ones compile for sm_80 or for a later device's own target): thread
// indexing, warp shuffles, fast math, and the inline-PTX tile primitives the
// kernels build on: mma.sync m16n8k16, ldmatrix and cp.async. NVRTC
// provides threadIdx, __syncthreads and __shfl_xor_sync without headers.

// A kernel's parameter block, read in place on sm_90a (__grid_constant__):
// bulk tensor copies take their tensor maps from parameter space.
#if MLAGEN_ARCH_SM90A
#define MLAGEN_GRID_CONSTANT const __grid_constant__
#else
#define MLAGEN_GRID_CONSTANT const
#endif

namespace mlagen {

MLAGEN_DEVICE int thread_index() { return (int)threadIdx.x; }
MLAGEN_DEVICE int block_index_x() { return (int)blockIdx.x; }
MLAGEN_DEVICE int block_index_y() { return (int)blockIdx.y; }
MLAGEN_DEVICE int block_index_z() { return (int)blockIdx.z; }
MLAGEN_DEVICE int grid_size_x() { return (int)gridDim.x; }
MLAGEN_DEVICE int grid_size_z() { return (int)gridDim.z; }
MLAGEN_DEVICE void block_barrier() { __syncthreads(); }
// Programmatic dependent launch (sm_90; the runtime's early-start launches):
// a kernel's blocks may start while the previous kernel in the stream still
// runs. grid_dependency_wait() returns once that kernel has finished and its
// writes are visible, so it comes before any global memory access;
// allow_next_kernel() lets the next early-start kernel's blocks be scheduled
// (they wait in turn). Both are no-ops on a normal launch and before sm_90.
// Keyed on the SASS target, not the kernel family: the runtime launches
// early on every device from 9.0 on, where the portable sm_80 kernels are
// compiled for sm_90 and later too.
MLAGEN_DEVICE void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
MLAGEN_DEVICE void allow_next_kernel() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Orders the shared-memory accesses of one warp's lanes (cp.async data
// included, once each lane has waited for its own copies).
MLAGEN_DEVICE void warp_barrier() { __syncwarp(); }

// Hand-over between blocks of one grid (decode's pairs merged in the
// grid): a block's global writes, a fence, then an arrival on a counter;
// the block that arrives last fences again and reads what the others wrote
// from L2 (.cg: past L1, which is not coherent across SMs).
MLAGEN_DEVICE void fence_device() { __threadfence(); }
MLAGEN_DEVICE int atomic_add_device(int *counter, int value) { return atomicAdd(counter, value); }
MLAGEN_DEVICE void load_l2_f32x4(const float *p, float &x, float &y, float &z, float &w) {
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(x), "=f"(y), "=f"(z), "=f"(w) : "l"(p));
}
MLAGEN_DEVICE float load_l2_f32(const float *p) {
  float x;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(x) : "l"(p));
  return x;
}

MLAGEN_DEVICE float shfl_xor(float v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}
MLAGEN_DEVICE bool all_lanes(bool predicate) { return __all_sync(0xffffffffu, predicate); }

// One max.f32 (FMNMX) rather than a compare and a select: the softmax
// maxima run it on every score. Scores are never NaN (masked ones are
// -inf), where the two would differ.
MLAGEN_DEVICE float max_float(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
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
// a * b + c rounded once, whatever the compiler's contraction setting.
MLAGEN_DEVICE float fma_float(float a, float b, float c) {
  float y;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(a), "f"(b), "f"(c));
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

MLAGEN_DEVICE u32 round_even_u32(float x) { return __float2uint_rn(x); }

// Two floats -> two fp8 e4m3 (OCP) bytes, `lo` in byte 0: round to nearest
// even, saturating at +-448 (cvt.rn.satfinite puts its first source in the
// upper byte). The cvt needs sm_89: keyed on the SASS target, so that the
// portable sm_80 kernels use it where they are compiled for a later GPU.
MLAGEN_DEVICE u32 float2_to_fp8e4m3x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 890
  unsigned short packed;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  return float_to_fp8e4m3_sw(lo, false) | float_to_fp8e4m3_sw(hi, false) << 8;
#endif
}

// Four fp8 e4m3 (OCP) bytes -> four fp16, exactly (byte i -> element i):
// one cvt.rn.f16x2.e4m3x2 per pair from sm_89 on (the SASS target, as
// above). The decode kernel multiplies fp8 tiles as fp16 on NVIDIA: half
// the conversion work of bf16.
MLAGEN_DEVICE void fp8e4m3x4_to_f16(u32 v, u32 &lo, u32 &hi) {
#if __CUDA_ARCH__ >= 890
  asm("{ .reg .b16 a, b;\n mov.b32 {a, b}, %2;\n cvt.rn.f16x2.e4m3x2 %0, a;\n cvt.rn.f16x2.e4m3x2 %1, b; }"
      : "=r"(lo), "=r"(hi) : "r"(v));
#else
  lo = pack2<fp16>(fp8e4m3_to_float_sw(v & 0xffu), fp8e4m3_to_float_sw((v >> 8) & 0xffu));
  hi = pack2<fp16>(fp8e4m3_to_float_sw((v >> 16) & 0xffu), fp8e4m3_to_float_sw(v >> 24));
#endif
}

namespace nv {

MLAGEN_DEVICE u32 shared_address(const void *p) {
  return (u32)__cvta_generic_to_shared(p);
}

MLAGEN_DEVICE void store_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// 16 bytes from shared memory to global memory (through registers).
MLAGEN_DEVICE void copy_shared_to_global_16(void *dst, u32 src) {
  asm volatile("{ .reg .b32 a, b, c, d;\n"
               " ld.shared.v4.b32 {a, b, c, d}, [%1];\n"
               " st.global.v4.b32 [%0], {a, b, c, d}; }" ::"l"(dst),
               "r"(src)
               : "memory");
}

// Asks L2 for the 128-byte line at `p`, holding no register.
MLAGEN_DEVICE void prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// 16-byte global -> shared copy that bypasses L1. With `fill` false nothing
// is read and the destination is zero-filled (rows past the sequence end).
MLAGEN_DEVICE void cp_async_16(u32 dst, const void *src, bool fill) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(src), "r"(fill ? 16 : 0)
               : "memory");
}
// The same for 8 bytes (through L1: cp.async.cg takes 16 only), for rows
// that are only 8-byte aligned.
MLAGEN_DEVICE void cp_async_8(u32 dst, const void *src, bool fill) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst),
               "l"(src), "r"(fill ? 8 : 0)
               : "memory");
}
// The same, asking L2 to fetch the whole 128-byte line around `src` (rows
// read whole by neighbouring threads: streamed caches). On the H200 a
// stream of 256-byte rows ran 3.5% faster with this hint than with none or
// L2::256B (4.40 vs 4.25 TB/s).
MLAGEN_DEVICE void cp_async_16_l2_128(u32 dst, const void *src, bool fill) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;" ::"r"(dst),
               "l"(src), "r"(fill ? 16 : 0)
               : "memory");
}
// L2 policy for data read once, such as a KV cache streamed by decode: its
// lines are evicted first, so the stream does not push out what other
// kernels keep in L2.
MLAGEN_DEVICE unsigned long long l2_evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// How a copy stream treats L2: evict-first, or plain copies (the kernels
// choose per work item; an explicit evict_normal policy measured slower
// than none on the H200).
struct L2Stream {
  bool evict_first;
  unsigned long long policy;
};
MLAGEN_DEVICE L2Stream l2_stream(bool evict_first) { return {evict_first, l2_evict_first_policy()}; }
// cp_async_16_l2_128 under `stream`'s L2 treatment.
MLAGEN_DEVICE void cp_async_16_l2_128(u32 dst, const void *src, bool fill, const L2Stream &stream) {
  if (stream.evict_first)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], 16, %2, %3;" ::"r"(dst),
                 "l"(src), "r"(fill ? 16 : 0), "l"(stream.policy)
                 : "memory");
  else
    cp_async_16_l2_128(dst, src, fill);
}
// A 16-byte global load under an L2 policy.
MLAGEN_DEVICE void load_global_16(u32 (&v)[4], const void *src, unsigned long long policy) {
  asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
      : "l"(src), "l"(policy));
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
// Two matrices (lanes 0-15 give the addresses).
MLAGEN_DEVICE void ldmatrix_x2(u32 (&r)[2], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}
MLAGEN_DEVICE void ldmatrix_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

// One 8x8 b16 matrix held in registers as ldmatrix holds it (lane l: row
// l / 4, columns 2 (l % 4), + 1), transposed: lane l gets column l / 4,
// rows 2 (l % 4), + 1. Turns a C fragment (packed) into a B fragment.
MLAGEN_DEVICE u32 movmatrix_trans(u32 x) {
  u32 r;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
  return r;
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

#if MLAGEN_ARCH_SM90A
// sm_90a only: warpgroup MMA (wgmma), mbarriers, named barriers and register
// reallocation, for warp-specialised kernels (a producer warpgroup feeding
// consumer warpgroups through shared memory).
namespace sm90 {

typedef unsigned long long u64;

MLAGEN_DEVICE void mbarrier_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Orders the initialisations before other threads' (and cp.async's) arrivals;
// a block barrier must follow.
MLAGEN_DEVICE void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
MLAGEN_DEVICE void mbarrier_arrive(u32 bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}" ::"r"(bar)
               : "memory");
}
// Waits until the barrier's phase of parity `parity` has completed.
// kCluster: arrivals came from other blocks of the cluster, whose stores
// before them are visible once it returns.
template <bool kCluster = false>
MLAGEN_DEVICE void mbarrier_wait(u32 bar, u32 parity) {
  u32 done;
  do {
    if (kCluster)
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                   "selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done)
                   : "r"(bar), "r"(parity)
                   : "memory");
    else
      asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                   "selp.u32 %0, 1, 0, p;\n}"
                   : "=r"(done)
                   : "r"(bar), "r"(parity)
                   : "memory");
  } while (!done);
}
// One arrival on `bar` once all of this thread's earlier cp.async copies
// have landed; the barrier's expected count includes it.
MLAGEN_DEVICE void cp_async_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
MLAGEN_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// One arrival on `bar` that also makes its phase wait for `bytes` more of
// bulk copies (tma_load_3d) to land.
MLAGEN_DEVICE void mbarrier_arrive_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// Brings a tensor map into the TMA unit's descriptor cache ahead of use.
MLAGEN_DEVICE void prefetch_tensor_map(const void *map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}
// Bulk tensor copy (TMA) of the box at element coordinates (c0, c1, c2) of
// the 3-D tensor map `map` (a kernel parameter) into shared memory at `dst`,
// laid out as the map says (here: 128-byte swizzle); completes its bytes on
// `bar`.
MLAGEN_DEVICE void tma_load_3d(u32 dst, const void *map, int c0, int c1, int c2, u32 bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
               : "memory");
}
// The same with an L2 policy (createpolicy) on the copy's reads.
MLAGEN_DEVICE void tma_load_3d(u32 dst, const void *map, int c0, int c1, int c2, u32 bar,
                               unsigned long long policy) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
               " [%0], [%1, {%2, %3, %4}], [%5], %6;" ::"r"(dst),
               "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
               : "memory");
}
// Brings the box at (c0, c1, c2) of a tensor into L2, ahead of its copy.
MLAGEN_DEVICE void tma_prefetch_3d(const void *map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(map), "r"(c0), "r"(c1),
               "r"(c2)
               : "memory");
}
// Makes shared memory written through the generic proxy (ordinary stores,
// cp.async) visible to the async proxy (wgmma operand reads).
MLAGEN_DEVICE void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// Named barriers 1..15 among `threads` threads (a multiple of 32).
MLAGEN_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
MLAGEN_DEVICE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// The same for a barrier its participants reach from different code (two
// warpgroups in their own template instances): bar.sync is
// barrier.sync.aligned, which PTX allows only where every thread executes
// the same barrier instruction (compute-sanitizer's synccheck stops such a
// kernel). Each warp must still reach it converged.
MLAGEN_DEVICE void split_barrier_sync(int id, int threads) {
  asm volatile("barrier.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
MLAGEN_DEVICE void split_barrier_arrive(int id, int threads) {
  asm volatile("barrier.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Thread-block clusters: blocks of one cluster run at once and may read,
// write and arrive on each other's shared memory (distributed shared
// memory). A launch without a cluster is a cluster of one block.
MLAGEN_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
MLAGEN_DEVICE u32 cluster_blocks() {
  u32 n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// The address of shared `addr` (this block's layout) in block `rank`.
MLAGEN_DEVICE u32 cluster_address(u32 addr, u32 rank) {
  u32 r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// Every thread of the cluster arrives once (after initialising what others
// will touch); a thread that then reaches another block's shared memory
// waits first, so that the other block has started and its barriers exist.
MLAGEN_DEVICE void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
MLAGEN_DEVICE void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// A store into another block's shared memory that counts its 16 bytes on
// that block's barrier `bar` (both from cluster_address) once it lands: no
// release fence, no arrival; the barrier's phase waits for the bytes
// (mbarrier_expect_tx) and its waiter sees them.
MLAGEN_DEVICE void store_async_f32x4(u32 addr, float x, float y, float z, float w, u32 bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   addr),
               "f"(x), "f"(y), "f"(z), "f"(w), "r"(bar)
               : "memory");
}

// Per-warpgroup register budgets; need __launch_bounds__(threads, 1).
template <int kRegs>
MLAGEN_DEVICE void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
MLAGEN_DEVICE void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

MLAGEN_DEVICE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
MLAGEN_DEVICE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
MLAGEN_DEVICE void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}
// Pins a register value at this point of the instruction stream: wgmma
// reads and writes its registers asynchronously, which the compiler cannot see.
MLAGEN_DEVICE void fence_operand(float &x) { asm volatile("" : "+f"(x)::"memory"); }
MLAGEN_DEVICE void fence_operand(u32 &x) { asm volatile("" : "+r"(x)::"memory"); }
template <class T, int N>
MLAGEN_DEVICE void fence_array(T (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    fence_operand(x[i]);
}
template <class T, int N, int M>
MLAGEN_DEVICE void fence_array(T (&x)[N][M]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    fence_array(x[i]);
}

// Shared-memory matrix descriptor for the 128-byte swizzle: rows of 128
// bytes (64 16-bit elements), 16-byte chunk c of row r stored at chunk
// c ^ (r % 8), 1024-byte aligned groups of 8 rows (the stride byte offset).
// `lbo` is the distance between 64-element slabs along a MN-major operand's
// N; K-major operands ignore it.
// The high word of every descriptor here: stride 1024 bytes, 128-byte
// swizzle. The wgmma wrappers below take the low words of their
// descriptors and pair them with it in PTX: a descriptor advanced by an
// offset keeps its high word (the start address stays under 256 KB), and
// so the compiler adds in 32 bits, one uniform add a descriptor instead of
// an add with carry and a move of the high word.
constexpr u32 kDescSw128High = (1024 >> 4) | (1u << 30);
MLAGEN_DEVICE u64 smem_desc_sw128(u32 addr, u32 lbo) {
  return (u64)((addr & 0x3ffffu) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)kDescSw128High << 32);
}

// Accumulator operand lists for the wgmma wrappers below.
#define MLAGEN_ACC8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
    "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define MLAGEN_ACC8_0(d) MLAGEN_ACC8(d, 0)
#define MLAGEN_DREGS16 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define MLAGEN_ACC32(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8)
#define MLAGEN_DREGS32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define MLAGEN_ACC64(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8), MLAGEN_ACC8(d, 16), MLAGEN_ACC8(d, 24)
#define MLAGEN_DREGS64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define MLAGEN_ACC80(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8), MLAGEN_ACC8(d, 16), MLAGEN_ACC8(d, 24), MLAGEN_ACC8(d, 32)
#define MLAGEN_DREGS80 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define MLAGEN_ACC96(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8), MLAGEN_ACC8(d, 16), MLAGEN_ACC8(d, 24), MLAGEN_ACC8(d, 32), MLAGEN_ACC8(d, 40)
#define MLAGEN_DREGS96 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}"
#define MLAGEN_ACC112(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8), MLAGEN_ACC8(d, 16), MLAGEN_ACC8(d, 24), MLAGEN_ACC8(d, 32), MLAGEN_ACC8(d, 40), MLAGEN_ACC8(d, 48)
#define MLAGEN_DREGS112 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}"
#define MLAGEN_ACC128(d) MLAGEN_ACC8(d, 0), MLAGEN_ACC8(d, 8), MLAGEN_ACC8(d, 16), MLAGEN_ACC8(d, 24), MLAGEN_ACC8(d, 32), MLAGEN_ACC8(d, 40), MLAGEN_ACC8(d, 48), MLAGEN_ACC8(d, 56)
#define MLAGEN_DREGS128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// d (+)= A B for the warpgroup, m64nNk16, fp32 accumulators laid out per warp
// as mma.sync's C fragments, one per 8 columns: d[4 j + e] holds row
// 16 warp + lane / 4 + 8 (e / 2), column 8 j + 2 (lane % 4) + e % 2. B is a
// shared-memory descriptor, K-major (kTransB 0) or MN-major (1); A is a
// descriptor (ss; K-major, or MN-major with kTransA 1) or, as mma.sync's A
// fragment, registers (rs). `accumulate` 0 overwrites d.
template <class T, int N>
struct Wgmma;
#define MLAGEN_WGMMA(T, TS, N, ACC, DREGS, R0, R1, R2, R3, R4, R5, R6, R7) \
  template <> \
  struct Wgmma<T, N> { \
    template <int kTransB, int kTransA = 0> \
    MLAGEN_DEVICE static void ss(float (&d)[N / 2], u64 a, u64 b, int accumulate) { \
      asm volatile("{\n.reg .pred p;\n.reg .b64 da, db;\nsetp.ne.b32 p, %" R2 ", 0;\n" \
                   "mov.b64 da, {%" R0 ", %" R5 "};\nmov.b64 db, {%" R1 ", %" R5 "};\n" \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TS "." TS " " DREGS \
                   ", da, db, p, 1, 1, %" R4 ", %" R3 ";\n}" \
                   : ACC(d) : "r"((u32)a), "r"((u32)b), "r"(accumulate), "n"(kTransB), "n"(kTransA), \
                     "r"(kDescSw128High)); \
    } \
    template <int kTransB> \
    MLAGEN_DEVICE static void rs(float (&d)[N / 2], const u32 (&a)[4], u64 b, int accumulate) { \
      asm volatile("{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %" R5 ", 0;\n" \
                   "mov.b64 db, {%" R4 ", %" R7 "};\n" \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TS "." TS " " DREGS \
                   ", {%" R0 ", %" R1 ", %" R2 ", %" R3 "}, db, p, 1, 1, %" R6 ";\n}" \
                   : ACC(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"((u32)b), "r"(accumulate), \
                     "n"(kTransB), "r"(kDescSw128High)); \
    } \
  };
MLAGEN_WGMMA(bf16, "bf16", 16, MLAGEN_ACC8_0, MLAGEN_DREGS16, "8", "9", "10", "11", "12", "13", "14", "15")
MLAGEN_WGMMA(fp16, "f16", 16, MLAGEN_ACC8_0, MLAGEN_DREGS16, "8", "9", "10", "11", "12", "13", "14", "15")
MLAGEN_WGMMA(bf16, "bf16", 32, MLAGEN_ACC32, MLAGEN_DREGS32, "16", "17", "18", "19", "20", "21", "22", "23")
MLAGEN_WGMMA(fp16, "f16", 32, MLAGEN_ACC32, MLAGEN_DREGS32, "16", "17", "18", "19", "20", "21", "22", "23")
MLAGEN_WGMMA(bf16, "bf16", 64, MLAGEN_ACC64, MLAGEN_DREGS64, "32", "33", "34", "35", "36", "37", "38", "39")
MLAGEN_WGMMA(fp16, "f16", 64, MLAGEN_ACC64, MLAGEN_DREGS64, "32", "33", "34", "35", "36", "37", "38", "39")
MLAGEN_WGMMA(bf16, "bf16", 80, MLAGEN_ACC80, MLAGEN_DREGS80, "40", "41", "42", "43", "44", "45", "46", "47")
MLAGEN_WGMMA(fp16, "f16", 80, MLAGEN_ACC80, MLAGEN_DREGS80, "40", "41", "42", "43", "44", "45", "46", "47")
MLAGEN_WGMMA(bf16, "bf16", 96, MLAGEN_ACC96, MLAGEN_DREGS96, "48", "49", "50", "51", "52", "53", "54", "55")
MLAGEN_WGMMA(fp16, "f16", 96, MLAGEN_ACC96, MLAGEN_DREGS96, "48", "49", "50", "51", "52", "53", "54", "55")
MLAGEN_WGMMA(bf16, "bf16", 112, MLAGEN_ACC112, MLAGEN_DREGS112, "56", "57", "58", "59", "60", "61", "62", "63")
MLAGEN_WGMMA(fp16, "f16", 112, MLAGEN_ACC112, MLAGEN_DREGS112, "56", "57", "58", "59", "60", "61", "62", "63")
MLAGEN_WGMMA(bf16, "bf16", 128, MLAGEN_ACC128, MLAGEN_DREGS128, "64", "65", "66", "67", "68", "69", "70", "71")
MLAGEN_WGMMA(fp16, "f16", 128, MLAGEN_ACC128, MLAGEN_DREGS128, "64", "65", "66", "67", "68", "69", "70", "71")
#undef MLAGEN_WGMMA

// d (+)= A B, m64nNk32 with fp8 e4m3 A and B (fp32 accumulators laid out as
// Wgmma's). Both operands K-major (fp8 has no transposed forms): B a
// descriptor; A a descriptor (ss) or registers (rs): register i holds row
// 16 warp + lane / 4 + 8 (i % 2), k = 4 (lane % 4) + 16 (i / 2) + byte.
template <int N>
struct WgmmaFP8;
#define MLAGEN_WGMMA_FP8(N, ACC, DREGS, R0, R1, R2, R3, R4, R5, R6) \
  template <> \
  struct WgmmaFP8<N> { \
    MLAGEN_DEVICE static void ss(float (&d)[N / 2], u64 a, u64 b, int accumulate) { \
      asm volatile("{\n.reg .pred p;\n.reg .b64 da, db;\nsetp.ne.b32 p, %" R2 ", 0;\n" \
                   "mov.b64 da, {%" R0 ", %" R3 "};\nmov.b64 db, {%" R1 ", %" R3 "};\n" \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 " DREGS \
                   ", da, db, p, 1, 1;\n}" \
                   : ACC(d) : "r"((u32)a), "r"((u32)b), "r"(accumulate), "r"(kDescSw128High)); \
    } \
    MLAGEN_DEVICE static void rs(float (&d)[N / 2], const u32 (&a)[4], u64 b, int accumulate) { \
      asm volatile("{\n.reg .pred p;\n.reg .b64 db;\nsetp.ne.b32 p, %" R5 ", 0;\n" \
                   "mov.b64 db, {%" R4 ", %" R6 "};\n" \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 " DREGS \
                   ", {%" R0 ", %" R1 ", %" R2 ", %" R3 "}, db, p, 1, 1;\n}" \
                   : ACC(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"((u32)b), "r"(accumulate), \
                     "r"(kDescSw128High)); \
    } \
  };
MLAGEN_WGMMA_FP8(16, MLAGEN_ACC8_0, MLAGEN_DREGS16, "8", "9", "10", "11", "12", "13", "14")
MLAGEN_WGMMA_FP8(32, MLAGEN_ACC32, MLAGEN_DREGS32, "16", "17", "18", "19", "20", "21", "22")
// (64: the decode template compiles its e4m3 consumer for every row count.)
MLAGEN_WGMMA_FP8(64, MLAGEN_ACC64, MLAGEN_DREGS64, "32", "33", "34", "35", "36", "37", "38")
#undef MLAGEN_WGMMA_FP8

// Two floats as fp8 e4m3 `hi` plus the e4m3 of what hi rounded away, `lo`
// (hi + lo carries about 8 significant bits), each a 16-bit pair with `a` in
// byte 0. The residue is taken in fp16 (exact for hi, 11 bits for a, b).
MLAGEN_DEVICE void split_fp8_pair(float a, float b, u32 &hi, u32 &lo) {
  asm("{ .reg .b32 v, h16, d;\n .reg .b16 h8, l8;\n"
      " cvt.rn.f16x2.f32 v, %3, %2;\n"
      " cvt.rn.satfinite.e4m3x2.f16x2 h8, v;\n"
      " cvt.rn.f16x2.e4m3x2 h16, h8;\n"
      " sub.rn.f16x2 d, v, h16;\n"
      " cvt.rn.satfinite.e4m3x2.f16x2 l8, d;\n"
      " cvt.u32.u16 %0, h8;\n cvt.u32.u16 %1, l8; }"
      : "=r"(hi), "=r"(lo) : "f"(a), "f"(b));
}

} // namespace sm90
#endif // MLAGEN_ARCH_SM90A
} // namespace mlagen
