//===- CompilerSelection.cpp - which compiler builds which arch -----------===//

#include "CompilerSelection.h"

namespace mlagen {

Status CompilerSelection::load(CompilerKind kind, DeviceCompiler *&out) {
  Slot &slot = kind == CompilerKind::NVRTC    ? nvrtc_
               : kind == CompilerKind::Hiprtc ? hiprtc_
                                              : clang_;
  std::call_once(slot.once, [&] {
    switch (kind) {
    case CompilerKind::NVRTC:
      slot.status = loadNvrtcCompiler(slot.compiler, portableNvidiaTarget_);
      break;
    case CompilerKind::Hiprtc:
      slot.status = loadHiprtcCompiler(slot.compiler);
      break;
    default:
      slot.status = findClangCompiler(slot.compiler);
      break;
    }
  });
  out = slot.compiler.get();
  return slot.status;
}

Status CompilerSelection::select(Arch arch, DeviceCompiler *&out) {
  std::string target = archName(arch);
  if (preference_ != CompilerKind::Auto) {
    if (Status status = load(preference_, out); !status)
      return status;
    return out->checkTarget(arch);
  }

  if (!isAMD(arch)) {
    Status status = load(CompilerKind::NVRTC, out);
    if (!status)
      return Status(StatusCode::NoBackend,
                    "no compiler for " + target + ": " + status.message());
    return status;
  }
  std::string reasons;
  if (arch == Arch::GFX90A) {
    Status hiprtc = load(CompilerKind::Hiprtc, out);
    if (hiprtc)
      return hiprtc;
    reasons = hiprtc.message() + "; ";
  } else {
    reasons = "hiprtc (ROCm 5.2) cannot target " + target + "; ";
  }
  Status clang = load(CompilerKind::Clang, out);
  if (clang)
    return clang;
  return Status(StatusCode::NoBackend, "no compiler for " + target + ": " +
                                           reasons + clang.message());
}

} // namespace mlagen
