//===- DecodeLaunch.h - check a decode step, lay out launches -*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_DECODELAUNCH_H
#define MLAGEN_LIB_RUNTIME_DECODELAUNCH_H

#include "DecodeParams.h"
#include "DeviceBackend.h"

namespace mlagen {

// mlagen_decode then mlagen_decode_reduce, with one parameter block.
struct DecodeLaunch {
  DecodeParams params{};
  LaunchGeometry decode, reduce;
};

// Checks `args` against the decode kernel built for `sig` as `code`, and
// fills `out`. InvalidArgument names the argument and the rule; a batch of 0
// is valid and sets `empty` (nothing to launch).
Status prepareDecodeLaunch(const Signature &sig, const CodeObject &code,
                           const DecodeArgs &args, DecodeLaunch &out,
                           bool &empty);

// Whether the kernel reads whole pages with bulk tensor copies (sm_90a,
// 64-row blocks, pages of one 64-key tile, a 16-bit cache); if so,
// `request` describes the cache of `launch` as [pages][64 keys][qk dim] in
// 64 x 64 boxes. The kernel falls back to cp.async when kv_map_ready is 0.
bool describeCacheTensorMap(const Signature &sig, const CodeObject &code,
                            const DecodeArgs &args, const DecodeLaunch &launch,
                            TensorMapRequest &request);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DECODELAUNCH_H
