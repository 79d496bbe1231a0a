// One host launch for a split decode step: the decode grid launching its
// reduce itself as a device-side tail launch (CUDA dynamic parallelism,
// cudaStreamTailLaunch: the child starts once the whole parent grid has
// finished), against the two host launches mlagen makes (decode, then the
// reduce with programmatic stream serialization). Both kernels take a
// 384-byte parameter block (DecodeParams' size); the "decode" spins for a
// given time on 132 blocks, the "reduce" for 2 us on 96. Prints, per way:
// host time a step (median of 500 alone on an idle stream, and back to
// back), device time a step (CUDA events, median of 200), and whether the
// reduce ran every time, eagerly and replayed from a captured graph.
// Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90a -rdc=true -o tail_launch bench/probes/tail_launch.cu -lcudadevrt
//   ./tail_launch [decode_us]
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

struct Params {
  unsigned long long spin_ns;
  unsigned int *count; // reduce blocks run
  unsigned char pad[384 - 16];
};

__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__device__ void spin(unsigned long long ns) {
  const unsigned long long end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

__global__ void reduce(Params p) {
  cudaGridDependencySynchronize(); // (PDL launches; a no-op otherwise)
  spin(2000);
  if (threadIdx.x == 0)
    atomicAdd(p.count, 1u);
}

template <bool kTail> __global__ void decode(Params p) {
  if (kTail && blockIdx.x == 0 && threadIdx.x == 0)
    reduce<<<96, 384, 0, cudaStreamTailLaunch>>>(p);
  spin(p.spin_ns);
}

#define CK(x)                                                                                                          \
  do {                                                                                                                 \
    cudaError_t e = (x);                                                                                               \
    if (e != cudaSuccess) {                                                                                            \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e));                                                              \
      return 1;                                                                                                        \
    }                                                                                                                  \
  } while (0)
using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  const double decode_us = argc > 1 ? std::atof(argv[1]) : 30.0;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned int *count;
  CK(cudaMalloc(&count, 4));
  Params p = {};
  p.spin_ns = (unsigned long long)(decode_us * 1000);
  p.count = count;
  cudaLaunchAttribute pdl = {};
  pdl.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl.val.programmaticStreamSerializationAllowed = 1;
  auto launch = [&](void (*f)(Params), unsigned grid, bool with_pdl) {
    cudaLaunchConfig_t c = {};
    c.gridDim = dim3(grid);
    c.blockDim = dim3(384);
    c.stream = s;
    c.attrs = &pdl;
    c.numAttrs = with_pdl ? 1 : 0;
    return cudaLaunchKernelEx(&c, f, p);
  };
  // way 0: decode alone (one launch, no reduce); 1: decode + reduce, two
  // host launches (PDL on the reduce); 2: decode that tail-launches reduce.
  const char *names[] = {"one launch, no reduce", "two launches (decode, reduce + PDL)",
                         "one launch, reduce as a device tail launch"};
  auto step = [&](int way) {
    cudaError_t e = way == 2 ? launch(decode<true>, 132, false) : launch(decode<false>, 132, false);
    if (e == cudaSuccess && way == 1)
      e = launch(reduce, 96, true);
    if (e != cudaSuccess)
      std::printf("launch failed: %s\n", cudaGetErrorString(e));
  };
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int round = 0; round < 2; ++round)
    for (int way = 0; way < 3; ++way) {
      CK(cudaMemset(count, 0, 4));
      for (int i = 0; i < 100; ++i)
        step(way);
      CK(cudaStreamSynchronize(s));
      std::vector<double> alone, device;
      for (int i = 0; i < 500; ++i) {
        CK(cudaStreamSynchronize(s));
        const auto t = Clock::now();
        step(way);
        alone.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
      }
      for (int i = 0; i < 200; ++i) {
        CK(cudaEventRecord(a, s));
        step(way);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        device.push_back(ms * 1e3);
      }
      const auto t = Clock::now();
      for (int i = 0; i < 100; ++i)
        step(way);
      const double back_to_back = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 100;
      CK(cudaStreamSynchronize(s));
      CK(cudaGetLastError());
      unsigned int ran;
      CK(cudaMemcpy(&ran, count, 4, cudaMemcpyDeviceToHost));
      const unsigned int expected = way == 0 ? 0 : 96u * 900;
      std::sort(alone.begin(), alone.end());
      std::sort(device.begin(), device.end());
      std::printf("%-45s host %.2f us median alone (p90 %.2f), %.2f back to back; device %.2f us median; "
                  "reduce blocks %u of %u\n",
                  names[way], alone[alone.size() / 2], alone[alone.size() * 9 / 10], back_to_back,
                  device[device.size() / 2], ran, expected);
    }
  // The tail-launching step captured into a graph and replayed.
  for (int way = 1; way < 3; ++way) {
    CK(cudaMemset(count, 0, 4));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    step(way);
    CK(cudaStreamEndCapture(s, &g));
    cudaGraphExec_t ge;
    cudaError_t e = cudaGraphInstantiate(&ge, g, 0);
    if (e != cudaSuccess) {
      std::printf("%-45s graph: instantiate failed: %s\n", names[way], cudaGetErrorString(e));
      cudaGetLastError();
      continue;
    }
    std::vector<double> device;
    for (int i = 0; i < 50; ++i) {
      CK(cudaEventRecord(a, s));
      CK(cudaGraphLaunch(ge, s));
      CK(cudaEventRecord(b, s));
      CK(cudaEventSynchronize(b));
      float ms;
      CK(cudaEventElapsedTime(&ms, a, b));
      device.push_back(ms * 1e3);
    }
    CK(cudaGetLastError());
    unsigned int ran;
    CK(cudaMemcpy(&ran, count, 4, cudaMemcpyDeviceToHost));
    std::sort(device.begin(), device.end());
    std::printf("%-45s graph replays: device %.2f us median; reduce blocks %u of %u\n", names[way],
                device[device.size() / 2], ran, 96u * 50);
  }
  return 0;
}
