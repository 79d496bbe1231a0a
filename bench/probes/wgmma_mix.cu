// Is the 64-row decode kernel's product mix bound by shared memory? Two
// warpgroups issue the kernel's products of each 64-key tile: one S = Q K^T
// as 36 SS m64n64k16 products (A and B from shared memory: 4 KB a product,
// 128 bytes a cycle at the tensor peak), the other P V as 8 SS m64n256k16
// products (the two consumers' column halves; 10 KB a product). (The kernel
// splits the same products differently over its two consumers; one role a
// warpgroup keeps the accumulators in registers here.)
// At the tensor peak a tile takes 36 x 32 + 8 x 128 = 2176 cycles. Optional
// fill: one producer warp streams 72 KB a tile (a bf16 tile of 64 keys x
// 576) from DRAM into shared memory by bulk copies, as the kernel's refills
// do, so that the fill's shared-memory writes compete with the operands.
// Operands and tiles hold random bf16 values (the products' results are
// not used: timing and power only).
//   nvcc -O2 -gencode arch=compute_90a,code=sm_90a -o wgmma_mix bench/probes/wgmma_mix.cu
//   ./wgmma_mix              (each mode once, cycles a tile)
//   ./wgmma_mix 23 3         (S + P V + fill shared by pairs of blocks, back
//                             to back for 3 s: sample nvidia-smi meanwhile for
//                             the clock a schedule without stalls gets at the
//                             power cap; TFLOP/s as 64-row decode tiles)
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 desc(u32 addr) {
  return (u64)((addr & 0x3ffffu) >> 4) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}
#define ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
__device__ __forceinline__ void s_product(float (&d)[32], u64 a, u64 b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
               "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
               "%31}, %32, %33, p, 1, 1, 0, 0;\n}"
               : ACC8(0), ACC8(8), ACC8(16), ACC8(24)
               : "l"(a), "l"(b));
}
__device__ __forceinline__ void o_product(float (&d)[128], u64 a, u64 b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
               "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
               "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, "
               "%51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, "
               "%71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, "
               "%91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, "
               "%109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, "
               "%126, %127}, %128, %129, p, 1, 1, 0, 1;\n}"
               : ACC8(0), ACC8(8), ACC8(16), ACC8(24), ACC8(32), ACC8(40), ACC8(48), ACC8(56), ACC8(64), ACC8(72),
                 ACC8(80), ACC8(88), ACC8(96), ACC8(104), ACC8(112), ACC8(120)
               : "l"(a), "l"(b));
}

constexpr int kTileBytes = 64 * 576 * 2;   // one bf16 tile
constexpr int kFillBytes = 2 * kTileBytes; // two fill buffers (stages)
constexpr int kOperandBytes = 64 * 1024;   // Q / K / P / V operands read by the products
constexpr int kShared = kOperandBytes + kFillBytes + 1024 + 64;

// kMode bit 0: S products; bit 1: P V products; bit 2: the fill (bit 3:
// from L2; bit 4: pairs of blocks read the same tiles).
template <int kMode>
__global__ void __launch_bounds__(288) mix(long long *cycles, const unsigned char *src, int tiles) {
  constexpr int mode = kMode;
  extern __shared__ __align__(1024) unsigned char smem[];
  const u32 raw = (u32)__cvta_generic_to_shared(smem);
  const u32 base = (raw + 1023) & ~1023u;
  const u32 fill = base + kOperandBytes, bar = fill + kFillBytes;
  const int tid = threadIdx.x;
  // Warp-uniform in ptxas's eyes, so that the products are not serialised.
  const int role = __shfl_sync(0xffffffffu, tid / 128, 0);
  if (tid == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar));
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar + 8));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Operands of random values (the first 64 KB of the block's tiles), so
  // that the tensor cores draw the power real data makes them draw.
  for (int i = tid; i < kOperandBytes / 16; i += blockDim.x) {
    const uint4 v = reinterpret_cast<const uint4 *>(src + (long long)blockIdx.x * tiles * kTileBytes)[i];
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(base + 16 * i), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
  }
  __syncthreads();
  long long t0 = clock64();
  if (role == 2) { // the fill: one warp, lane 0 issues 9 bulk copies of 8 KB a tile
    if ((mode & 4) && tid == 256) {
      // Bit 4: blocks 2i and 2i + 1 read the same tiles (the two 64-row
      // blocks of a 128-head request: one from DRAM, the other from L2).
      const int reader = (mode & 16) ? blockIdx.x / 2 : blockIdx.x;
      const unsigned char *mine = src + (long long)reader * tiles * kTileBytes;
      for (int t = 0; t < tiles; ++t) {
        const u32 b = bar + 8 * (t % 2), dst = fill + kTileBytes * (t % 2);
        if (t >= 2) { // the stage's previous copy has landed
          const u32 parity = ((t - 2) / 2) % 2;
          asm volatile("{\n.reg .pred done;\nwait_%=:\nmbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
                       "@!done bra wait_%=;\n}" ::"r"(b), "r"(parity) : "memory");
        }
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(b), "r"(kTileBytes) : "memory");
        // Bit 3: the block's first two tiles again and again (from L2).
        const long long from = (long long)((mode & 8) ? t % 2 : t) * kTileBytes;
        for (int c = 0; c < kTileBytes / 8192; ++c)
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 8192, [%2];"
                       ::"r"(dst + 8192 * c), "l"(mine + from + 8192 * c), "r"(b) : "memory");
      }
      for (int t = tiles - 2; t < tiles; ++t) {
        const u32 parity = (t / 2) % 2;
        asm volatile("{\n.reg .pred done;\nwait_%=:\nmbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
                     "@!done bra wait_%=;\n}" ::"r"(bar + 8 * (t % 2)), "r"(parity) : "memory");
      }
    }
  } else if (role == 0) { // S = Q K^T, every tile (the two consumers' share)
    float s[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) s[i] = 0.0f;
    const u64 q = desc(base), k = desc(base + 16384);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int t = 0; (mode & 1) && t < tiles; ++t) {
#pragma unroll
      for (int j = 0; j < 36; ++j)
        s_product(s, q + 2 * (j % 8), k + 2 * (j % 8)); // 32 bytes further a k-step
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    float sink = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) sink += s[i];
    if (sink == 12345.0f)
      cycles[1000] = 1;
  } else { // P V, both consumers' column halves: 8 products a tile
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.0f;
    const u64 p = desc(base + 32768), v = desc(base + 40960);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int t = 0; (mode & 2) && t < tiles; ++t) {
#pragma unroll
      for (int j = 0; j < 8; ++j)
        o_product(o, p + 2 * (j % 4), v + 2 * j);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    }
    float sink = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i) sink += o[i];
    if (sink == 12345.0f)
      cycles[1000] = 1;
  }
  __syncthreads();
  if (tid == 0)
    cycles[blockIdx.x] = clock64() - t0;
}

// bf16 values in (-1, 1) from a hash of the index: the tiles and operands.
__global__ void random_bf16(unsigned short *out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ (unsigned)(i >> 32) * 40503u;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    const float f = (float)(x & 0xffffff) / 8388608.0f - 1.0f;
    out[i] = (unsigned short)(__float_as_uint(f) >> 16);
  }
}

int main(int argc, char **argv) {
  const int blocks = 132, tiles = 128;
  long long *dev;
  unsigned char *src;
  cudaMalloc(&dev, 2000 * sizeof(long long));
  cudaMalloc(&src, (size_t)blocks * tiles * kTileBytes);
  random_bf16<<<1024, 256>>>(reinterpret_cast<unsigned short *>(src), (long long)blocks * tiles * kTileBytes / 2);
  if (argc == 3 && std::atoi(argv[1]) == 23) {
    const double seconds = std::atof(argv[2]);
    cudaFuncSetAttribute(mix<23>, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    float ms = 0;
    long long launches = 0;
    while (ms < seconds * 1e3) {
      for (int i = 0; i < 20; ++i)
        mix<23><<<blocks, 288, kShared>>>(dev, src, tiles);
      launches += 20;
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      cudaEventElapsedTime(&ms, a, b);
    }
    const double us = ms * 1e3 / launches;
    const double flops = 2.0 * 64 * 64 * (576 + 512) * blocks * tiles;
    std::printf("sustained S + P V + shared fill: %.1f us a launch, %.0f TFLOP/s as decode tiles%s\n", us,
                flops / us / 1e6, cudaGetLastError() ? " (error)" : "");
    return 0;
  }
  const char *names[] = {"", "S products", "P V products", "S + P V", "fill alone", "S + fill", "P V + fill",
                         "S + P V + fill", "", "", "", "", "L2 fill alone", "S + L2 fill", "P V + L2 fill",
                         "S + P V + L2 fill", "", "", "", "", "", "", "", "S + P V + paired fill"};
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int round = 0; round < 2; ++round)
    for (int mode : {1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 23}) {
      void (*kernel)(long long *, const unsigned char *, int) =
          mode == 1 ? mix<1> : mode == 2 ? mix<2> : mode == 3 ? mix<3> : mode == 4 ? mix<4> : mode == 5 ? mix<5>
          : mode == 6 ? mix<6> : mode == 7 ? mix<7> : mode == 12 ? mix<12> : mode == 13 ? mix<13>
          : mode == 14 ? mix<14> : mode == 15 ? mix<15> : mix<23>;
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared);
      kernel<<<blocks, 288, kShared>>>(dev, src, tiles);
      cudaEventRecord(e0);
      kernel<<<blocks, 288, kShared>>>(dev, src, tiles);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      long long host[132];
      cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost);
      double mean = 0;
      for (int i = 0; i < blocks; ++i) mean += host[i];
      mean /= blocks;
      const double ideal = ((mode & 1) ? 36 * 32 : 0) + ((mode & 2) ? 8 * 128 : 0);
      std::printf("%-16s %7.1f cycles a tile (tensor peak %4.0f: %5.1f%%), %7.1f us, fill %s%s\n", names[mode],
                  mean / tiles, ideal, ideal > 0 ? 100.0 * ideal / (mean / tiles) : 0.0, ms * 1e3,
                  (mode & 8) ? "from L2" : (mode & 16) ? "shared by pairs" : (mode & 4) ? "from DRAM" : "off", cudaGetLastError() ? " (error)" : "");
      if (mode & 4)
        std::printf("%-16s fill %.0f GB/s\n", "", (double)blocks * tiles * kTileBytes / (ms * 1e-3) / 1e9);
    }
  return 0;
}
