//===- Signature.h - what identifies one generated kernel -------*- C++ -*-===//
//
// A Signature is the whole description of a kernel variant as a host app
// builds it: the op, head dims and counts, mask, window, soft cap, dtypes,
// layout, an optional pinned tile and the target arch. It holds no MLIR
// types; the compiler library turns it into an `mla` module.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_SIGNATURE_H
#define MLAGEN_RUNTIME_SIGNATURE_H

#include "mlagen/Runtime/Status.h"

#include <string>

namespace mlagen {

enum class OpKind { Prefill };
enum class DType { BF16, FP16, FP8E4M3 };
enum class Mask { None, Causal };
enum class KVLayout { Varlen };

// The GPU targets mlagen knows. The spelling is the compiler's
// (--offload-arch=gfx942, --gpu-architecture=sm_90a).
enum class Arch { GFX90A, GFX942, GFX950, SM80, SM90A };

const char *opKindName(OpKind);
const char *dtypeName(DType);
const char *maskName(Mask);
const char *kvLayoutName(KVLayout);
const char *archName(Arch);
bool parseArch(const std::string &name, Arch &out);
bool isAMD(Arch);

struct Signature {
  OpKind op = OpKind::Prefill;
  int headDimQK = 192;
  int headDimV = 128;
  int numQHeads = 16;
  int numKVHeads = 16;
  Mask mask = Mask::Causal;
  // Sliding window in keys left/right of the diagonal; -1 is unbounded.
  int windowLeft = -1;
  int windowRight = -1;
  // tanh soft cap on the scaled logits; 0 is off.
  float softCap = 0.0f;
  bool returnLSE = true;
  DType qType = DType::BF16;
  DType kvType = DType::BF16;
  DType outType = DType::BF16;
  KVLayout kvLayout = KVLayout::Varlen;
  // Query rows per block; 0 lets the select-tiling pass choose.
  int tileQ = 0;
  Arch arch = Arch::SM90A;

  // One line, every field, fixed order: the basis of the cache key and the
  // form `mlagen` prints. Stable across releases of the same cache format.
  std::string canonical() const;

  // Checks every rule a host app can break; the message names the field.
  Status validate() const;

  bool operator==(const Signature &) const = default;
};

// Parses the canonical() form back ("prefill qk=192 v=128 ..."). qk, v, hq,
// hkv, mask and arch are required; the others default as above. Unknown
// or malformed fields give InvalidSignature naming them.
Status parseSignature(const std::string &text, Signature &out);

} // namespace mlagen

#endif // MLAGEN_RUNTIME_SIGNATURE_H
