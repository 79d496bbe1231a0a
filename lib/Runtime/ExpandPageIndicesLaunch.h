//===- ExpandPageIndicesLaunch.h - check a page-index expansion -*- C++ -*-===//
#ifndef MLAGEN_LIB_RUNTIME_EXPANDPAGEINDICESLAUNCH_H
#define MLAGEN_LIB_RUNTIME_EXPANDPAGEINDICESLAUNCH_H

#include "DeviceBackend.h"

#include <cstddef>

namespace mlagen {

// Host mirror of mlagen_expand_page_indices_params
// (templates/kernels/expand_page_indices.hip), passed by value.
struct ExpandPageIndicesParams {
  const int *block_table;
  const int *cu_seqlens;
  const int *seq_starts;
  int *slots;
  int block_table_stride;
  int batch;
};

static_assert(offsetof(ExpandPageIndicesParams, slots) == 24);
static_assert(offsetof(ExpandPageIndicesParams, batch) == 36);
static_assert(sizeof(ExpandPageIndicesParams) == 40);

struct ExpandPageIndicesLaunch {
  ExpandPageIndicesParams params{};
  LaunchGeometry geometry;
};

// Checks `args` against the kernel built for `sig` as `code` and fills
// `out`; InvalidArgument names the argument. A batch or max_seqlen of 0 sets
// `empty` (nothing to launch).
Status prepareExpandPageIndicesLaunch(const Signature &sig,
                                      const CodeObject &code,
                                      const ExpandPageIndicesArgs &args,
                                      ExpandPageIndicesLaunch &out,
                                      bool &empty);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_EXPANDPAGEINDICESLAUNCH_H
