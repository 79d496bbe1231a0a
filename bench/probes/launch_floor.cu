// The driver's launch floor: host time of cuLaunchKernel and of
// cuLaunchKernelEx with programmatic stream serialization (how mlagen
// launches decode and reduce on sm_90), for empty kernels taking a 384-byte
// parameter block (DecodeParams' size), one and two launches a step (and
// two where the second takes an 8-byte block, a pointer), timed
// as mlagen-gpu-decode-tests times runDecode. Build on a machine with nvcc:
//   nvcc -arch=sm_90a -cubin -o launch_floor.cubin bench/probes/launch_floor.cu
//   nvcc -o launch_floor bench/probes/launch_floor.cu -L/usr/local/cuda/lib64/stubs -lcuda
// and run `./launch_floor launch_floor.cubin` on the GPU machine.
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
struct Params { unsigned char bytes[384]; };
extern "C" __global__ void nop_a(Params p) { if (p.bytes[0] == 7 && threadIdx.x == 1000) asm volatile("trap;"); }
extern "C" __global__ void nop_b(Params p) { if (p.bytes[1] == 7 && threadIdx.x == 1000) asm volatile("trap;"); }
// A reduce that would take only a pointer to the block the decode wrote.
struct Small { const Params *decode; };
extern "C" __global__ void nop_c(Small p) { if (p.decode == nullptr && threadIdx.x == 1000) asm volatile("trap;"); }
#define CK(x) do { CUresult r = (x); if (r) { std::printf("%s failed %d\n", #x, r); return 1; } } while (0)
using Clock = std::chrono::steady_clock;
int main(int argc, char **argv) {
  if (argc != 2) {
    std::printf("usage: launch_floor CUBIN\n");
    return 2;
  }
  CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CUmodule mod; CK(cuModuleLoad(&mod, argv[1]));
  CUfunction a, b, c8; CK(cuModuleGetFunction(&a, mod, "nop_a")); CK(cuModuleGetFunction(&b, mod, "nop_b"));
  CK(cuModuleGetFunction(&c8, mod, "nop_c"));
  Small small = {nullptr}; small.decode = reinterpret_cast<const Params *>(16); void *small_args[] = {&small};
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  Params p = {}; void *args[] = {&p};
  CUlaunchAttribute attr = {}; attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; attr.value.programmaticStreamSerializationAllowed = 1;
  auto plain = [&](CUfunction f, unsigned grid) { return cuLaunchKernel(f, grid, 1, 1, 384, 1, 1, 0, s, args, nullptr); };
  auto ex = [&](CUfunction f, unsigned grid, unsigned attrs) {
    CUlaunchConfig c = {}; c.gridDimX = grid; c.gridDimY = 1; c.gridDimZ = 1; c.blockDimX = 384; c.blockDimY = 1; c.blockDimZ = 1; c.hStream = s; c.attrs = &attr; c.numAttrs = attrs;
    return cuLaunchKernelEx(&c, f, f == c8 ? small_args : args, nullptr); };
  // kind 0: cuLaunchKernel; 1: cuLaunchKernelEx with PDL; 2: without
  // attributes; 3: as 1, the second kernel taking an 8-byte block.
  struct Case { const char *name; int launches; int kind; };
  Case cases[] = {{"cuLaunchKernel x1", 1, 0}, {"cuLaunchKernelEx+PDL x1", 1, 1}, {"cuLaunchKernelEx x1", 1, 2},
                  {"cuLaunchKernelEx+PDL x2 (decode + reduce)", 2, 1}, {"cuLaunchKernelEx x2", 2, 2}, {"cuLaunchKernel x2", 2, 0},
                  {"cuLaunchKernelEx+PDL x2, reduce of 8 bytes", 2, 3}};
  for (int round = 0; round < 2; ++round)
  for (const Case &c : cases) {
    auto step = [&] { for (int i = 0; i < c.launches; ++i) { CUresult r = c.kind ? ex(i ? (c.kind == 3 ? c8 : b) : a, i ? 96 : 132, c.kind == 2 ? 0 : 1) : plain(i ? b : a, i ? 96 : 132); if (r) std::printf("launch failed %d\n", r); } };
    for (int i = 0; i < 200; ++i) step();
    cuStreamSynchronize(s);
    std::vector<double> alone;
    for (int i = 0; i < 500; ++i) { cuStreamSynchronize(s); auto t = Clock::now(); step(); alone.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count()); }
    cuStreamSynchronize(s);
    std::sort(alone.begin(), alone.end());
    auto t = Clock::now(); for (int i = 0; i < 100; ++i) step(); double btb = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 100; cuStreamSynchronize(s);
    std::printf("%-45s back to back %.2f us a step; alone median %.2f us, p90 %.2f\n", c.name, btb, alone[alone.size() / 2], alone[alone.size() * 9 / 10]);
  }
  // The queries runDecode may add to a step: graph capture, current context.
  for (int round = 0; round < 2; ++round) {
    CUstreamCaptureStatus status;
    auto t = Clock::now();
    for (int i = 0; i < 1000; ++i)
      cuStreamIsCapturing(s, &status);
    const double capture = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 1000;
    CUcontext current;
    t = Clock::now();
    for (int i = 0; i < 1000; ++i)
      cuCtxGetCurrent(&current);
    const double context = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 1000;
    std::printf("cuStreamIsCapturing %.3f us a call; cuCtxGetCurrent %.3f us\n", capture, context);
  }
  return 0;
}
