//===- DeviceCompiler.h - device source to code object ---------*- C++ -*-===//
//
// A DeviceCompiler turns the generator's one translation unit into a code
// object: a cubin (NVRTC) or an hsaco (hiprtc, clang-22). Its identity and
// flags are part of every cache key, so a compiler upgrade never reuses an
// old code object. A compiler that cannot target an arch says so with a
// Status; it is never asked to try (ROCm 5.2's hiprtc aborts the process
// for gfx94x).
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DEVICECOMPILER_H
#define MLAGEN_LIB_RUNTIME_DEVICECOMPILER_H

#include "mlagen/Runtime/Signature.h"
#include "mlagen/Runtime/SourceGenerator.h"
#include "mlagen/Runtime/Status.h"

#include <memory>
#include <string>

namespace mlagen {

class DeviceCompiler {
public:
  virtual ~DeviceCompiler() = default;

  // Name and version, e.g. "nvrtc 13.0" or "clang Debian clang version 22...".
  virtual std::string identity() const = 0;
  // The options that decide the code object, e.g. "--gpu-architecture=sm_90a
  // -std=c++17 -default-device --split-compile=2".
  virtual std::string flags(Arch arch) const = 0;
  // Ok if this compiler can target `arch`, else Unsupported saying why.
  virtual Status checkTarget(Arch arch) const = 0;
  // Compiles `kernel.source` for `arch` into `binary`. Checks the target
  // first. CompileError carries the compiler's log. Thread-safe.
  virtual Status compile(const GeneratedKernel &kernel, Arch arch,
                         std::string &binary) = 0;
};

// Each returns NoBackend naming what it looked for when the compiler is not
// installed. NVRTC compiles sm_80 kernels for `portableTarget` ("sm_80",
// or a later device's own target such as "sm_90" or "sm_100").
Status loadNvrtcCompiler(std::unique_ptr<DeviceCompiler> &out,
                         const std::string &portableTarget = "sm_80");
Status loadHiprtcCompiler(std::unique_ptr<DeviceCompiler> &out);
Status findClangCompiler(std::unique_ptr<DeviceCompiler> &out);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DEVICECOMPILER_H
