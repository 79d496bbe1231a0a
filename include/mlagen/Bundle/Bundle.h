//===- Bundle.h - kernels built ahead of time ------------------*- C++ -*-===//
//
// A bundle is a directory of code objects plus manifest.json, built by
// `mlagen build` so a deployment can ship kernels instead of compiling them.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_BUNDLE_BUNDLE_H
#define MLAGEN_BUNDLE_BUNDLE_H

#include "mlagen/Runtime/Runtime.h"

#include <functional>
#include <string>
#include <vector>

namespace mlagen {

// DeepSeek-V3 MLA prefill, qk 192 / v 128, bf16, with LSE: causal at 16 and
// 128 q heads (TP8, TP1) and the non-causal context-chunk variant of each;
// GQA prefill, causal: Llama-3-8B, Gemma-2-9B (soft cap, sliding window),
// an ALiBi model (MPT-7B's shape); then absorbed MLA decode, 576/512, with
// LSE, at 16 and 128 q heads with pages of 64 and 1 keys (bf16 and fp8
// caches); the MLA KV-cache write into those caches; the GQA KV-cache write
// (reshape_and_cache) at Llama-3-8B's 8 kv heads of 128, pages of 16 and 64,
// bf16 and fp8, and its read side (gather_cache, into bf16); paged GQA
// decode at Llama-3-8B's shape (pages 16 and 64, bf16 and fp8, one q_len 4)
// and MPT-7B's (ALiBi, 32 / 32); for every arch in `archs` (fp8 not on
// gfx90a).
std::vector<Signature> defaultVariantSet(const std::vector<Arch> &archs);

struct BundleProgress {
  int done = 0;
  int total = 0;
  const Signature *signature = nullptr;
  double seconds = 0;  // compile time of this kernel (0 when cached)
  Status status;
};

// Compiles every signature with `runtime` (jobs at a time) and writes
// <dir>/<cache key>.{cubin,hsaco} and <dir>/manifest.json. Stops at the
// first failure and returns it, naming the signature.
Status buildBundle(Runtime &runtime, const std::vector<Signature> &signatures,
                   const std::string &dir, int jobs,
                   const std::function<void(const BundleProgress &)> &onProgress);

} // namespace mlagen

#endif // MLAGEN_BUNDLE_BUNDLE_H
