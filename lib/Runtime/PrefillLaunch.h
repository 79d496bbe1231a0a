//===- PrefillLaunch.h - check a prefill, lay out its launch ---*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_PREFILLLAUNCH_H
#define MLAGEN_LIB_RUNTIME_PREFILLLAUNCH_H

#include "DeviceBackend.h"
#include "PrefillParams.h"

namespace mlagen {

struct PrefillLaunch {
  PrefillParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the prefill kernel built for `sig` as `code` and
// fills `out` (kv_maps_ready 0). InvalidArgument names the argument and the
// rule; max_seqlen_q 0 is valid and sets `empty` (nothing to launch).
Status preparePrefillLaunch(const Signature &sig, const CodeObject &code,
                            const PrefillArgs &args, PrefillLaunch &out,
                            bool &empty);

// Whether the kernel can copy K and V tiles with bulk tensor copies (the
// sm_90a warp-specialised kernel, and args.totalK known); if so, `k` and `v`
// describe k and v of `launch` as (head dim, kv head, token) in boxes of
// 64 columns x 1 head x tileK tokens. The kernel falls back to cp.async
// when kv_maps_ready is 0.
bool describePrefillTensorMaps(const Signature &sig, const CodeObject &code,
                               const PrefillArgs &args,
                               const PrefillLaunch &launch,
                               TensorMapRequest &k, TensorMapRequest &v);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PREFILLLAUNCH_H
