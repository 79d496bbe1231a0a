//===- HipABITest.cpp - DriverAPI.h against ROCm 5.2's HIP headers --------===//
//
// Built only where the HIP headers are installed (libamdhip64-dev). The AMD
// flavour of the headers; every check is a static_assert.
//
//===----------------------------------------------------------------------===//

#define __HIP_PLATFORM_AMD__ 1

#include "ABICompatible.h"
#include "DriverAPI.h"

#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>

#include <catch2/catch.hpp>

using namespace mlagen;
using mlagen::test::abiCompatible;

#define CHECK_ABI(member, function)                                            \
  static_assert(abiCompatible<decltype(API::member), decltype(&function)>,     \
                #function " does not match DriverAPI.h")

namespace hip_check {
using API = hip::API;
CHECK_ABI(init, hipInit);
CHECK_ABI(getDeviceCount, hipGetDeviceCount);
CHECK_ABI(getDevice, hipGetDevice);
CHECK_ABI(setDevice, hipSetDevice);
CHECK_ABI(getDeviceProperties, hipGetDeviceProperties);
CHECK_ABI(moduleLoadData, hipModuleLoadData);
CHECK_ABI(moduleUnload, hipModuleUnload);
CHECK_ABI(moduleGetFunction, hipModuleGetFunction);
CHECK_ABI(moduleLaunchKernel, hipModuleLaunchKernel);
// hipMalloc has C++ template overloads: name the C one, which must exist.
[[maybe_unused]] constexpr hipError_t (*cHipMalloc)(void **, size_t) =
    &hipMalloc;
static_assert(abiCompatible<decltype(API::malloc), decltype(cHipMalloc)>);
CHECK_ABI(free, hipFree);
CHECK_ABI(memcpyHtoD, hipMemcpyHtoD);
CHECK_ABI(memcpyDtoH, hipMemcpyDtoH);
CHECK_ABI(deviceSynchronize, hipDeviceSynchronize);
CHECK_ABI(getErrorString, hipGetErrorString);
CHECK_ABI(streamIsCapturing, hipStreamIsCapturing);
// The buffer HipBackend passes is far larger than the struct.
static_assert(sizeof(hipDeviceProp_t) < 16384);
} // namespace hip_check

namespace hiprtc_check {
using API = hiprtc::API;
CHECK_ABI(createProgram, hiprtcCreateProgram);
CHECK_ABI(compileProgram, hiprtcCompileProgram);
CHECK_ABI(destroyProgram, hiprtcDestroyProgram);
CHECK_ABI(getProgramLogSize, hiprtcGetProgramLogSize);
CHECK_ABI(getProgramLog, hiprtcGetProgramLog);
CHECK_ABI(getCodeSize, hiprtcGetCodeSize);
CHECK_ABI(getCode, hiprtcGetCode);
CHECK_ABI(getErrorString, hiprtcGetErrorString);
} // namespace hiprtc_check

TEST_CASE("DriverAPI.h matches ROCm's hip_runtime_api.h and hiprtc.h",
          "[abi]") {
  SUCCEED("checked at compile time");
}
