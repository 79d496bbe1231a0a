//===- Signature.h - what identifies one generated kernel -------*- C++ -*-===//
//
// A Signature is the whole description of a kernel variant as a host app
// builds it: the op, head dims and counts, mask, window, soft cap, dtypes,
// layout, an optional pinned tile and the target arch. It holds no MLIR
// types; the compiler library turns it into an `mla` module.
//
// Two ops share it. Prefill (varlen flash attention) uses the fields up to
// tileQ; absorbed MLA decode over a paged latent cache (DECODE_CONTRACT.md)
// uses qk/v, hq, mask (causal), lse, dtypes and the decode fields. A field
// the op does not use keeps the value its op's defaults give it (prefill's
// decode fields 0; decode's hkv 1 and layout paged, see Signature::decode()),
// so that one kernel has exactly one Signature and one cache key.
//
// merge_attn_states (two partial attention results merged by LSE) uses
// v (the head dim), hq (heads), lse (write the merged LSE) and out (the
// type of both inputs and the output); the rest keep
// Signature::mergeAttnStates()'s values. expand_page_indices (block table
// -> per-token cache slots) uses page only. kv_cache_write (new tokens into
// a paged MLA latent cache) uses qk (the cache row: latent + rope), v (the
// latent part), page, kv and, for an fp8 cache, in (the new tokens' 16-bit
// type, held in qType; out keeps it too). reshape_and_cache (new tokens'
// keys and values into paged GQA caches, vLLM's reshape_and_cache_flash)
// uses hkv, v (the head dim of keys and values), page, kv and, for an fp8
// cache, in; qk stays 0, hq 1. gather_cache (paged GQA cache tokens into
// dense keys and values, vLLM's gather_and_maybe_dequant_cache) uses hkv,
// v, page, kv and, for an fp8 cache, out (the gathered 16-bit type, held
// in qType too); qk stays 0, hq 1.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_SIGNATURE_H
#define MLAGEN_RUNTIME_SIGNATURE_H

#include "mlagen/Runtime/Status.h"

#include <string>

namespace mlagen {

enum class OpKind {
  Prefill,
  Decode,
  MergeAttnStates,
  ExpandPageIndices,
  KVCacheWrite,
  ReshapeAndCache,
  GatherCache,
  PagedDecode
};
enum class DType { BF16, FP16, FP8E4M3 };
enum class Mask { None, Causal };
// Varlen: sequences back to back (prefill). Paged: fixed-size pages reached
// through a block table (decode).
enum class KVLayout { Varlen, Paged };

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
  // ALiBi: per-q-head slopes (PrefillArgs::alibiSlopes,
  // PagedDecodeArgs::alibiSlopes) bias the capped logits by -slope * |query
  // pos - key pos| (templates/CONTRACT.md); prefill and paged_decode.
  bool alibi = false;
  bool returnLSE = true;
  DType qType = DType::BF16;
  DType kvType = DType::BF16;
  DType outType = DType::BF16;
  KVLayout kvLayout = KVLayout::Varlen;
  // Query rows per block; 0 lets the select-tiling pass choose. Decode:
  // 16, 32 or 64 q rows (token x head) a block, at most what the pass
  // chooses: smaller blocks put more SMs on small batches.
  int tileQ = 0;
  Arch arch = Arch::SM90A;

  // Decode only; prefill leaves them 0 / false.
  int qLen = 0;         // query tokens per request: 1, or up to 8 (MTP)
  int pageSize = 0;     // keys per cache page: a power of two in [1, 256]
  // Fixed split-KV chunk boundaries, so a request's result does not depend
  // on the batch or the GPU's size (the planner's side of it).
  bool batchInvariant = false;
  int tileK = 0;        // keys per inner step; 0 lets select-tiling choose

  // Absorbed MLA decode with DeepSeek-V3's shape: qk 576 (512 latent + 64
  // rope), v 512, one latent kv head, paged, causal within the q tokens;
  // 16 heads, q_len 1, page 64, bf16, LSE on.
  static Signature decode();

  // vLLM's merge_attn_states at MLA prefill's v head dim: 128, 16 heads,
  // bf16, merged LSE written. qk is 0, hkv 1, mask none, q and kv out's type.
  static Signature mergeAttnStates();

  // Page-index expansion for 64-key pages: qk and v 0, hq and hkv 1, mask
  // none, lse off, layout paged; page any size in [1, 4096].
  static Signature expandPageIndices();

  // The MLA KV-cache write at DeepSeek-V3's shape: rows of 576 = 512 latent
  // + 64 rope, 64-key pages, bf16; hq and hkv 1, mask none, lse off, layout
  // paged, q and out kv's type.
  static Signature kvCacheWrite();

  // The GQA KV-cache write at Llama-3-8B's shape: 8 kv heads of 128, 16-key
  // pages, bf16; qk 0, hq 1, mask none, lse off, layout paged, q and out
  // kv's type.
  static Signature reshapeAndCache();

  // The GQA KV-cache gather at Llama-3-8B's shape: reshapeAndCache()'s
  // fields with op gather_cache (out, and q, are kv's type).
  static Signature gatherCache();

  // Paged GQA decode at Llama-3-8B's shape (templates/
  // PAGED_DECODE_CONTRACT.md): 32 q heads over 8 kv heads of 128 (qk = v),
  // q_len 1, 16-key pages, no window, no soft cap, LSE on, bf16, causal
  // within the q tokens, layout paged. Its window is windowLeft only
  // (windowRight stays -1).
  static Signature pagedDecode();

  // One line, every field of the op, fixed order: the basis of the cache key
  // and the form `mlagen` prints. Stable across releases of the same cache
  // format. Prefill: "prefill qk=192 v=128 hq=16 hkv=16 mask=causal
  // window=-1,-1 softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen
  // tile_q=0 arch=sm_90a"; decode: "decode qk=576 v=512 hq=16 q_len=1
  // page=64 mask=causal lse=1 q=bf16 kv=bf16 out=bf16 batch_invariant=0
  // tile_k=0 arch=sm_90a" (a pinned decode tile_q adds " tile_q=16" before
  // arch); merge: "merge_attn_states v=128 hq=16 lse=1
  // out=bf16 arch=sm_90a"; "expand_page_indices page=64 arch=sm_90a";
  // "kv_cache_write qk=576 v=512 page=64 kv=bf16 arch=sm_90a" (an fp8
  // cache adds its input type: "... page=64 in=bf16 kv=fp8e4m3 ...");
  // "reshape_and_cache hkv=8 v=128 page=16 kv=bf16 arch=sm_90a" (in= as
  // for kv_cache_write); "gather_cache hkv=8 v=128 page=16 kv=bf16
  // arch=sm_90a" (an fp8 cache adds its output type: "... kv=fp8e4m3
  // out=bf16 ..."); "paged_decode hq=32 hkv=8 v=128 q_len=1 page=16
  // window=-1 softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 arch=sm_90a".
  std::string canonical() const;

  // Checks every rule a host app can break; the message names the field.
  Status validate() const;

  bool operator==(const Signature &) const = default;
};

// Parses the canonical() form back ("prefill qk=192 v=128 ..."). Prefill:
// qk, v, hq, hkv, mask and arch are required; decode: qk, v, hq, q_len,
// page and arch; merge_attn_states: v, hq and arch; expand_page_indices:
// page and arch; kv_cache_write: qk, v, page and arch (in defaults to kv,
// or bf16 for an fp8 cache); reshape_and_cache: hkv, v, page and arch (in
// as for kv_cache_write); gather_cache: hkv, v, page and arch (out defaults
// to kv, or bf16 for an fp8 cache); paged_decode: hq, hkv, v, q_len, page
// and arch (window is one number, the left window). The others default as
// above (alibi 0, also for paged_decode text written before it had alibi;
// decode: as
// Signature::decode()). Unknown or malformed fields, and fields of the other
// op, give InvalidSignature naming them.
Status parseSignature(const std::string &text, Signature &out);

} // namespace mlagen

#endif // MLAGEN_RUNTIME_SIGNATURE_H
