//===- EchoKernel.h - a kernel that reports how it was launched -*- C++ -*-===//
//
// An NVIDIA prefill-ABI kernel that writes back its parameter block, grid,
// block and dynamic shared memory size (gpu/LaunchTest.cpp). The unit tests
// compile it with NVRTC, so a CPU-only machine already catches a broken one.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_ECHOKERNEL_H
#define MLAGEN_TEST_COMMON_ECHOKERNEL_H

namespace mlagen::test {

// Writes into ((long long *)p.out)[0..24] from block (0, 0, 0): the 20
// parameter fields in CONTRACT.md order (softmax_scale as its bits), then
// gridDim.x/y/z, blockDim.x and the dynamic shared memory size; every block
// adds 1 to [32]. Entry: mlagen_prefill.
inline constexpr const char *kEchoKernel = R"(
struct mlagen_prefill_params {
  const void *q;
  const void *k;
  const void *v;
  void *out;
  float *lse;
  const int *cu_seqlens_q;
  const int *cu_seqlens_k;
  long long q_token_stride, q_head_stride;
  long long k_token_stride, k_head_stride;
  long long v_token_stride, v_head_stride;
  long long out_token_stride, out_head_stride;
  long long lse_head_stride;
  int batch;
  int max_seqlen_q;
  float softmax_scale;
  int kv_maps_ready; // the rest of the real block is not read
};

extern "C" __global__ void mlagen_prefill(mlagen_prefill_params p) {
  extern __shared__ unsigned char smem[];
  unsigned dynamicShared;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamicShared));
  long long *echo = (long long *)p.out;
  if (threadIdx.x != 0)
    return;
  // Out of bounds unless the launch really gave this much shared memory.
  smem[dynamicShared - 1] = 1;
  atomicAdd((unsigned long long *)&echo[32], 1ull);
  if (blockIdx.x + blockIdx.y + blockIdx.z != 0)
    return;
  const long long fields[] = {
      (long long)p.q, (long long)p.k, (long long)p.v, (long long)p.out,
      (long long)p.lse, (long long)p.cu_seqlens_q, (long long)p.cu_seqlens_k,
      p.q_token_stride, p.q_head_stride, p.k_token_stride, p.k_head_stride,
      p.v_token_stride, p.v_head_stride, p.out_token_stride,
      p.out_head_stride, p.lse_head_stride, p.batch, p.max_seqlen_q,
      __float_as_int(p.softmax_scale), p.kv_maps_ready,
      gridDim.x, gridDim.y, gridDim.z, blockDim.x, dynamicShared};
  for (int i = 0; i < 25; ++i)
    echo[i] = fields[i];
}
)";

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_ECHOKERNEL_H
