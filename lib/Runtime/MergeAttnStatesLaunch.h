//===- MergeAttnStatesLaunch.h - check a merge, lay out its launch -*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_MERGEATTNSTATESLAUNCH_H
#define MLAGEN_LIB_RUNTIME_MERGEATTNSTATESLAUNCH_H

#include "DeviceBackend.h"

#include <cstddef>

namespace mlagen {

// Host mirror of mlagen_merge_attn_states_params
// (templates/kernels/merge_attn_states.hip), passed by value.
struct MergeAttnStatesParams {
  const void *prefix_out;
  const float *prefix_lse;
  const void *suffix_out;
  const float *suffix_lse;
  void *out;
  float *out_lse;
  long long prefix_token_stride, prefix_head_stride;
  long long suffix_token_stride, suffix_head_stride;
  long long out_token_stride, out_head_stride;
  long long prefix_lse_head_stride, suffix_lse_head_stride,
      out_lse_head_stride;
  int num_tokens;
  int reserved;
};

static_assert(offsetof(MergeAttnStatesParams, prefix_token_stride) == 48);
static_assert(offsetof(MergeAttnStatesParams, prefix_lse_head_stride) == 96);
static_assert(offsetof(MergeAttnStatesParams, num_tokens) == 120);
static_assert(sizeof(MergeAttnStatesParams) == 128);

struct MergeAttnStatesLaunch {
  MergeAttnStatesParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the merge kernel built for `sig` as `code` and
// fills `out`. InvalidArgument names the argument and the rule; 0 tokens is
// valid and sets `empty` (nothing to launch).
Status prepareMergeAttnStatesLaunch(const Signature &sig,
                                    const CodeObject &code,
                                    const MergeAttnStatesArgs &args,
                                    MergeAttnStatesLaunch &out, bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_MERGEATTNSTATESLAUNCH_H
