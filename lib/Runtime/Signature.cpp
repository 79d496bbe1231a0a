//===- Signature.cpp - canonical text, parsing and validation -------------===//
//
// The canonical form is the basis of every cache key: its field order and
// spelling are part of the cache format (see KernelCache.h). Change them only
// together with the cache format version.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Runtime/Signature.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

namespace mlagen {

const char *opKindName(OpKind op) {
  switch (op) {
  case OpKind::Prefill:
    return "prefill";
  case OpKind::Decode:
    return "decode";
  case OpKind::MergeAttnStates:
    return "merge_attn_states";
  case OpKind::ExpandPageIndices:
    return "expand_page_indices";
  case OpKind::KVCacheWrite:
    return "kv_cache_write";
  case OpKind::ReshapeAndCache:
    return "reshape_and_cache";
  case OpKind::PagedDecode:
    return "paged_decode";
  case OpKind::GatherCache:
    return "gather_cache";
  }
  return "?";
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::BF16:
    return "bf16";
  case DType::FP16:
    return "fp16";
  case DType::FP8E4M3:
    return "fp8e4m3";
  }
  return "?";
}

const char *maskName(Mask mask) {
  switch (mask) {
  case Mask::None:
    return "none";
  case Mask::Causal:
    return "causal";
  }
  return "?";
}

const char *kvLayoutName(KVLayout layout) {
  switch (layout) {
  case KVLayout::Varlen:
    return "varlen";
  case KVLayout::Paged:
    return "paged";
  }
  return "?";
}

const char *archName(Arch arch) {
  switch (arch) {
  case Arch::GFX90A:
    return "gfx90a";
  case Arch::GFX942:
    return "gfx942";
  case Arch::GFX950:
    return "gfx950";
  case Arch::SM80:
    return "sm_80";
  case Arch::SM90A:
    return "sm_90a";
  }
  return "?";
}

bool isAMD(Arch arch) {
  return arch == Arch::GFX90A || arch == Arch::GFX942 || arch == Arch::GFX950;
}

namespace {

// Finds the enumerator whose name is `text` among [0, count).
template <typename Enum>
bool parseEnum(const std::string &text, const char *(*name)(Enum), int count,
               Enum &out) {
  for (int i = 0; i < count; ++i) {
    if (text == name(static_cast<Enum>(i))) {
      out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

bool parseInt(const std::string &text, int &out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool parseFloat(const std::string &text, float &out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

// Shortest text that reads back to the same float; -0 prints as 0.
std::string formatFloat(float value) {
  if (value == 0.0f)
    return "0";
  char buffer[32];
  auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, ec == std::errc() ? ptr : buffer);
}

bool isMultipleOf16In(int value, int lo, int hi) {
  return value % 16 == 0 && value >= lo && value <= hi;
}

Status invalid(const std::string &message) {
  return Status(StatusCode::InvalidSignature, message);
}

std::string got(int value) { return " (got " + std::to_string(value) + ")"; }

// The rules of mla.decode's verifier (DECODE_CONTRACT.md); whether a
// template implements a valid variant is the compiler's to say.
Status validateDecode(const Signature &sig) {
  if (sig.kvLayout != KVLayout::Paged)
    return invalid(std::string("kv_layout must be paged for decode (got ") +
                   kvLayoutName(sig.kvLayout) + ")");
  if (sig.numKVHeads != 1)
    return invalid("num_kv_heads must be 1 for decode: absorbed MLA reads "
                   "one latent kv head" +
                   got(sig.numKVHeads));
  if (sig.windowLeft != -1 || sig.windowRight != -1 || sig.softCap != 0.0f ||
      sig.alibi)
    return invalid("window, soft_cap and alibi are prefill fields: a "
                   "decode signature leaves them -1,-1, 0 and 0");
  if (sig.tileQ != 0 && sig.tileQ != 16 && sig.tileQ != 32 && sig.tileQ != 64)
    return invalid("tile_q must be 0 (chosen by the compiler), 16, 32 or 64 "
                   "q rows a block for decode" +
                   got(sig.tileQ));
  if (sig.mask != Mask::Causal)
    return invalid("mask must be causal for decode: query token t of a "
                   "request sees keys [0, seq_len - q_len + t]");
  if (!isMultipleOf16In(sig.headDimQK, 16, 576))
    return invalid("head_dim_qk must be a multiple of 16 in [16, 576]" +
                   got(sig.headDimQK));
  if (!isMultipleOf16In(sig.headDimV, 16, 512))
    return invalid("head_dim_v must be a multiple of 16 in [16, 512]" +
                   got(sig.headDimV));
  if (sig.headDimV > sig.headDimQK)
    return invalid("head_dim_v must be <= head_dim_qk for decode: V is the "
                   "first head_dim_v columns of the latent cache (got v=" +
                   std::to_string(sig.headDimV) +
                   ", qk=" + std::to_string(sig.headDimQK) + ")");
  if (sig.numQHeads < 1 || sig.numQHeads > 128)
    return invalid("num_q_heads must be in [1, 128] for decode" +
                   got(sig.numQHeads));
  if (sig.qLen < 1 || sig.qLen > 8)
    return invalid("q_len must be in [1, 8] for decode (1, or the tokens "
                   "of speculative decoding)" +
                   got(sig.qLen));
  if (sig.pageSize < 1 || sig.pageSize > 256 ||
      (sig.pageSize & (sig.pageSize - 1)) != 0)
    return invalid("page_size must be a power of two in [1, 256]" +
                   got(sig.pageSize));
  if (sig.tileK != 0 && !isMultipleOf16In(sig.tileK, 16, 256))
    return invalid("tile_k must be 0 (chosen by the compiler) or a multiple "
                   "of 16 in [16, 256]" +
                   got(sig.tileK));
  if (sig.outType != DType::BF16 && sig.outType != DType::FP16)
    return invalid(std::string("out_type must be bf16 or fp16 for decode "
                               "(got ") +
                   dtypeName(sig.outType) + ")");
  // fp8 q (with its scale at run time) reads an fp8 cache.
  if (sig.qType == DType::FP8E4M3 && sig.kvType != DType::FP8E4M3)
    return invalid(std::string("q_type fp8e4m3 needs an fp8 cache "
                               "(kv=fp8e4m3) for decode (got kv=") +
                   dtypeName(sig.kvType) + ")");
  return Status::ok();
}

// merge_attn_states: everything but v, hq, lse and out is fixed.
Status validateMergeAttnStates(const Signature &sig) {
  const Signature fixed = Signature::mergeAttnStates();
  if (sig.headDimQK != fixed.headDimQK || sig.numKVHeads != fixed.numKVHeads ||
      sig.mask != fixed.mask || sig.windowLeft != -1 ||
      sig.windowRight != -1 || sig.softCap != 0.0f || sig.alibi ||
      sig.kvLayout != fixed.kvLayout || sig.tileQ != 0 || sig.qLen != 0 ||
      sig.pageSize != 0 || sig.batchInvariant || sig.tileK != 0)
    return invalid("a merge_attn_states signature sets only v, hq, lse, out "
                   "and arch; the other fields keep "
                   "Signature::mergeAttnStates()'s values");
  if (sig.headDimV < 8 || sig.headDimV > 1024 || sig.headDimV % 8 != 0)
    return invalid("head_dim_v must be a multiple of 8 in [8, 1024] for "
                   "merge_attn_states (16-byte vectors)" +
                   got(sig.headDimV));
  if (sig.numQHeads < 1 || sig.numQHeads > 65535)
    return invalid("num_q_heads must be in [1, 65535]" + got(sig.numQHeads));
  if (sig.outType != DType::BF16 && sig.outType != DType::FP16)
    return invalid(std::string("out_type must be bf16 or fp16 for "
                               "merge_attn_states (got ") +
                   dtypeName(sig.outType) + ")");
  if (sig.qType != sig.outType || sig.kvType != sig.outType)
    return invalid("q_type and kv_type must equal out_type for "
                   "merge_attn_states: both inputs have the output's type");
  return Status::ok();
}

Status validateExpandPageIndices(const Signature &sig) {
  Signature fixed = Signature::expandPageIndices();
  fixed.pageSize = sig.pageSize;
  fixed.arch = sig.arch;
  if (!(fixed == sig))
    return invalid("an expand_page_indices signature sets only page and "
                   "arch; the other fields keep "
                   "Signature::expandPageIndices()'s values");
  if (sig.pageSize < 1 || sig.pageSize > 4096)
    return invalid("page_size must be in [1, 4096] for expand_page_indices" +
                   got(sig.pageSize));
  return Status::ok();
}

// The new tokens of a cache write are 16-bit (in, held in qType): copied
// into a cache of their type, or quantised into an fp8 one.
Status validateCacheWriteTypes(const Signature &sig) {
  if (sig.qType == DType::FP8E4M3)
    return invalid(std::string("in (the new tokens' type) must be bf16 or "
                               "fp16 for ") +
                   opKindName(sig.op) + " (got fp8e4m3)");
  if (sig.kvType != DType::FP8E4M3 && sig.qType != sig.kvType)
    return invalid(std::string("in must equal kv for a 16-bit cache (got in=") +
                   dtypeName(sig.qType) + ", kv=" + dtypeName(sig.kvType) +
                   ")");
  return Status::ok();
}

Status validateKVCacheWrite(const Signature &sig) {
  Signature fixed = Signature::kvCacheWrite();
  fixed.headDimQK = sig.headDimQK;
  fixed.headDimV = sig.headDimV;
  fixed.pageSize = sig.pageSize;
  fixed.kvType = sig.kvType;
  fixed.qType = fixed.outType = sig.qType;
  fixed.arch = sig.arch;
  if (!(fixed == sig))
    return invalid("a kv_cache_write signature sets only qk, v, page, in, kv "
                   "and arch; the other fields keep "
                   "Signature::kvCacheWrite()'s values (q and out are in's "
                   "type)");
  if (Status status = validateCacheWriteTypes(sig); !status)
    return status;
  if (sig.headDimV < 8 || sig.headDimV > 1024 || sig.headDimV % 8 != 0)
    return invalid("head_dim_v (the latent width) must be a multiple of 8 in "
                   "[8, 1024] for kv_cache_write" +
                   got(sig.headDimV));
  const int rope = sig.headDimQK - sig.headDimV;
  if (rope < 8 || rope > 256 || rope % 8 != 0)
    return invalid("head_dim_qk - head_dim_v (the rope width) must be a "
                   "multiple of 8 in [8, 256] for kv_cache_write" +
                   got(rope));
  if (sig.pageSize < 1 || sig.pageSize > 4096)
    return invalid("page_size must be in [1, 4096] for kv_cache_write" +
                   got(sig.pageSize));
  return Status::ok();
}

Status validateReshapeAndCache(const Signature &sig) {
  Signature fixed = Signature::reshapeAndCache();
  fixed.numKVHeads = sig.numKVHeads;
  fixed.headDimV = sig.headDimV;
  fixed.pageSize = sig.pageSize;
  fixed.kvType = sig.kvType;
  fixed.qType = fixed.outType = sig.qType;
  fixed.arch = sig.arch;
  if (!(fixed == sig))
    return invalid("a reshape_and_cache signature sets only hkv, v, page, in, "
                   "kv and arch; the other fields keep "
                   "Signature::reshapeAndCache()'s values (q and out are "
                   "in's type)");
  if (Status status = validateCacheWriteTypes(sig); !status)
    return status;
  if (sig.numKVHeads < 1 || sig.numKVHeads > 256)
    return invalid("num_kv_heads must be in [1, 256] for reshape_and_cache" +
                   got(sig.numKVHeads));
  if (sig.headDimV < 8 || sig.headDimV > 512 || sig.headDimV % 8 != 0)
    return invalid("head_dim_v (the head dim of keys and values) must be a "
                   "multiple of 8 in [8, 512] for reshape_and_cache" +
                   got(sig.headDimV));
  if (sig.pageSize < 1 || sig.pageSize > 4096)
    return invalid("page_size must be in [1, 4096] for reshape_and_cache" +
                   got(sig.pageSize));
  return Status::ok();
}

// The gathered tokens are 16-bit (out, also held in qType): copied from a
// cache of their type, or dequantised from an fp8 one.
Status validateGatherCache(const Signature &sig) {
  Signature fixed = Signature::gatherCache();
  fixed.numKVHeads = sig.numKVHeads;
  fixed.headDimV = sig.headDimV;
  fixed.pageSize = sig.pageSize;
  fixed.kvType = sig.kvType;
  fixed.qType = fixed.outType = sig.outType;
  fixed.arch = sig.arch;
  if (!(fixed == sig))
    return invalid("a gather_cache signature sets only hkv, v, page, kv, out "
                   "and arch; the other fields keep "
                   "Signature::gatherCache()'s values (q is out's type)");
  if (sig.outType == DType::FP8E4M3)
    return invalid("out (the gathered tokens' type) must be bf16 or fp16 for "
                   "gather_cache (got fp8e4m3)");
  if (sig.kvType != DType::FP8E4M3 && sig.outType != sig.kvType)
    return invalid(std::string("out must equal kv for a 16-bit cache (got "
                               "out=") +
                   dtypeName(sig.outType) + ", kv=" + dtypeName(sig.kvType) +
                   ")");
  if (sig.numKVHeads < 1 || sig.numKVHeads > 256)
    return invalid("num_kv_heads must be in [1, 256] for gather_cache" +
                   got(sig.numKVHeads));
  if (sig.headDimV < 8 || sig.headDimV > 512 || sig.headDimV % 8 != 0)
    return invalid("head_dim_v (the head dim of keys and values) must be a "
                   "multiple of 8 in [8, 512] for gather_cache" +
                   got(sig.headDimV));
  if (sig.pageSize < 1 || sig.pageSize > 4096)
    return invalid("page_size must be in [1, 4096] for gather_cache" +
                   got(sig.pageSize));
  return Status::ok();
}

// The rules of mla.paged_decode's verifier (PAGED_DECODE_CONTRACT.md).
Status validatePagedDecode(const Signature &sig) {
  Signature fixed = Signature::pagedDecode();
  fixed.numQHeads = sig.numQHeads;
  fixed.numKVHeads = sig.numKVHeads;
  fixed.headDimQK = fixed.headDimV = sig.headDimV;
  fixed.qLen = sig.qLen;
  fixed.pageSize = sig.pageSize;
  fixed.windowLeft = sig.windowLeft;
  fixed.softCap = sig.softCap;
  fixed.alibi = sig.alibi;
  fixed.returnLSE = sig.returnLSE;
  fixed.qType = sig.qType;
  fixed.kvType = sig.kvType;
  fixed.outType = sig.outType;
  fixed.tileK = sig.tileK;
  fixed.arch = sig.arch;
  if (!(fixed == sig))
    return invalid("a paged_decode signature sets only hq, hkv, v, q_len, "
                   "page, window, softcap, alibi, lse, q, kv, out, tile_k and arch; the "
                   "other fields keep Signature::pagedDecode()'s values (qk "
                   "= v, window_right -1, mask causal, layout paged)");
  if (sig.numKVHeads < 1 || sig.numKVHeads > 128)
    return invalid("num_kv_heads must be in [1, 128] for paged_decode" +
                   got(sig.numKVHeads));
  if (sig.numQHeads < 1 || sig.numQHeads > 256)
    return invalid("num_q_heads must be in [1, 256] for paged_decode" +
                   got(sig.numQHeads));
  if (sig.numQHeads % sig.numKVHeads != 0)
    return invalid("num_q_heads must be a multiple of num_kv_heads (got " +
                   std::to_string(sig.numQHeads) + " and " +
                   std::to_string(sig.numKVHeads) + ")");
  const int multiple = sig.kvType == DType::FP8E4M3 ? 16 : 8;
  if (sig.headDimV < 8 || sig.headDimV > 256 || sig.headDimV % multiple != 0)
    return invalid("head_dim must be a multiple of " +
                   std::to_string(multiple) +
                   " in [8, 256] for paged_decode (16-byte cache vectors)" +
                   got(sig.headDimV));
  if (sig.qLen < 1 || sig.qLen > 8)
    return invalid("q_len must be in [1, 8] for paged_decode" + got(sig.qLen));
  if (sig.tileK != 0 && sig.tileK != 32 && sig.tileK != 64 && sig.tileK != 128)
    return invalid("tile_k must be 0 (chosen by the shape), 32, 64 or 128 for "
                   "paged_decode" + got(sig.tileK));
  if (sig.pageSize < 1 || sig.pageSize > 256 ||
      (sig.pageSize & (sig.pageSize - 1)) != 0)
    return invalid("page_size must be a power of two in [1, 256]" +
                   got(sig.pageSize));
  if (sig.windowLeft < -1)
    return invalid("window must be -1 (unbounded) or >= 0" +
                   got(sig.windowLeft));
  if (!std::isfinite(sig.softCap) || sig.softCap < 0.0f)
    return invalid("soft_cap must be finite and >= 0 (got " +
                   formatFloat(sig.softCap) + ")");
  if (sig.outType != DType::BF16 && sig.outType != DType::FP16)
    return invalid(std::string("out must be bf16 or fp16 for paged_decode "
                               "(got ") +
                   dtypeName(sig.outType) + ")");
  if (sig.qType != sig.outType)
    return invalid(std::string("q must equal out for paged_decode (got q=") +
                   dtypeName(sig.qType) + ", out=" + dtypeName(sig.outType) +
                   ")");
  if (sig.kvType == DType::FP8E4M3 && sig.outType != DType::BF16)
    return invalid("an fp8 cache (kv=fp8e4m3) needs q and out bf16 for "
                   "paged_decode");
  if (sig.kvType != DType::FP8E4M3 && sig.kvType != sig.qType)
    return invalid(std::string("kv must equal q or be fp8e4m3 for "
                               "paged_decode (got kv=") +
                   dtypeName(sig.kvType) + ", q=" + dtypeName(sig.qType) +
                   ")");
  if (sig.kvType == DType::FP8E4M3 && sig.arch == Arch::GFX90A)
    return invalid("gfx90a has no fp8 conversion instructions: an fp8 cache "
                   "needs sm_80, sm_90a, gfx942 or gfx950");
  return Status::ok();
}

} // namespace

bool parseArch(const std::string &name, Arch &out) {
  return parseEnum(name, archName, static_cast<int>(Arch::SM90A) + 1, out);
}

Signature Signature::decode() {
  Signature sig;
  sig.op = OpKind::Decode;
  sig.headDimQK = 576;
  sig.headDimV = 512;
  sig.numQHeads = 16;
  sig.numKVHeads = 1;
  sig.kvLayout = KVLayout::Paged;
  sig.qLen = 1;
  sig.pageSize = 64;
  return sig;
}

Signature Signature::mergeAttnStates() {
  Signature sig;
  sig.op = OpKind::MergeAttnStates;
  sig.headDimQK = 0;
  sig.headDimV = 128;
  sig.numQHeads = 16;
  sig.numKVHeads = 1;
  sig.mask = Mask::None;
  return sig;
}

Signature Signature::expandPageIndices() {
  Signature sig;
  sig.op = OpKind::ExpandPageIndices;
  sig.headDimQK = 0;
  sig.headDimV = 0;
  sig.numQHeads = 1;
  sig.numKVHeads = 1;
  sig.mask = Mask::None;
  sig.returnLSE = false;
  sig.kvLayout = KVLayout::Paged;
  sig.pageSize = 64;
  return sig;
}

Signature Signature::kvCacheWrite() {
  Signature sig;
  sig.op = OpKind::KVCacheWrite;
  sig.headDimQK = 576;
  sig.headDimV = 512;
  sig.numQHeads = 1;
  sig.numKVHeads = 1;
  sig.mask = Mask::None;
  sig.returnLSE = false;
  sig.kvLayout = KVLayout::Paged;
  sig.pageSize = 64;
  return sig;
}

Signature Signature::reshapeAndCache() {
  Signature sig;
  sig.op = OpKind::ReshapeAndCache;
  sig.headDimQK = 0;
  sig.headDimV = 128;
  sig.numQHeads = 1;
  sig.numKVHeads = 8;
  sig.mask = Mask::None;
  sig.returnLSE = false;
  sig.kvLayout = KVLayout::Paged;
  sig.pageSize = 16;
  return sig;
}

Signature Signature::gatherCache() {
  Signature sig = reshapeAndCache();
  sig.op = OpKind::GatherCache;
  return sig;
}

Signature Signature::pagedDecode() {
  Signature sig;
  sig.op = OpKind::PagedDecode;
  sig.headDimQK = 128;
  sig.headDimV = 128;
  sig.numQHeads = 32;
  sig.numKVHeads = 8;
  sig.kvLayout = KVLayout::Paged;
  sig.qLen = 1;
  sig.pageSize = 16;
  return sig;
}

std::string Signature::canonical() const {
  std::ostringstream os;
  if (op == OpKind::PagedDecode) {
    os << "paged_decode hq=" << numQHeads << " hkv=" << numKVHeads
       << " v=" << headDimV << " q_len=" << qLen << " page=" << pageSize
       << " window=" << windowLeft << " softcap=" << formatFloat(softCap)
       << " alibi=" << (alibi ? 1 : 0) << " lse=" << (returnLSE ? 1 : 0) << " q=" << dtypeName(qType)
       << " kv=" << dtypeName(kvType) << " out=" << dtypeName(outType);
    // tile_k only where pinned (a tuning override; 0 is the shape's choice).
    if (tileK != 0)
      os << " tile_k=" << tileK;
    os << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::GatherCache) {
    // out= only where it can differ from kv: an fp8 cache.
    os << "gather_cache hkv=" << numKVHeads << " v=" << headDimV
       << " page=" << pageSize << " kv=" << dtypeName(kvType);
    if (kvType == DType::FP8E4M3)
      os << " out=" << dtypeName(outType);
    os << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::ReshapeAndCache) {
    // in= only where it can differ from kv: an fp8 cache.
    os << "reshape_and_cache hkv=" << numKVHeads << " v=" << headDimV
       << " page=" << pageSize;
    if (kvType == DType::FP8E4M3)
      os << " in=" << dtypeName(qType);
    os << " kv=" << dtypeName(kvType) << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::KVCacheWrite) {
    // in= only where it can differ from kv: an fp8 cache.
    os << "kv_cache_write qk=" << headDimQK << " v=" << headDimV
       << " page=" << pageSize;
    if (kvType == DType::FP8E4M3)
      os << " in=" << dtypeName(qType);
    os << " kv=" << dtypeName(kvType) << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::ExpandPageIndices) {
    os << "expand_page_indices page=" << pageSize
       << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::MergeAttnStates) {
    os << "merge_attn_states v=" << headDimV << " hq=" << numQHeads
       << " lse=" << (returnLSE ? 1 : 0) << " out=" << dtypeName(outType)
       << " arch=" << archName(arch);
    return os.str();
  }
  if (op == OpKind::Decode) {
    os << "decode qk=" << headDimQK << " v=" << headDimV << " hq=" << numQHeads
       << " q_len=" << qLen << " page=" << pageSize
       << " mask=" << maskName(mask) << " lse=" << (returnLSE ? 1 : 0)
       << " q=" << dtypeName(qType) << " kv=" << dtypeName(kvType)
       << " out=" << dtypeName(outType)
       << " batch_invariant=" << (batchInvariant ? 1 : 0)
       << " tile_k=" << tileK;
    // tile_q only where pinned, so that unpinned keys stay as they were.
    if (tileQ != 0)
      os << " tile_q=" << tileQ;
    os << " arch=" << archName(arch);
    return os.str();
  }
  os << opKindName(op) << " qk=" << headDimQK << " v=" << headDimV
     << " hq=" << numQHeads << " hkv=" << numKVHeads
     << " mask=" << maskName(mask) << " window=" << windowLeft << ','
     << windowRight << " softcap=" << formatFloat(softCap)
     << " alibi=" << (alibi ? 1 : 0) << " lse=" << (returnLSE ? 1 : 0) << " q=" << dtypeName(qType)
     << " kv=" << dtypeName(kvType) << " out=" << dtypeName(outType)
     << " layout=" << kvLayoutName(kvLayout) << " tile_q=" << tileQ
     << " arch=" << archName(arch);
  return os.str();
}

Status Signature::validate() const {
  if (op != OpKind::Prefill && op != OpKind::Decode &&
      op != OpKind::MergeAttnStates && op != OpKind::ExpandPageIndices &&
      op != OpKind::KVCacheWrite && op != OpKind::ReshapeAndCache &&
      op != OpKind::GatherCache && op != OpKind::PagedDecode)
    return invalid("op has an unknown value" + got(static_cast<int>(op)));
  if (kvLayout != KVLayout::Varlen && kvLayout != KVLayout::Paged)
    return invalid("kv_layout has an unknown value" +
                   got(static_cast<int>(kvLayout)));
  if (mask != Mask::None && mask != Mask::Causal)
    return invalid("mask has an unknown value" + got(static_cast<int>(mask)));
  if (std::string(archName(arch)) == "?")
    return invalid("arch has an unknown value" + got(static_cast<int>(arch)));
  for (auto [field, type] : {std::pair{"q_type", qType},
                             std::pair{"kv_type", kvType},
                             std::pair{"out_type", outType}})
    if (std::string(dtypeName(type)) == "?")
      return invalid(std::string(field) + " has an unknown value" +
                     got(static_cast<int>(type)));
  if (op == OpKind::PagedDecode)
    return validatePagedDecode(*this);
  if (op == OpKind::Decode)
    return validateDecode(*this);
  if (op == OpKind::MergeAttnStates)
    return validateMergeAttnStates(*this);
  if (op == OpKind::ExpandPageIndices)
    return validateExpandPageIndices(*this);
  if (op == OpKind::KVCacheWrite)
    return validateKVCacheWrite(*this);
  if (op == OpKind::ReshapeAndCache)
    return validateReshapeAndCache(*this);
  if (op == OpKind::GatherCache)
    return validateGatherCache(*this);

  if (qLen != 0 || pageSize != 0 || batchInvariant || tileK != 0)
    return invalid("q_len, page_size, batch_invariant and tile_k are decode "
                   "fields: a prefill signature leaves them 0");
  if (!isMultipleOf16In(headDimQK, 16, 576))
    return invalid("head_dim_qk must be a multiple of 16 in [16, 576]" +
                   got(headDimQK));
  if (!isMultipleOf16In(headDimV, 16, 512))
    return invalid("head_dim_v must be a multiple of 16 in [16, 512]" +
                   got(headDimV));
  // num_q_heads is grid.y of every launch: 65535 is the CUDA limit.
  if (numQHeads < 1 || numQHeads > 65535)
    return invalid("num_q_heads must be in [1, 65535]" + got(numQHeads));
  if (numKVHeads < 1)
    return invalid("num_kv_heads must be >= 1" + got(numKVHeads));
  if (numQHeads % numKVHeads != 0)
    return invalid("num_q_heads must be a multiple of num_kv_heads (got " +
                   std::to_string(numQHeads) + " and " +
                   std::to_string(numKVHeads) + ")");
  if (windowLeft < -1)
    return invalid("window_left must be -1 (unbounded) or >= 0" +
                   got(windowLeft));
  if (windowRight < -1)
    return invalid("window_right must be -1 (unbounded) or >= 0" +
                   got(windowRight));
  if (!std::isfinite(softCap) || softCap < 0.0f)
    return invalid("soft_cap must be finite and >= 0 (got " +
                   formatFloat(softCap) + ")");
  if (tileQ != 0 && !isMultipleOf16In(tileQ, 16, 256))
    return invalid(
        "tile_q must be 0 (chosen by the compiler) or a multiple of 16 in "
        "[16, 256]" +
        got(tileQ));

  if (kvLayout == KVLayout::Paged)
    return Status(StatusCode::Unsupported,
                  "paged prefill is not supported yet (kv_layout=paged)");
  if (qType == DType::FP8E4M3 || kvType == DType::FP8E4M3 ||
      outType == DType::FP8E4M3)
    return Status(StatusCode::Unsupported, "fp8 prefill is not supported yet");
  // The prefill template has one input type for q, k, v and out.
  if (kvType != qType)
    return invalid(std::string("kv_type must equal q_type for now (got kv=") +
                   dtypeName(kvType) + ", q=" + dtypeName(qType) + ")");
  if (outType != qType)
    return invalid(std::string("out_type must equal q_type for now (got out=") +
                   dtypeName(outType) + ", q=" + dtypeName(qType) + ")");
  return Status::ok();
}

Status parseSignature(const std::string &text, Signature &out) {
  std::istringstream in(text);
  std::string opText;
  if (!(in >> opText))
    return invalid("signature text is empty");
  OpKind op;
  if (!parseEnum(opText, opKindName,
                 static_cast<int>(OpKind::PagedDecode) + 1, op))
    return invalid("unknown op '" + opText +
                   "' (expected prefill, decode, merge_attn_states, "
                   "expand_page_indices, kv_cache_write, "
                   "reshape_and_cache, gather_cache or paged_decode)");
  const bool decode = op == OpKind::Decode;
  const bool merge = op == OpKind::MergeAttnStates;
  const bool expand = op == OpKind::ExpandPageIndices;
  const bool write = op == OpKind::KVCacheWrite;
  const bool reshape = op == OpKind::ReshapeAndCache;
  const bool gather = op == OpKind::GatherCache;
  const bool paged = op == OpKind::PagedDecode;
  Signature sig = paged     ? Signature::pagedDecode()
                  : decode  ? Signature::decode()
                  : merge   ? Signature::mergeAttnStates()
                  : expand  ? Signature::expandPageIndices()
                  : write   ? Signature::kvCacheWrite()
                  : reshape ? Signature::reshapeAndCache()
                  : gather  ? Signature::gatherCache()
                            : Signature();

  // Each field parses its value text into `sig`; false means malformed.
  using FieldParser = std::function<bool(const std::string &)>;
  auto intField = [](int &field) {
    return FieldParser([&field](const std::string &v) {
      return parseInt(v, field);
    });
  };
  auto dtypeField = [](DType &field) {
    return FieldParser([&field](const std::string &v) {
      return parseEnum(v, dtypeName, 3, field);
    });
  };
  auto flagField = [](bool &field) {
    return FieldParser([&field](const std::string &v) {
      field = v == "1";
      return v == "0" || v == "1";
    });
  };
  // Fields of one op only; the rest are shared.
  const std::vector<std::string> prefillOnly = {"hkv", "window", "softcap",
                                                "alibi", "layout"};
  const std::vector<std::string> decodeOnly = {"q_len", "page",
                                               "batch_invariant", "tile_k"};
  const std::vector<std::pair<std::string, FieldParser>> fields = {
      {"qk", intField(sig.headDimQK)},
      {"v", intField(sig.headDimV)},
      {"hq", intField(sig.numQHeads)},
      {"hkv", intField(sig.numKVHeads)},
      {"mask",
       [&](const std::string &v) { return parseEnum(v, maskName, 2, sig.mask); }},
      {"window",
       [&](const std::string &v) {
         // paged_decode has a left window only.
         if (paged)
           return parseInt(v, sig.windowLeft);
         size_t comma = v.find(',');
         return comma != std::string::npos &&
                parseInt(v.substr(0, comma), sig.windowLeft) &&
                parseInt(v.substr(comma + 1), sig.windowRight);
       }},
      {"softcap",
       [&](const std::string &v) { return parseFloat(v, sig.softCap); }},
      {"alibi", flagField(sig.alibi)},
      {"lse", flagField(sig.returnLSE)},
      {"q", dtypeField(sig.qType)},
      {"kv", dtypeField(sig.kvType)},
      {"out", dtypeField(sig.outType)},
      {"layout",
       [&](const std::string &v) {
         return parseEnum(v, kvLayoutName, 2, sig.kvLayout);
       }},
      {"tile_q", intField(sig.tileQ)},
      {"arch", [&](const std::string &v) { return parseArch(v, sig.arch); }},
      {"q_len", intField(sig.qLen)},
      {"page", intField(sig.pageSize)},
      {"batch_invariant", flagField(sig.batchInvariant)},
      {"tile_k", intField(sig.tileK)},
      // Cache writes: the new tokens' type, kept in qType.
      {"in", dtypeField(sig.qType)},
  };
  auto contains = [](const std::vector<std::string> &list,
                     const std::string &key) {
    return std::find(list.begin(), list.end(), key) != list.end();
  };
  const std::vector<std::string> mergeFields = {"v", "hq", "lse", "out",
                                                "arch"};
  const std::vector<std::string> expandFields = {"page", "arch"};
  const std::vector<std::string> writeFields = {"qk", "v", "page", "in",
                                                "kv", "arch"};
  const std::vector<std::string> reshapeFields = {"hkv", "v",  "page",
                                                  "in",  "kv", "arch"};
  const std::vector<std::string> pagedFields = {
      "hq",  "hkv", "v",  "q_len", "page", "window", "softcap",
      "alibi", "lse", "q", "kv",    "out",  "tile_k", "arch"};
  const std::vector<std::string> gatherFields = {"hkv", "v",   "page",
                                                 "kv",  "out", "arch"};

  std::map<std::string, bool> seen;
  std::string token;
  while (in >> token) {
    size_t eq = token.find('=');
    if (eq == std::string::npos)
      return invalid("signature field '" + token + "' is not key=value");
    std::string key = token.substr(0, eq), value = token.substr(eq + 1);
    auto field = std::find_if(fields.begin(), fields.end(),
                              [&](const auto &f) { return f.first == key; });
    if (field == fields.end())
      return invalid("unknown signature field '" + key + "'");
    if (merge     ? !contains(mergeFields, key)
        : expand  ? !contains(expandFields, key)
        : paged   ? !contains(pagedFields, key)
        : write   ? !contains(writeFields, key)
        : reshape ? !contains(reshapeFields, key)
        : gather  ? !contains(gatherFields, key)
                  : key == "in" ||
                        contains(decode ? prefillOnly : decodeOnly, key))
      return invalid("signature field '" + key + "' is not a " + opText +
                     " field");
    if (seen[key])
      return invalid("signature field '" + key + "' appears twice");
    seen[key] = true;
    if (!field->second(value))
      return invalid("signature field '" + key + "' has a malformed value '" +
                     value + "'");
  }
  // What a variant is must be said; the rest defaults as in Signature
  // (no window, no soft cap, no ALiBi, LSE on, bf16, varlen, tile chosen by a pass)
  // or Signature::decode() (causal, LSE on, bf16, not batch-invariant).
  const std::vector<std::string> requiredFields =
      decode  ? std::vector<std::string>{"qk", "v", "hq", "q_len", "page",
                                        "arch"}
      : merge  ? std::vector<std::string>{"v", "hq", "arch"}
      : paged ? std::vector<std::string>{"hq", "hkv", "v", "q_len", "page",
                                         "arch"}
      : expand ? std::vector<std::string>{"page", "arch"}
      : write  ? std::vector<std::string>{"qk", "v", "page", "arch"}
      : reshape ? std::vector<std::string>{"hkv", "v", "page", "arch"}
      : gather  ? std::vector<std::string>{"hkv", "v", "page", "arch"}
              : std::vector<std::string>{"qk", "v", "hq", "hkv", "mask",
                                         "arch"};
  // Both inputs of a merge have the output's type.
  if (merge)
    sig.qType = sig.kvType = sig.outType;
  // A cache write's inputs have the cache's type unless it is fp8 (then
  // in= says, bf16 by default); q and out keep the inputs' type.
  if (write || reshape) {
    if (!seen["in"])
      sig.qType = sig.kvType == DType::FP8E4M3 ? DType::BF16 : sig.kvType;
    sig.outType = sig.qType;
  }
  // A gather's outputs have the cache's type unless it is fp8 (then out=
  // says, bf16 by default); q keeps the outputs' type.
  if (gather) {
    if (!seen["out"])
      sig.outType = sig.kvType == DType::FP8E4M3 ? DType::BF16 : sig.kvType;
    sig.qType = sig.outType;
  }
  // One head dim for q, k and v; q and out default to a 16-bit cache's
  // type, bf16 for an fp8 cache.
  if (paged) {
    sig.headDimQK = sig.headDimV;
    const DType input = sig.kvType == DType::FP8E4M3 ? DType::BF16 : sig.kvType;
    if (!seen["q"])
      sig.qType = seen["out"] ? sig.outType : input;
    if (!seen["out"])
      sig.outType = sig.qType;
  }
  for (const std::string &required : requiredFields)
    if (!seen[required])
      return invalid("signature is missing field '" + required + "'");
  out = sig;
  return Status::ok();
}

} // namespace mlagen
