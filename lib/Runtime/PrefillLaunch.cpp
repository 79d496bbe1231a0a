//===- PrefillLaunch.cpp - check a prefill, lay out its launch ------------===//
#include "PrefillLaunch.h"
#include "LaunchChecks.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace mlagen {

Status preparePrefillLaunch(const Signature &sig, const CodeObject &code,
                            const PrefillArgs &args, PrefillLaunch &out,
                            bool &empty) {
  empty = false;
  if (sig.op != OpKind::Prefill)
    return invalidArgument(std::string("runPrefill needs a prefill kernel, "
                                       "not ") +
                           opKindName(sig.op));

  // batch is grid.z: CUDA allows 65535.
  if (args.batch < 1 || args.batch > 65535)
    return invalidArgument("batch must be in [1, 65535] (got " +
                           std::to_string(args.batch) + ")");
  if (args.maxSeqlenQ < 0)
    return invalidArgument("max_seqlen_q must be >= 0 (got " +
                           std::to_string(args.maxSeqlenQ) + ")");
  if (args.maxSeqlenQ == 0) {
    empty = true;
    return Status::ok();
  }
  for (auto [name, ptr] : {std::pair<const char *, const void *>{"q", args.q},
                           {"k", args.k},
                           {"v", args.v},
                           {"out", args.out},
                           {"cu_seqlens_q", args.cuSeqlensQ},
                           {"cu_seqlens_k", args.cuSeqlensK}})
    if (!ptr)
      return invalidArgument(std::string(name) + " is null");
  // The kernel moves q, k, v and out in 16-byte vectors (cp.async, ldmatrix).
  for (auto [name, ptr] : {std::pair<const char *, const void *>{"q", args.q},
                           {"k", args.k},
                           {"v", args.v},
                           {"out", args.out}})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      return invalidArgument(std::string(name) +
                             " must be 16-byte aligned (the kernel loads "
                             "16-byte vectors)");
  // A misaligned scalar access faults the whole GPU context, not just this
  // launch: check the 4-byte ones too.
  for (auto [name, ptr] :
       {std::pair<const char *, const void *>{"cu_seqlens_q", args.cuSeqlensQ},
        {"cu_seqlens_k", args.cuSeqlensK},
        {"lse", sig.returnLSE ? args.lse : nullptr}})
    if (reinterpret_cast<uintptr_t>(ptr) % 4 != 0)
      return invalidArgument(std::string(name) + " must be 4-byte aligned");

  // 0 selects the contiguous stride.
  const int64_t hq = sig.numQHeads, hkv = sig.numKVHeads;
  const int64_t dqk = sig.headDimQK, dv = sig.headDimV;
  long long resolved[8];
  if (Status status = resolveStrides(
          {
              {"q_token_stride", args.qTokenStride, hq * dqk},
              {"q_head_stride", args.qHeadStride, dqk},
              {"k_token_stride", args.kTokenStride, hkv * dqk},
              {"k_head_stride", args.kHeadStride, dqk},
              {"v_token_stride", args.vTokenStride, hkv * dv},
              {"v_head_stride", args.vHeadStride, dv},
              {"out_token_stride", args.outTokenStride, hq * dv},
              {"out_head_stride", args.outHeadStride, dv},
          },
          resolved);
      !status)
    return status;
  float *lse = sig.returnLSE ? args.lse : nullptr;
  if (lse && args.lseHeadStride <= 0)
    return invalidArgument("lse_head_stride must be > 0 when lse is given "
                           "(total_q for [num_q_heads, total_q]; got " +
                           std::to_string(args.lseHeadStride) + ")");
  if (!std::isfinite(args.softmaxScale))
    return invalidArgument("softmax_scale must be finite, 0 meaning "
                           "1/sqrt(head_dim_qk)");
  if (sig.alibi && !args.alibiSlopes)
    return invalidArgument("alibi_slopes is null, but the kernel has alibi=1: "
                           "pass [num_q_heads] fp32 slopes");
  if (!sig.alibi && args.alibiSlopes)
    return invalidArgument("alibi_slopes is given, but the kernel has "
                           "alibi=0 and would ignore them: build it with "
                           "alibi=1");
  if (reinterpret_cast<uintptr_t>(args.alibiSlopes) % 4 != 0)
    return invalidArgument("alibi_slopes must be 4-byte aligned");

  if (args.totalK < 0)
    return invalidArgument("total_k must be >= 0, 0 meaning unknown (got " +
                           std::to_string(args.totalK) + ")");

  out.params = {
      args.q,
      args.k,
      args.v,
      args.out,
      lse,
      args.cuSeqlensQ,
      args.cuSeqlensK,
      resolved[0],
      resolved[1],
      resolved[2],
      resolved[3],
      resolved[4],
      resolved[5],
      resolved[6],
      resolved[7],
      lse ? args.lseHeadStride : 0,
      args.batch,
      args.maxSeqlenQ,
      args.softmaxScale != 0.0f
          ? args.softmaxScale
          : 1.0f / std::sqrt(static_cast<float>(sig.headDimQK)),
      0,
      args.alibiSlopes,
      {},
      {},
  };
  LaunchGeometry &geometry = out.geometry;
  geometry.grid[0] =
      static_cast<unsigned>((args.maxSeqlenQ + code.tileQ - 1) / code.tileQ);
  geometry.grid[1] = static_cast<unsigned>(sig.numQHeads);
  geometry.grid[2] = static_cast<unsigned>(args.batch);
  geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

bool describePrefillTensorMaps(const Signature &sig, const CodeObject &code,
                               const PrefillArgs &args,
                               const PrefillLaunch &launch,
                               TensorMapRequest &k, TensorMapRequest &v) {
  // The warp-specialised kernel: a producer warpgroup plus one consumer
  // warpgroup per 64 query rows (templates/CONTRACT.md), 64-column slabs;
  // a box past a head dim that is not a multiple of 64 is zero-filled.
  const bool warpSpecialized =
      sig.arch == Arch::SM90A && code.tileQ % 64 == 0 &&
      code.threadsPerBlock == 128 * (code.tileQ / 64 + 1);
  if (!warpSpecialized || code.tileK < 1 || code.tileK > 256 ||
      sig.headDimQK < 64 || sig.headDimV < 64 || args.totalK < 1 ||
      args.totalK > (int64_t(1) << 31))
    return false;
  const PrefillParams &p = launch.params;
  auto describe = [&](TensorMapRequest &request, const void *base,
                      int64_t headDim, long long tokenStride,
                      long long headStride) {
    request.base = base;
    request.sizes[0] = static_cast<unsigned long long>(headDim);
    request.sizes[1] = static_cast<unsigned long long>(sig.numKVHeads);
    request.sizes[2] = static_cast<unsigned long long>(args.totalK);
    request.strides[0] = static_cast<unsigned long long>(headStride) * 2;
    request.strides[1] = static_cast<unsigned long long>(tokenStride) * 2;
    request.box[0] = 64; // 128 bytes: the swizzle's span
    request.box[1] = 1;
    request.box[2] = static_cast<unsigned>(code.tileK);
  };
  describe(k, p.k, sig.headDimQK, p.k_token_stride, p.k_head_stride);
  describe(v, p.v, sig.headDimV, p.v_token_stride, p.v_head_stride);
  return true;
}

} // namespace mlagen
