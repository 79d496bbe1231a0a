//===- MergeAttnStatesLaunch.cpp - check a merge, lay out its launch ------===//
#include "MergeAttnStatesLaunch.h"
#include "LaunchChecks.h"

#include <cstdint>
#include <string>

namespace mlagen {
Status prepareMergeAttnStatesLaunch(const Signature &sig,
                                    const CodeObject &code,
                                    const MergeAttnStatesArgs &args,
                                    MergeAttnStatesLaunch &out, bool &empty) {
  empty = false;
  if (sig.op != OpKind::MergeAttnStates)
    return invalidArgument(
        std::string("runMergeAttnStates needs a merge_attn_states kernel, "
                    "not ") +
        opKindName(sig.op));
  if (code.threadsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the merge_attn_states code object for '" +
                      sig.canonical() + "' lacks its block size");
  if (args.numHeads != sig.numQHeads)
    return invalidArgument("num_heads (" + std::to_string(args.numHeads) +
                           ") must equal the kernel's (" +
                           std::to_string(sig.numQHeads) + ")");
  if (args.headDim != sig.headDimV)
    return invalidArgument("head_dim (" + std::to_string(args.headDim) +
                           ") must equal the kernel's (" +
                           std::to_string(sig.headDimV) + ")");
  if (args.numTokens < 0)
    return invalidArgument("num_tokens must be >= 0 (got " +
                           std::to_string(args.numTokens) + ")");
  if (args.numTokens == 0) {
    empty = true;
    return Status::ok();
  }

  float *outLse = sig.returnLSE ? args.outLse : nullptr;
  if (Status status = checkDevicePointers(
          {{"prefix_out", args.prefixOut, 16, true},
           {"prefix_lse", args.prefixLse, 4, true},
           {"suffix_out", args.suffixOut, 16, true},
           {"suffix_lse", args.suffixLse, 4, true},
           {"out", args.out, 16, true},
           {"out_lse", outLse, 4, false}},
          "loads");
      !status)
    return status;

  const int64_t heads = sig.numQHeads, dim = sig.headDimV;
  long long resolved[6];
  if (Status status = resolveStrides(
          {
              {"prefix_token_stride", args.prefixTokenStride, heads * dim},
              {"prefix_head_stride", args.prefixHeadStride, dim},
              {"suffix_token_stride", args.suffixTokenStride, heads * dim},
              {"suffix_head_stride", args.suffixHeadStride, dim},
              {"out_token_stride", args.outTokenStride, heads * dim},
              {"out_head_stride", args.outHeadStride, dim},
          },
          resolved);
      !status)
    return status;
  // An LSE row holds a head's num_tokens values: a shorter stride would
  // make heads overlap.
  const StrideArg lseStrides[] = {
      {"prefix_lse_head_stride", args.prefixLseHeadStride, args.numTokens},
      {"suffix_lse_head_stride", args.suffixLseHeadStride, args.numTokens},
      {"out_lse_head_stride", args.outLseHeadStride, args.numTokens},
  };
  long long lseResolved[3];
  for (int i = 0; i < 3; ++i) {
    const StrideArg &s = lseStrides[i];
    if (s.given != 0 && s.given < args.numTokens)
      return invalidArgument(std::string(s.name) +
                             " must be 0 (num_tokens) or >= num_tokens (" +
                             std::to_string(args.numTokens) + "; got " +
                             std::to_string(s.given) + ")");
    lseResolved[i] = s.given ? s.given : s.contiguous;
  }

  const int64_t vectors = int64_t(args.numTokens) * heads * (dim / 8);
  const int64_t blocks =
      (vectors + code.threadsPerBlock - 1) / code.threadsPerBlock;
  if (blocks > INT32_MAX)
    return invalidArgument("num_tokens * num_heads * head_dim / 8 needs " +
                           std::to_string(blocks) +
                           " blocks, more than a grid's x dimension holds");

  out.params = {args.prefixOut, args.prefixLse,  args.suffixOut,
                args.suffixLse, args.out,        outLse,
                resolved[0],    resolved[1],     resolved[2],
                resolved[3],    resolved[4],     resolved[5],
                lseResolved[0], lseResolved[1],  outLse ? lseResolved[2] : 0,
                args.numTokens, 0};
  out.geometry.grid[0] = static_cast<unsigned>(blocks);
  out.geometry.grid[1] = 1;
  out.geometry.grid[2] = 1;
  out.geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

} // namespace mlagen
