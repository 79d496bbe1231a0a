//===- PagedDecodeLaunch.h - check a paged decode step -------*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_PAGEDDECODELAUNCH_H
#define MLAGEN_LIB_RUNTIME_PAGEDDECODELAUNCH_H

#include "DeviceBackend.h"
#include "PagedDecodeParams.h"

namespace mlagen {

// mlagen_paged_decode then mlagen_paged_decode_reduce, one parameter block.
struct PagedDecodeLaunch {
  PagedDecodeParams params{};
  LaunchGeometry decode, reduce;
};

// Checks `args` against the paged_decode kernel built for `sig` as `code`
// and fills `out`. InvalidArgument names the argument and the rule; a batch
// of 0 is valid and sets `empty`.
Status preparePagedDecodeLaunch(const Signature &sig, const CodeObject &code,
                                const PagedDecodeArgs &args,
                                PagedDecodeLaunch &out, bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_PAGEDDECODELAUNCH_H
