//===- CudaABITest.cpp - DriverAPI.h against cuda.h and nvrtc.h -----------===//
//
// Built only where CUDA's headers are installed. Every check is a
// static_assert: a wrong declaration fails the build, not a GPU run.
//
//===----------------------------------------------------------------------===//

#include "ABICompatible.h"
#include "DriverAPI.h"

#include <cstddef>
#include <cuda.h>
#include <nvrtc.h>

#include <catch2/catch.hpp>

using namespace mlagen;
using mlagen::test::abiCompatible;

#define CHECK_ABI(member, function)                                            \
  static_assert(abiCompatible<decltype(API::member), decltype(&function)>,     \
                #function " does not match DriverAPI.h")

namespace cuda_check {
using API = cu::API;
CHECK_ABI(init, cuInit);
CHECK_ABI(deviceGetCount, cuDeviceGetCount);
CHECK_ABI(deviceGet, cuDeviceGet);
CHECK_ABI(deviceGetAttribute, cuDeviceGetAttribute);
CHECK_ABI(deviceGetName, cuDeviceGetName);
CHECK_ABI(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
CHECK_ABI(devicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
CHECK_ABI(ctxGetCurrent, cuCtxGetCurrent);
CHECK_ABI(ctxPushCurrent, cuCtxPushCurrent_v2);
CHECK_ABI(ctxPopCurrent, cuCtxPopCurrent_v2);
CHECK_ABI(ctxSynchronize, cuCtxSynchronize);
CHECK_ABI(moduleLoadData, cuModuleLoadData);
CHECK_ABI(moduleUnload, cuModuleUnload);
CHECK_ABI(moduleGetFunction, cuModuleGetFunction);
CHECK_ABI(funcSetAttribute, cuFuncSetAttribute);
CHECK_ABI(launchKernel, cuLaunchKernel);
CHECK_ABI(memAlloc, cuMemAlloc_v2);
CHECK_ABI(memFree, cuMemFree_v2);
CHECK_ABI(memcpyHtoD, cuMemcpyHtoD_v2);
CHECK_ABI(memcpyDtoH, cuMemcpyDtoH_v2);
CHECK_ABI(getErrorName, cuGetErrorName);
CHECK_ABI(getErrorString, cuGetErrorString);
CHECK_ABI(launchKernelEx, cuLaunchKernelEx);
CHECK_ABI(tensorMapEncodeTiled, cuTensorMapEncodeTiled);
CHECK_ABI(streamIsCapturing, cuStreamIsCapturing);
CHECK_ABI(streamQuery, cuStreamQuery);
CHECK_ABI(graphCreate, cuGraphCreate);
CHECK_ABI(graphDestroy, cuGraphDestroy);
CHECK_ABI(graphAddKernelNode, cuGraphAddKernelNode_v2);
CHECK_ABI(graphKernelNodeSetAttribute, cuGraphKernelNodeSetAttribute);
CHECK_ABI(graphAddDependencies, cuGraphAddDependencies_v2);
CHECK_ABI(graphInstantiate, cuGraphInstantiateWithFlags);
CHECK_ABI(graphExecDestroy, cuGraphExecDestroy);
CHECK_ABI(graphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2);
CHECK_ABI(graphLaunch, cuGraphLaunch);

static_assert(int(cu::kErrorNoDevice) == int(CUDA_ERROR_NO_DEVICE));
static_assert(int(cu::kAttributeComputeCapabilityMajor) ==
              int(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
static_assert(int(cu::kAttributeComputeCapabilityMinor) ==
              int(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
static_assert(int(cu::kAttributeMaxSharedMemoryPerBlockOptin) ==
              int(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
static_assert(int(cu::kFunctionAttributeMaxDynamicSharedSizeBytes) ==
              int(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
static_assert(sizeof(cu::DevicePtr) == sizeof(CUdeviceptr));
static_assert(int(cu::kLaunchAttributeProgrammaticStreamSerialization) ==
              int(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION));
static_assert(sizeof(cu::LaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(int(cu::kTensorMapDataTypeUint16) ==
              int(CU_TENSOR_MAP_DATA_TYPE_UINT16));
static_assert(int(cu::kTensorMapInterleaveNone) ==
              int(CU_TENSOR_MAP_INTERLEAVE_NONE));
static_assert(int(cu::kTensorMapSwizzle128B) == int(CU_TENSOR_MAP_SWIZZLE_128B));
static_assert(int(cu::kTensorMapL2Promotion256B) ==
              int(CU_TENSOR_MAP_L2_PROMOTION_L2_256B));
static_assert(int(cu::kTensorMapOOBFillNone) ==
              int(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
static_assert(int(cu::kTensorMapBytes) == sizeof(CUtensorMap));
static_assert(offsetof(cu::LaunchAttribute, value) ==
              offsetof(CUlaunchAttribute, value));
static_assert(sizeof(cu::LaunchConfig) == sizeof(CUlaunchConfig));
static_assert(offsetof(cu::LaunchConfig, stream) ==
              offsetof(CUlaunchConfig, hStream));
static_assert(offsetof(cu::LaunchConfig, attrs) ==
              offsetof(CUlaunchConfig, attrs));
static_assert(offsetof(cu::LaunchConfig, numAttrs) ==
              offsetof(CUlaunchConfig, numAttrs));
static_assert(sizeof(cu::LaunchAttributeValue) ==
              sizeof(CUlaunchAttributeValue));
static_assert(sizeof(cu::KernelNodeParams) ==
              sizeof(CUDA_KERNEL_NODE_PARAMS_v2));
static_assert(offsetof(cu::KernelNodeParams, sharedMemBytes) ==
              offsetof(CUDA_KERNEL_NODE_PARAMS_v2, sharedMemBytes));
static_assert(offsetof(cu::KernelNodeParams, kernelParams) ==
              offsetof(CUDA_KERNEL_NODE_PARAMS_v2, kernelParams));
static_assert(offsetof(cu::KernelNodeParams, context) ==
              offsetof(CUDA_KERNEL_NODE_PARAMS_v2, ctx));
static_assert(sizeof(cu::GraphEdgeData) == sizeof(CUgraphEdgeData));
static_assert(offsetof(cu::GraphEdgeData, type) ==
              offsetof(CUgraphEdgeData, type));
static_assert(int(cu::kGraphKernelNodePortProgrammatic) ==
              int(CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC));
static_assert(int(cu::kGraphDependencyTypeProgrammatic) ==
              int(CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC));
static_assert(int(cu::kLaunchAttributeClusterDimension) ==
              int(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION));
} // namespace cuda_check

namespace nvrtc_check {
using API = nvrtc::API;
CHECK_ABI(version, nvrtcVersion);
CHECK_ABI(createProgram, nvrtcCreateProgram);
CHECK_ABI(compileProgram, nvrtcCompileProgram);
CHECK_ABI(destroyProgram, nvrtcDestroyProgram);
CHECK_ABI(getProgramLogSize, nvrtcGetProgramLogSize);
CHECK_ABI(getProgramLog, nvrtcGetProgramLog);
CHECK_ABI(getCUBINSize, nvrtcGetCUBINSize);
CHECK_ABI(getCUBIN, nvrtcGetCUBIN);
CHECK_ABI(getErrorString, nvrtcGetErrorString);
} // namespace nvrtc_check

TEST_CASE("DriverAPI.h matches cuda.h and nvrtc.h", "[abi]") {
  SUCCEED("checked at compile time");
}
