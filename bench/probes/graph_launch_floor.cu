// Host time of decode + reduce as one graph launch instead of two stream
// launches: a two-node graph (decode -> reduce, a programmatic edge or a
// full one) instantiated once, each step updating both kernel nodes'
// 384-byte parameter blocks (cuGraphExecKernelNodeSetParams) and launching
// it (cuGraphLaunch). Beside it, the two cuLaunchKernelEx + PDL launches
// runDecode makes today (launch_floor.cu's floor). Build with nvcc:
//   nvcc -arch=sm_90a -cubin -o graph_launch_floor.cubin bench/probes/graph_launch_floor.cu
//   nvcc -o graph_launch_floor bench/probes/graph_launch_floor.cu -L/usr/local/cuda/lib64/stubs -lcuda
// (and a one-node graph beside one launch), and run `./graph_launch_floor graph_launch_floor.cubin` on the GPU machine.
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
struct Params { unsigned char bytes[384]; };
extern "C" __global__ void nop_a(Params p) { if (p.bytes[0] == 7 && threadIdx.x == 1000) asm volatile("trap;"); }
extern "C" __global__ void nop_b(Params p) { if (p.bytes[1] == 7 && threadIdx.x == 1000) asm volatile("trap;"); }
// Each block adds its step's byte to a counter: proves the updated blocks reach the device.
// Spins for `cycles` clocks: keeps a stream busy while queries are timed.
extern "C" __global__ void spin(long long cycles) { long long t = clock64(); while (clock64() - t < cycles) {} }
extern "C" __global__ void count_a(Params p, unsigned *sum) { if (threadIdx.x == 0) atomicAdd(sum, p.bytes[5]); }
extern "C" __global__ void count_b(Params p, unsigned *sum) { if (threadIdx.x == 0) atomicAdd(sum + 1, p.bytes[5]); }
#define CK(x) do { CUresult r = (x); if (r) { std::printf("%s failed %d\n", #x, r); return 1; } } while (0)
using Clock = std::chrono::steady_clock;
int main(int argc, char **argv) {
  if (argc != 2) { std::printf("usage: graph_launch_floor CUBIN\n"); return 2; }
  CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CUmodule mod; CK(cuModuleLoad(&mod, argv[1]));
  CUfunction a, b; CK(cuModuleGetFunction(&a, mod, "nop_a")); CK(cuModuleGetFunction(&b, mod, "nop_b"));
  CUstream s; CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  Params p = {}; void *args[] = {&p};
  CUlaunchAttribute attr = {}; attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; attr.value.programmaticStreamSerializationAllowed = 1;
  auto ex = [&](CUfunction f, unsigned grid) {
    CUlaunchConfig c = {}; c.gridDimX = grid; c.gridDimY = 1; c.gridDimZ = 1; c.blockDimX = 384; c.blockDimY = 1; c.blockDimZ = 1; c.hStream = s; c.attrs = &attr; c.numAttrs = 1;
    return cuLaunchKernelEx(&c, f, args, nullptr); };
  auto node_params = [&](CUfunction f, unsigned grid, void **kargs) {
    CUDA_KERNEL_NODE_PARAMS k = {}; k.func = f; k.gridDimX = grid; k.gridDimY = 1; k.gridDimZ = 1; k.blockDimX = 384; k.blockDimY = 1; k.blockDimZ = 1; k.kernelParams = kargs; return k; };
  // Two graphs: a programmatic edge (the reduce may start at the decode's
  // griddepcontrol.launch_dependents, as with PDL) and a plain one.
  CUgraphExec execs[2]; CUgraphNode nodes[2][2];
  // And a graph of the decode alone: a one-launch op as a graph.
  CUgraphExec single; CUgraphNode single_node;
  {
    CUgraph graph; CK(cuGraphCreate(&graph, 0));
    CUDA_KERNEL_NODE_PARAMS ka = node_params(a, 132, args);
    CK(cuGraphAddKernelNode(&single_node, graph, nullptr, 0, &ka));
    CK(cuGraphInstantiate(&single, graph, 0));
  }
  for (int g = 0; g < 2; ++g) {
    CUgraph graph; CK(cuGraphCreate(&graph, 0));
    CUDA_KERNEL_NODE_PARAMS ka = node_params(a, 132, args), kb = node_params(b, 96, args);
    CK(cuGraphAddKernelNode(&nodes[g][0], graph, nullptr, 0, &ka));
    CK(cuGraphAddKernelNode(&nodes[g][1], graph, nullptr, 0, &kb));
    CUgraphEdgeData edge = {}; if (g == 0) { edge.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC; edge.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC; }
    CK(cuGraphAddDependencies(graph, &nodes[g][0], &nodes[g][1], &edge, 1));
    CK(cuGraphInstantiate(&execs[g], graph, 0));
  }
  // kind 0: two launches, Ex + PDL; 1/2: graph (programmatic / full edge),
  // both nodes updated each step; 3: graph launched with no update.
  struct Case { const char *name; int kind; };
  Case cases[] = {{"cuLaunchKernelEx+PDL x2 (runDecode today)", 0}, {"graph, programmatic edge, 2 updates + launch", 1},
                  {"graph, full edge, 2 updates + launch", 2}, {"graph, programmatic edge, launch only", 3}, {"cuLaunchKernelEx+PDL x1", 4},
                  {"graph of one node, 1 update + launch", 5}};
  unsigned step_no = 0;
  for (int round = 0; round < 3; ++round)
  for (const Case &c : cases) {
    auto step = [&] {
      ++step_no; p.bytes[5] = static_cast<unsigned char>(step_no);
      CUresult r = CUDA_SUCCESS;
      if (c.kind == 0) { r = ex(a, 132); if (!r) r = ex(b, 96); }
      else if (c.kind == 4) r = ex(a, 132);
      else if (c.kind == 5) {
        CUDA_KERNEL_NODE_PARAMS ka = node_params(a, 132, args);
        r = cuGraphExecKernelNodeSetParams(single, single_node, &ka);
        if (!r) r = cuGraphLaunch(single, s);
      }
      else {
        const int g = c.kind == 2 ? 1 : 0;
        if (c.kind != 3) {
          CUDA_KERNEL_NODE_PARAMS ka = node_params(a, 132, args), kb = node_params(b, 96, args);
          r = cuGraphExecKernelNodeSetParams(execs[g], nodes[g][0], &ka);
          if (!r) r = cuGraphExecKernelNodeSetParams(execs[g], nodes[g][1], &kb);
        }
        if (!r) r = cuGraphLaunch(execs[g], s);
      }
      if (r) std::printf("step failed %d\n", r); };
    for (int i = 0; i < 200; ++i) step();
    cuStreamSynchronize(s);
    std::vector<double> alone;
    for (int i = 0; i < 500; ++i) { cuStreamSynchronize(s); auto t = Clock::now(); step(); alone.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count()); }
    cuStreamSynchronize(s);
    std::sort(alone.begin(), alone.end());
    auto t = Clock::now(); for (int i = 0; i < 100; ++i) step(); double btb = std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 100; cuStreamSynchronize(s);
    std::printf("%-48s back to back %.2f us a step; alone median %.2f us, p90 %.2f\n", c.name, btb, alone[alone.size() / 2], alone[alone.size() * 9 / 10]);
  }
  // cuStreamQuery on an idle stream: what asking whether to use the graph costs.
  for (int round = 0; round < 2; ++round) {
    CK(cuStreamSynchronize(s));
    auto t = Clock::now();
    for (int i = 0; i < 1000; ++i)
      cuStreamQuery(s);
    std::printf("cuStreamQuery (idle stream) %.3f us a call\n", std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 1000);
  }
  // And on a busy stream: a kernel spinning ~20 ms, then 1000 queries.
  CUfunction spin; CK(cuModuleGetFunction(&spin, mod, "spin"));
  for (int round = 0; round < 2; ++round) {
    long long cycles = 40000000; void *spin_args[] = {&cycles};
    CK(cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, s, spin_args, nullptr));
    auto t = Clock::now();
    int busy = 0;
    for (int i = 0; i < 1000; ++i)
      busy += cuStreamQuery(s) == CUDA_ERROR_NOT_READY;
    std::printf("cuStreamQuery (busy stream) %.3f us a call (%d of 1000 not ready)\n", std::chrono::duration<double, std::micro>(Clock::now() - t).count() / 1000, busy);
    CK(cuStreamSynchronize(s));
  }
  // Correctness of the updates: each step's byte must reach both kernels.
  CUfunction ca, cb; CK(cuModuleGetFunction(&ca, mod, "count_a")); CK(cuModuleGetFunction(&cb, mod, "count_b"));
  CUdeviceptr sum; CK(cuMemAlloc(&sum, 8)); CK(cuMemsetD32(sum, 0, 2));
  void *cargs[] = {&p, &sum};
  CUgraph graph; CK(cuGraphCreate(&graph, 0)); CUgraphNode n[2];
  CUDA_KERNEL_NODE_PARAMS ka = node_params(ca, 4, cargs), kb = node_params(cb, 2, cargs);
  CK(cuGraphAddKernelNode(&n[0], graph, nullptr, 0, &ka)); CK(cuGraphAddKernelNode(&n[1], graph, &n[0], 1, &kb));
  CUgraphExec exec; CK(cuGraphInstantiate(&exec, graph, 0));
  unsigned expect_a = 0, expect_b = 0;
  for (unsigned i = 1; i <= 50; ++i) {
    p.bytes[5] = static_cast<unsigned char>(i);
    ka = node_params(ca, 1 + i % 5, cargs); kb = node_params(cb, 1 + i % 3, cargs);
    CK(cuGraphExecKernelNodeSetParams(exec, n[0], &ka)); CK(cuGraphExecKernelNodeSetParams(exec, n[1], &kb));
    CK(cuGraphLaunch(exec, s)); expect_a += i * (1 + i % 5); expect_b += i * (1 + i % 3);
  }
  unsigned got[2]; CK(cuStreamSynchronize(s)); CK(cuMemcpyDtoH(got, sum, 8));
  std::printf("updates reach the device (grids and blocks changed every step): a %u / %u, b %u / %u: %s\n", got[0], expect_a, got[1], expect_b,
              got[0] == expect_a && got[1] == expect_b ? "ok" : "WRONG");
  return 0;
}
