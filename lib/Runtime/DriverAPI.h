//===- DriverAPI.h - the GPU library functions the runtime calls -*- C++ -*-===//
//
// The few types and functions of the CUDA driver, NVRTC, HIP and hiprtc that
// the runtime dlsyms, declared here so that building needs no GPU headers:
// handles are opaque pointers, results are ints (0 is success everywhere).
// test/unit/*ABITest.cpp checks these against the real headers where they
// are installed.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DRIVERAPI_H
#define MLAGEN_LIB_RUNTIME_DRIVERAPI_H

#include <cstddef>

namespace mlagen {

namespace cu {
using Result = int;
using Device = int;
using DevicePtr = unsigned long long;
using Context = void *;
using Module = void *;
using Function = void *;
using Stream = void *;
using Graph = void *;
using GraphNode = void *;
using GraphExec = void *;

enum : int {
  kErrorNoDevice = 100,
  kAttributeComputeCapabilityMajor = 75,
  kAttributeComputeCapabilityMinor = 76,
  kAttributeMaxSharedMemoryPerBlockOptin = 97,
  kFunctionAttributeMaxDynamicSharedSizeBytes = 8,
  kLaunchAttributeClusterDimension = 4,
  kLaunchAttributeProgrammaticStreamSerialization = 6,
  kTensorMapDataTypeUint16 = 1,
  kTensorMapInterleaveNone = 0,
  kTensorMapSwizzle128B = 3,
  kTensorMapL2Promotion256B = 3,
  kTensorMapOOBFillNone = 0,
  kTensorMapBytes = 128,
  kGraphKernelNodePortProgrammatic = 1,
  kGraphDependencyTypeProgrammatic = 1,
};

// cuLaunchKernelEx's configuration (CUDA >= 12.0), for programmatic
// dependent launch (an int) and cluster dimensions (three unsigned).
union LaunchAttributeValue {
  char bytes[64];
  int programmaticStreamSerializationAllowed;
  struct {
    unsigned x, y, z;
  } clusterDim;
  void *align;
};
struct LaunchAttribute {
  int id;
  char pad[4];
  LaunchAttributeValue value;
};
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  Stream stream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};

// A graph's kernel node (CUDA_KERNEL_NODE_PARAMS_v2, CUDA >= 12.0).
struct KernelNodeParams {
  Function function;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kernel;  // a CUkernel, used only without `function`
  Context context; // ignored with `function`
};
// An edge between graph nodes (CUgraphEdgeData, CUDA >= 12.3).
struct GraphEdgeData {
  unsigned char fromPort, toPort, type, reserved[5];
};

// Member order follows the symbol table in CudaBackend.cpp.
struct API {
  Result (*init)(unsigned flags);
  Result (*deviceGetCount)(int *count);
  Result (*deviceGet)(Device *device, int ordinal);
  Result (*deviceGetAttribute)(int *value, int attribute, Device device);
  Result (*deviceGetName)(char *name, int size, Device device);
  Result (*devicePrimaryCtxRetain)(Context *context, Device device);
  Result (*devicePrimaryCtxRelease)(Device device);
  Result (*ctxGetCurrent)(Context *context);
  Result (*ctxPushCurrent)(Context context);
  Result (*ctxPopCurrent)(Context *context);
  Result (*ctxSynchronize)();
  Result (*moduleLoadData)(Module *module, const void *image);
  Result (*moduleUnload)(Module module);
  Result (*moduleGetFunction)(Function *function, Module module,
                              const char *name);
  Result (*funcSetAttribute)(Function function, int attribute, int value);
  Result (*launchKernel)(Function function, unsigned gridX, unsigned gridY,
                         unsigned gridZ, unsigned blockX, unsigned blockY,
                         unsigned blockZ, unsigned sharedBytes, Stream stream,
                         void **params, void **extra);
  Result (*memAlloc)(DevicePtr *ptr, size_t bytes);
  Result (*memFree)(DevicePtr ptr);
  Result (*memcpyHtoD)(DevicePtr dst, const void *src, size_t bytes);
  Result (*memcpyDtoH)(void *dst, DevicePtr src, size_t bytes);
  Result (*getErrorName)(Result error, const char **name);
  Result (*getErrorString)(Result error, const char **text);
  // Optional (null on drivers before CUDA 12.0): looked up, not bound.
  Result (*launchKernelEx)(const LaunchConfig *config, Function function,
                           void **params, void **extra);
  // cuTensorMapEncodeTiled (CUDA >= 12.0), optional as well: `map` is a
  // CUtensorMap (128 bytes, 64-byte aligned); the enums are passed as ints.
  Result (*tensorMapEncodeTiled)(void *map, int dataType, unsigned rank,
                                 void *globalAddress,
                                 const unsigned long long *globalDim,
                                 const unsigned long long *globalStrides,
                                 const unsigned *boxDim,
                                 const unsigned *elementStrides,
                                 int interleave, int swizzle, int l2Promotion,
                                 int oobFill);
  // cuStreamIsCapturing (CUDA >= 10.0), optional: status 0 = not capturing.
  Result (*streamIsCapturing)(Stream stream, int *status);
  // cuStreamQuery, optional: 0 when all work in the stream has finished.
  Result (*streamQuery)(Stream stream);
  // Graphs of kernel nodes with programmatic edges (CUDA >= 12.3),
  // optional as a set: all or none are bound.
  Result (*graphCreate)(Graph *graph, unsigned flags);
  Result (*graphDestroy)(Graph graph);
  Result (*graphAddKernelNode)(GraphNode *node, Graph graph,
                               const GraphNode *dependencies,
                               size_t numDependencies,
                               const KernelNodeParams *params);
  Result (*graphKernelNodeSetAttribute)(GraphNode node, int attribute,
                                        const LaunchAttributeValue *value);
  Result (*graphAddDependencies)(Graph graph, const GraphNode *from,
                                 const GraphNode *to,
                                 const GraphEdgeData *edges, size_t count);
  Result (*graphInstantiate)(GraphExec *exec, Graph graph,
                             unsigned long long flags);
  Result (*graphExecDestroy)(GraphExec exec);
  Result (*graphExecKernelNodeSetParams)(GraphExec exec, GraphNode node,
                                         const KernelNodeParams *params);
  Result (*graphLaunch)(GraphExec exec, Stream stream);
};
} // namespace cu

namespace nvrtc {
using Result = int;
using Program = void *;

struct API {
  Result (*version)(int *major, int *minor);
  Result (*createProgram)(Program *program, const char *source,
                          const char *name, int numHeaders,
                          const char *const *headers,
                          const char *const *includeNames);
  Result (*compileProgram)(Program program, int numOptions,
                           const char *const *options);
  Result (*destroyProgram)(Program *program);
  Result (*getProgramLogSize)(Program program, size_t *size);
  Result (*getProgramLog)(Program program, char *log);
  Result (*getCUBINSize)(Program program, size_t *size);
  Result (*getCUBIN)(Program program, char *cubin);
  const char *(*getErrorString)(Result result);
};
} // namespace nvrtc

namespace hip {
using Error = int;
using Module = void *;
using Function = void *;
using Stream = void *;
using DevicePtr = void *;

struct API {
  Error (*init)(unsigned flags);
  Error (*getDeviceCount)(int *count);
  Error (*getDevice)(int *device);
  Error (*setDevice)(int device);
  // hipDeviceProp_t changes across ROCm releases: HipBackend passes an
  // oversized buffer and reads only what it can find without the layout.
  Error (*getDeviceProperties)(void *properties, int device);
  Error (*moduleLoadData)(Module *module, const void *image);
  Error (*moduleUnload)(Module module);
  Error (*moduleGetFunction)(Function *function, Module module,
                             const char *name);
  Error (*moduleLaunchKernel)(Function function, unsigned gridX,
                              unsigned gridY, unsigned gridZ, unsigned blockX,
                              unsigned blockY, unsigned blockZ,
                              unsigned sharedBytes, Stream stream,
                              void **params, void **extra);
  Error (*malloc)(void **ptr, size_t bytes);
  Error (*free)(void *ptr);
  Error (*memcpyHtoD)(DevicePtr dst, void *src, size_t bytes);
  Error (*memcpyDtoH)(void *dst, DevicePtr src, size_t bytes);
  Error (*deviceSynchronize)();
  const char *(*getErrorString)(Error error);
  // hipStreamIsCapturing, optional: status 0 = not capturing.
  Error (*streamIsCapturing)(Stream stream, int *status);
};
} // namespace hip

namespace hiprtc {
using Result = int;
using Program = void *;

struct API {
  Result (*createProgram)(Program *program, const char *source,
                          const char *name, int numHeaders,
                          const char **headers, const char **includeNames);
  Result (*compileProgram)(Program program, int numOptions,
                           const char **options);
  Result (*destroyProgram)(Program *program);
  Result (*getProgramLogSize)(Program program, size_t *size);
  Result (*getProgramLog)(Program program, char *log);
  Result (*getCodeSize)(Program program, size_t *size);
  Result (*getCode)(Program program, char *code);
  const char *(*getErrorString)(Result result);
};
} // namespace hiprtc

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DRIVERAPI_H
