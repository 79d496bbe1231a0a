//===- CompilerSelection.h - which compiler builds which arch --*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_COMPILERSELECTION_H
#define MLAGEN_LIB_RUNTIME_COMPILERSELECTION_H

#include "DeviceCompiler.h"
#include "mlagen/Runtime/Runtime.h"

#include <mutex>

namespace mlagen {

// Loads each compiler on first use (a CUDA host never probes clang) and
// routes an arch to one. Auto: NVRTC for sm_*; hiprtc for gfx90a, clang if
// hiprtc is missing; clang for gfx942/gfx950, which hiprtc (ROCm 5.2) must
// never see. Thread-safe.
class CompilerSelection {
public:
  explicit CompilerSelection(CompilerKind preference)
      : preference_(preference) {}

  // What NVRTC compiles the portable sm_80 kernels for (DeviceBackend::
  // portableTarget(); "sm_80" without a device). Set before the first
  // select().
  void setPortableNvidiaTarget(std::string target) {
    portableNvidiaTarget_ = std::move(target);
  }

  // NoBackend when no installed compiler can build `arch`, Unsupported when
  // the preferred one cannot target it.
  Status select(Arch arch, DeviceCompiler *&out);

private:
  struct Slot {
    std::once_flag once;
    Status status;
    std::unique_ptr<DeviceCompiler> compiler;
  };
  Status load(CompilerKind kind, DeviceCompiler *&out);

  CompilerKind preference_;
  std::string portableNvidiaTarget_ = "sm_80";
  Slot nvrtc_, hiprtc_, clang_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_COMPILERSELECTION_H
