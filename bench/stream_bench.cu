// The ceiling a decode kernel's key/value stream can reach: blocks that only
// copy K and V rows of one kv head ([tokens, heads, 128] bf16, the paged
// caches' NHD rows, 256 bytes strided by heads x 256) into shared-memory
// stages and touch one word of each, with no attention math. Variants: the
// cp.async L2 prefetch hint (none, 64, 128, 256 bytes), TMA tensor copies
// (boxes of 64 or 16 rows, the page sizes), 1-d bulk copies of single rows,
// and keys split into chunks (more, shorter blocks). Llama-3-8B decode
// shape: 8 kv heads, 4096 keys, batch 64 and 128.
//
// Run on the GPU machine (CUDA toolkit there, no mlagen needed):
//   nvcc -std=c++17 -O3 -arch=sm_90a -o /tmp/stream_bench bench/stream_bench.cu -lcuda
//   /tmp/stream_bench
// GB/s count K + V bytes read; bench/notes/paged-decode.md has results.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

namespace {

constexpr int kDim = 128, kRowBytes = kDim * 2, kPitch = kRowBytes + 16;
constexpr int kTile = 64, kTileBytes = kTile * kPitch, kStageBytes = 2 * kTileBytes;
constexpr int kThreads = 128;

__device__ uint32_t shared_address(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

template <int kHint> __device__ void cp_async_16(uint32_t dst, const void *src) {
  if constexpr (kHint == 0)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
  else if constexpr (kHint == 64)
    asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16;" ::"r"(dst), "l"(src));
  else if constexpr (kHint == 128)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(dst), "l"(src));
  else
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(src));
}

__device__ void mbarrier_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(bar));
}
__device__ void mbarrier_expect(uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes));
}
__device__ void mbarrier_wait(uint32_t bar, int parity) {
  asm volatile("{\n .reg .pred p;\n WAIT: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n"
               " @!p bra WAIT;\n}" ::"r"(bar), "r"(parity)
               : "memory");
}

// Rows [chunk * c, chunk * (c + 1)) of (request, head) = block / chunks;
// 3 cp.async stages of 64 rows, one barrier a tile.
template <int kHint>
__global__ void __launch_bounds__(kThreads)
    stream_cp_async(const char *k, const char *v, int heads, int seq, int chunk, float *sink) {
  extern __shared__ __align__(128) char smem[];
  constexpr int kStages = 3;
  const int chunks = seq / chunk, item = blockIdx.x / chunks, c = blockIdx.x % chunks;
  const int b = item / heads, h = item % heads, tid = threadIdx.x;
  const long long token_stride = (long long)heads * kRowBytes;
  const long long first = ((long long)b * seq + (long long)c * chunk) * token_stride + h * kRowBytes;
  const int tiles = chunk / kTile;
  auto issue = [&](int tile, int stage) {
    const uint32_t dst = shared_address(smem + stage * kStageBytes);
#pragma unroll
    for (int i = 0; i < kTile * 16 / kThreads; ++i) {
      const int index = tid + i * kThreads, row = index / 16, vec = index % 16;
      const long long at = first + (long long)(tile * kTile + row) * token_stride + vec * 16;
      cp_async_16<kHint>(dst + row * kPitch + vec * 16, k + at);
      cp_async_16<kHint>(dst + kTileBytes + row * kPitch + vec * 16, v + at);
    }
  };
  for (int s = 0; s < kStages - 1; ++s) {
    issue(s, s);
    asm volatile("cp.async.commit_group;");
  }
  float acc = 0.0f;
  for (int it = 0; it < tiles; ++it) {
    asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 2));
    __syncthreads();
    if (it + kStages - 1 < tiles)
      issue(it + kStages - 1, (it + kStages - 1) % kStages);
    asm volatile("cp.async.commit_group;");
    const char *stage = smem + (it % kStages) * kStageBytes;
    acc += *reinterpret_cast<const float *>(stage + (tid % kTile) * kPitch) +
           *reinterpret_cast<const float *>(stage + kTileBytes + (tid % kTile) * kPitch);
  }
  if (acc == 12345.0f) // never: keeps the reads
    sink[0] = acc;
}

// Whole (request, head) rows through TMA: kStages stages of 64 rows, each
// K and V tile as (64 / kBoxRows) x 2 boxes of kBoxRows rows x 64 columns
// with the 128-byte swizzle, one mbarrier per stage.
template <int kStages, int kBoxRows>
__global__ void __launch_bounds__(kThreads)
    stream_tma(const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
               int heads, int seq, float *sink) {
  extern __shared__ __align__(1024) char smem_raw[];
  char *smem = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t full[kStages];
  constexpr int kStage = 4 * kTile * 128; // K and V, two 64-column halves each
  const int b = blockIdx.x / heads, h = blockIdx.x % heads, tid = threadIdx.x;
  const int tiles = seq / kTile;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s)
      mbarrier_init(shared_address(&full[s]));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int tile, int stage) {
    if (tid != 0)
      return;
    const uint32_t bar = shared_address(&full[stage]);
    mbarrier_expect(bar, kStage);
    const uint32_t dst = shared_address(smem + stage * kStage);
    for (int r = 0; r < kTile; r += kBoxRows)
      for (int half = 0; half < 2; ++half)
        for (int kv = 0; kv < 2; ++kv)
          asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                       " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst + (2 * kv + half) * kTile * 128 + r * 128),
                       "l"(kv ? &v_map : &k_map), "r"(half * 64), "r"(h), "r"(b * seq + tile * kTile + r),
                       "r"(bar)
                       : "memory");
  };
  for (int s = 0; s < kStages - 1; ++s)
    issue(s, s);
  float acc = 0.0f;
  for (int it = 0; it < tiles; ++it) {
    const int stage = it % kStages;
    mbarrier_wait(shared_address(&full[stage]), (it / kStages) & 1);
    __syncthreads(); // every thread is done with the stage issued next
    if (it + kStages - 1 < tiles)
      issue(it + kStages - 1, (it + kStages - 1) % kStages);
    const char *at = smem + stage * kStage;
    acc += *reinterpret_cast<const float *>(at + (tid % kTile) * 128) +
           *reinterpret_cast<const float *>(at + 2 * kTile * 128 + (tid % kTile) * 128);
  }
  if (acc == 12345.0f)
    sink[0] = acc;
}

// One 1-d bulk copy per 256-byte row (no tensor map), issued by warp 0.
__global__ void __launch_bounds__(kThreads)
    stream_bulk_rows(const char *k, const char *v, int heads, int seq, float *sink) {
  extern __shared__ __align__(128) char smem[];
  constexpr int kStages = 3;
  __shared__ __align__(8) uint64_t full[kStages];
  const int b = blockIdx.x / heads, h = blockIdx.x % heads, tid = threadIdx.x;
  const long long token_stride = (long long)heads * kRowBytes;
  const long long first = (long long)b * seq * token_stride + h * kRowBytes;
  const int tiles = seq / kTile;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s)
      mbarrier_init(shared_address(&full[s]));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int tile, int stage) {
    if (tid >= 32)
      return;
    const uint32_t bar = shared_address(&full[stage]);
    if (tid == 0)
      mbarrier_expect(bar, 2 * kTile * kRowBytes);
    __syncwarp();
    const uint32_t dst = shared_address(smem + stage * kStageBytes);
    for (int r = tid; r < kTile; r += 32)
      for (int kv = 0; kv < 2; ++kv)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         dst + kv * kTileBytes + r * kPitch),
                     "l"((kv ? v : k) + first + (long long)(tile * kTile + r) * token_stride), "r"(kRowBytes),
                     "r"(bar)
                     : "memory");
  };
  for (int s = 0; s < kStages - 1; ++s)
    issue(s, s);
  float acc = 0.0f;
  for (int it = 0; it < tiles; ++it) {
    const int stage = it % kStages;
    mbarrier_wait(shared_address(&full[stage]), (it / kStages) & 1);
    __syncthreads();
    if (it + kStages - 1 < tiles)
      issue(it + kStages - 1, (it + kStages - 1) % kStages);
    const char *at = smem + stage * kStageBytes;
    acc += *reinterpret_cast<const float *>(at + (tid % kTile) * kPitch);
  }
  if (acc == 12345.0f)
    sink[0] = acc;
}

} // namespace

int main() {
  constexpr int kHeads = 8, kSeq = 4096, kMaxBatch = 128;
  const size_t maxBytes = size_t(kMaxBatch) * kSeq * kHeads * kRowBytes;
  char *k = nullptr, *v = nullptr;
  float *sink = nullptr;
  if (cudaMalloc(&k, maxBytes) || cudaMalloc(&v, maxBytes) || cudaMalloc(&sink, 4)) {
    std::printf("cudaMalloc failed\n");
    return 1;
  }
  cudaMemset(k, 0, maxBytes);
  cudaMemset(v, 0, maxBytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  int status = 0;
  auto time = [&](const char *name, int batch, auto launch) {
    for (int i = 0; i < 3; ++i)
      launch();
    cudaEventRecord(start);
    for (int i = 0; i < 20; ++i)
      launch();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    ms /= 20;
    const cudaError_t error = cudaGetLastError();
    status |= error != cudaSuccess;
    const double bytes = 2.0 * batch * kSeq * kHeads * kRowBytes;
    std::printf("| %-34s | %4d | %8.1f | %7.1f | %s |\n", name, batch, ms * 1e3, bytes / ms / 1e6,
                cudaGetErrorString(error));
  };
  std::printf("| variant | batch | us | GB/s | status |\n|---|---|---|---|---|\n");

  const int cpShared = 3 * kStageBytes;
  auto cpAsync = [&](const char *name, auto kernel, int batch, int chunk) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cpShared);
    time(name, batch, [&] {
      kernel<<<batch * kHeads * (kSeq / chunk), kThreads, cpShared>>>(k, v, kHeads, kSeq, chunk, sink);
    });
  };
  for (int batch : {64, 128}) {
    cpAsync("cp.async, no L2 hint", stream_cp_async<0>, batch, kSeq);
    cpAsync("cp.async L2::64B", stream_cp_async<64>, batch, kSeq);
    cpAsync("cp.async L2::128B", stream_cp_async<128>, batch, kSeq);
    cpAsync("cp.async L2::256B", stream_cp_async<256>, batch, kSeq);
    cpAsync("cp.async L2::128B, chunks of 1024", stream_cp_async<128>, batch, 1024);
    cpAsync("cp.async L2::128B, chunks of 512", stream_cp_async<128>, batch, 512);
  }

  const int batch = kMaxBatch;
  auto encode = [&](CUtensorMap *map, void *base, int boxRows) {
    const cuuint64_t dims[3] = {kDim, kHeads, cuuint64_t(batch) * kSeq};
    const cuuint64_t strides[2] = {kRowBytes, cuuint64_t(kHeads) * kRowBytes};
    const cuuint32_t box[3] = {64, 1, cuuint32_t(boxRows)}, elementStrides[3] = {1, 1, 1};
    return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, base, dims, strides, box,
                                  elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  auto tma = [&](const char *name, auto kernel, int stages, int boxRows) {
    CUtensorMap kMap, vMap;
    if (encode(&kMap, k, boxRows) != CUDA_SUCCESS || encode(&vMap, v, boxRows) != CUDA_SUCCESS) {
      std::printf("| %s | cuTensorMapEncodeTiled failed |\n", name);
      status = 1;
      return;
    }
    const int shared = stages * 4 * kTile * 128 + 1024;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
    time(name, batch, [&] { kernel<<<batch * kHeads, kThreads, shared>>>(kMap, vMap, kHeads, kSeq, sink); });
  };
  tma("TMA boxes of 64 rows, 3 stages", stream_tma<3, 64>, 3, 64);
  tma("TMA boxes of 16 rows, 3 stages", stream_tma<3, 16>, 3, 16);
  tma("TMA boxes of 64 rows, 6 stages", stream_tma<6, 64>, 6, 64);
  cudaFuncSetAttribute(stream_bulk_rows, cudaFuncAttributeMaxDynamicSharedMemorySize, cpShared);
  time("bulk copy per row, 3 stages", batch,
       [&] { stream_bulk_rows<<<batch * kHeads, kThreads, cpShared>>>(k, v, kHeads, kSeq, sink); });
  return status;
}
