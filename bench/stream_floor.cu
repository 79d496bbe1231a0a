// How fast can any kernel read an MLA decode step's paged latent cache?
// Blocks that only stream whole pages (64 keys x 576 columns, fp8 36 KB or
// bf16 72 KB, the page table a random permutation) into shared-memory stages
// by 1-d bulk copies and touch one word of each, with no attention math.
// Copies: whole pages by 1-d bulk copies; the 16-row e4m3 producer's
// cp.async mapping (4 threads a 576-byte row, 16 bytes each, 9 slabs of 64
// bytes; a barrier of 128 arrivals); or tensor copies of 128-byte x 64-row
// boxes with the 128-byte swizzle (5 a page, the last half zero-filled).
//   static:  a block per (request, chunk), as the decode plans place them;
//   dynamic: one block per SM, each claiming the next page of the whole
//            batch from a global counter (perfect balance, no plan).
// bench_decode.py builds it as a library (-DMLAGEN_FLOOR_LIB, entry
// stream_floor_launch) and times every way with its own do_bench, beside the
// decode kernels: the fastest is the "floor" of its table. Standalone, it
// times each way itself: after a 256 MB memset (do_bench's writing L2
// flush), CUDA events around the launch, the median of 30; and back to back
// with no flush ("sustained"). On the GPU machine:
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
//     -o /tmp/stream_floor bench/stream_floor.cu -lcuda && /tmp/stream_floor
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

namespace {

constexpr int kThreads = 128;

__device__ uint32_t shared_address(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ void mbarrier_expect(uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ void mbarrier_wait(uint32_t bar, int parity) {
  asm volatile("{\n .reg .pred p;\n WAIT: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n"
               " @!p bra WAIT;\n}" ::"r"(bar), "r"(parity)
               : "memory");
}
// One page as kPieces 1-d bulk copies completing on `bar`.
template <int kPieces>
__device__ void copy_page(uint32_t dst, const char *src, int bytes, uint32_t bar) {
  mbarrier_expect(bar, bytes);
  const int piece = bytes / kPieces;
#pragma unroll
  for (int i = 0; i < kPieces; ++i)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     dst + i * piece),
                 "l"(src + (long long)i * piece), "r"(piece), "r"(bar)
                 : "memory");
}

enum Copy { kBulk, kCpAsync, kTensor };

__device__ void cp_async_16(uint32_t dst, const char *src) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}

struct Stream {
  const char *cache;
  const int *table; // page of (request, page within the request)
  int page_bytes, pages_per_request, chunks; // chunks: blocks a request (static)
  int total_pages;                           // dynamic
  unsigned *counter;                         // dynamic
  unsigned base; // dynamic: the counter's value when this launch began
  float *sink;
};

// Page `n` of this block's work, or -1 past its end. `stage` is where it goes.
template <int kStages, int kPieces, bool kDynamic, Copy kCopy = kBulk>
__global__ void __launch_bounds__(kThreads) stream(const __grid_constant__ CUtensorMap map, const Stream s) {
  extern __shared__ __align__(128) char smem_raw[];
  // The 128-byte swizzle needs 1024-byte aligned boxes.
  char *smem = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ int claimed[kStages];
  const int tid = threadIdx.x;
  const int per_block = s.pages_per_request / s.chunks;
  const int request = blockIdx.x / s.chunks, first = (blockIdx.x % s.chunks) * per_block;
  if (tid == 0) {
    for (int i = 0; i < kStages; ++i)
      asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(shared_address(&full[i])),
                   "r"(kCopy == kCpAsync ? kThreads : 1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int stage_bytes = kCopy == kTensor ? 5 * 64 * 128 : s.page_bytes;
  // Thread 0 (every thread for cp.async): the n-th page of this block into
  // stage n % kStages.
  auto issue = [&](int n) {
    const int st = n % kStages;
    const uint32_t bar = shared_address(&full[st]);
    if (kCopy == kCpAsync) { // static only
      const int page = n < per_block ? s.table[request * s.pages_per_request + first + n] : -1;
      claimed[st] = page; // every thread the same value: no ordering needed
      if (page >= 0) {
        const uint32_t dst = shared_address(smem + st * stage_bytes);
        const char *src = s.cache + (long long)page * s.page_bytes;
        for (int pass = 0; pass < 2; ++pass) {
          const int r = tid / 4 + 32 * pass, at = r * 576 + (tid % 4) * 16;
#pragma unroll
          for (int sl = 0; sl < 9; ++sl)
            cp_async_16(dst + at + sl * 64, src + at + sl * 64);
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(bar) : "memory");
      } else {
        mbarrier_arrive(bar);
      }
      return;
    }
    int page;
    if (kDynamic) {
      const unsigned c = atomicAdd(s.counter, 1u) - s.base;
      page = c < (unsigned)s.total_pages ? s.table[c] : -1;
    } else {
      page = n < per_block ? s.table[request * s.pages_per_request + first + n] : -1;
    }
    claimed[st] = page;
    if (page < 0) {
      mbarrier_arrive(bar);
      return;
    }
    if (kCopy == kTensor) {
      mbarrier_expect(bar, stage_bytes);
      for (int x = 0; x < 5; ++x)
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(shared_address(smem + st * stage_bytes) + x * 8192),
                     "l"(&map), "r"(128 * x), "r"(0), "r"(page), "r"(bar)
                     : "memory");
      return;
    }
    copy_page<kPieces>(shared_address(smem + st * s.page_bytes), s.cache + (long long)page * s.page_bytes,
                       s.page_bytes, bar);
  };
  for (int n = 0; n < kStages - 1; ++n)
    if (tid == 0 || kCopy == kCpAsync)
      issue(n);
  float acc = 0.0f;
  for (int n = 0;; ++n) {
    const int st = n % kStages;
    mbarrier_wait(shared_address(&full[st]), (n / kStages) & 1);
    const bool done = claimed[st] < 0;
    __syncthreads(); // every thread is done with the stage issued next
    if (done)
      break;
    if (tid == 0 || kCopy == kCpAsync)
      issue(n + kStages - 1);
    acc += *reinterpret_cast<const float *>(smem + st * stage_bytes + tid * 16);
  }
  if (acc == 12345.0f) // never: keeps the reads
    s.sink[0] = acc;
}

// One way of streaming a step's pages: its copies, stages and blocks.
struct Way {
  const char *name;
  int elem; // the cache's bytes an element: 1 (fp8) or 2 (bf16)
  bool dynamic;
  int stages;
  void (*launch)(const CUtensorMap &map, const Stream &s, int blocks, cudaStream_t cu_stream);
};

template <int kStages, int kPieces, bool kDynamic, Copy kCopy>
void launch_way(const CUtensorMap &map, const Stream &s, int blocks, cudaStream_t cu_stream) {
  auto kernel = stream<kStages, kPieces, kDynamic, kCopy>;
  const int smem = kStages * (kCopy == kTensor ? 5 * 64 * 128 : s.page_bytes) + 1024;
  static const cudaError_t set = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  (void)set; // a failure shows as the launch's error
  kernel<<<blocks, kThreads, smem, cu_stream>>>(map, s);
}

const Way kWays[] = {
    {"static, 4 stages", 1, false, 4, launch_way<4, 1, false, kBulk>},
    {"static, 6 stages", 1, false, 6, launch_way<6, 1, false, kBulk>},
    {"static, 4 stages, 8 pieces a page", 1, false, 4, launch_way<4, 8, false, kBulk>},
    {"static, 3 stages, cp.async (16-row e4m3 mapping)", 1, false, 3, launch_way<3, 1, false, kCpAsync>},
    {"static, 4 stages, cp.async (16-row e4m3 mapping)", 1, false, 4, launch_way<4, 1, false, kCpAsync>},
    {"static, 3 stages, tensor boxes", 1, false, 3, launch_way<3, 1, false, kTensor>},
    {"static, 4 stages, tensor boxes", 1, false, 4, launch_way<4, 1, false, kTensor>},
    {"dynamic, 4 stages", 1, true, 4, launch_way<4, 1, true, kBulk>},
    {"dynamic, 6 stages", 1, true, 6, launch_way<6, 1, true, kBulk>},
    {"static, 2 stages", 2, false, 2, launch_way<2, 1, false, kBulk>},
    {"static, 3 stages", 2, false, 3, launch_way<3, 1, false, kBulk>},
    {"dynamic, 3 stages", 2, true, 3, launch_way<3, 1, true, kBulk>},
};

// The fp8 cache as [pages][64 keys][576 bytes] for the tensor boxes (64 x 128).
CUresult encode_map(CUtensorMap *map, void *cache, int max_pages) {
  const cuuint64_t dims[3] = {576, 64, (cuuint64_t)max_pages};
  const cuuint64_t strides[2] = {576, 576 * 64};
  const cuuint32_t box[3] = {128, 64, 1}, unit[3] = {1, 1, 1};
  return cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, cache, dims, strides, box, unit,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

} // namespace

#ifdef MLAGEN_FLOOR_LIB
namespace {
// Pages a dynamic launch claims from the counter: every page, and the
// stages - 1 claims past the end that each block issues before it sees one.
unsigned claims(const Way &way, int pages, int blocks) { return pages + blocks * (way.stages - 1); }
constexpr int kNumWays = sizeof(kWays) / sizeof(kWays[0]);
unsigned counted = 0; // the counter's value: launches run in stream order
} // namespace

extern "C" {
// A new counter, zero on the device: dynamic launches claim from 0 again.
void stream_floor_new_counter() { counted = 0; }
int stream_floor_num_ways() { return kNumWays; }
const char *stream_floor_way_name(int way) { return way >= 0 && way < kNumWays ? kWays[way].name : nullptr; }
int stream_floor_way_elem(int way) { return way >= 0 && way < kNumWays ? kWays[way].elem : 0; }

// What the counter holds once every launch so far has run: the caller's
// check that each dynamic launch claimed every page once.
unsigned stream_floor_expected_counter() { return counted; }

// Streams `batch` requests of `pages_per_request` pages (table[request *
// pages_per_request + page]) of a
// cache of `elem`-byte elements, `chunks` blocks a request (static ways) or
// one block an SM (dynamic ways, claiming from *counter, which was zero at
// stream_floor_new_counter() and is touched only by this entry), on
// cu_stream. Returns the launch's CUDA error (0: none).
int stream_floor_launch(int way, void *cache, const int *table, int batch, int pages_per_request, int chunks,
                        unsigned *counter, float *sink, void *cu_stream) {
  if (way < 0 || way >= kNumWays || pages_per_request < 1 || chunks < 1 || pages_per_request % chunks != 0)
    return cudaErrorInvalidValue;
  const Way &w = kWays[way];
  int device = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&device))
    return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device))
    return e;
  const int pages = batch * pages_per_request, blocks = w.dynamic ? sms : batch * chunks;
  CUtensorMap map{};
  if (w.elem == 1 && encode_map(&map, cache, pages) != CUDA_SUCCESS)
    return cudaErrorInvalidValue;
  const Stream s{static_cast<const char *>(cache), table, 64 * 576 * w.elem, pages_per_request, chunks, pages,
                 counter, counted, sink};
  w.launch(map, s, blocks, static_cast<cudaStream_t>(cu_stream));
  if (w.dynamic)
    counted += claims(w, pages, blocks);
  return cudaGetLastError();
}
}
#else
namespace {

#define CHECK(x)                                                                                             \
  do {                                                                                                       \
    cudaError_t e_ = (x);                                                                                    \
    if (e_ != cudaSuccess) {                                                                                 \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e_));                                                  \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

struct Timing {
  float flushed, sustained;
};

Timing run(const Way &way, const CUtensorMap &map, Stream s, int blocks, char *flush, size_t flush_bytes) {
  auto launch = [&] {
    if (way.dynamic)
      CHECK(cudaMemsetAsync(s.counter, 0, sizeof(unsigned)));
    way.launch(map, s, blocks, 0);
  };
  for (int i = 0; i < 5; ++i)
    launch();
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < 30; ++i) {
    CHECK(cudaMemsetAsync(flush, 0, flush_bytes));
    if (way.dynamic)
      CHECK(cudaMemsetAsync(s.counter, 0, sizeof(unsigned)));
    CHECK(cudaEventRecord(a));
    way.launch(map, s, blocks, 0);
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1e3f);
  }
  CHECK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  CHECK(cudaEventRecord(a));
  for (int i = 0; i < 200; ++i)
    launch();
  CHECK(cudaEventRecord(b));
  CHECK(cudaEventSynchronize(b));
  float ms;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return {t[t.size() / 2], ms * 1e3f / 200};
}

} // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t flush_bytes = 256ull << 20;
  const int max_pages = 128 * 64;
  const size_t max_bytes = (size_t)max_pages * 64 * 576 * 2;
  char *cache, *flush;
  int *table;
  unsigned *counter;
  float *sink;
  CHECK(cudaMalloc(&cache, max_bytes));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&table, max_pages * sizeof(int)));
  CHECK(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK(cudaMalloc(&sink, sizeof(float)));
  CHECK(cudaMemset(cache, 1, max_bytes));
  CUtensorMap map{};
  if (CUresult r = encode_map(&map, cache, max_pages); r != CUDA_SUCCESS) {
    std::printf("cuTensorMapEncodeTiled: %d\n", (int)r);
    return 1;
  }
  std::printf("| cache | batch | blocks | way | bytes MB | us after flush | GB/s | us sustained | GB/s |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  struct Case {
    const char *name;
    int elem, batch, chunks;
  };
  for (const Case c : {Case{"fp8", 1, 128, 1}, Case{"fp8", 1, 64, 2}, Case{"bf16", 2, 64, 2}, Case{"bf16", 2, 128, 1}}) {
    const int pages = c.batch * 64;
    std::vector<int> host(pages);
    std::iota(host.begin(), host.end(), 0);
    std::shuffle(host.begin(), host.end(), std::mt19937(7));
    CHECK(cudaMemcpy(table, host.data(), pages * sizeof(int), cudaMemcpyHostToDevice));
    const Stream s{cache, table, 64 * 576 * c.elem, 64, c.chunks, pages, counter, 0, sink};
    const double mb = (double)pages * s.page_bytes / 1e6;
    for (const Way &way : kWays) {
      if (way.elem != c.elem)
        continue;
      const int blocks = way.dynamic ? sms : c.batch * c.chunks;
      const Timing t = run(way, map, s, blocks, flush, flush_bytes);
      std::printf("| %s | %d | %d | %s | %.1f | %.1f | %.0f | %.1f | %.0f |\n", c.name, c.batch, blocks, way.name, mb,
                  t.flushed, mb / t.flushed * 1e3, t.sustained, mb / t.sustained * 1e3);
    }
  }
  return 0;
}
#endif
