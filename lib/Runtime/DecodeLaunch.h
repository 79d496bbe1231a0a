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

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DECODELAUNCH_H
