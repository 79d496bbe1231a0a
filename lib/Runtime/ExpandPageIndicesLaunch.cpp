//===- ExpandPageIndicesLaunch.cpp - check a page-index expansion ---------===//
#include "ExpandPageIndicesLaunch.h"

#include <cstdint>
#include <string>

namespace mlagen {
namespace {

Status invalidArgument(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

} // namespace

Status prepareExpandPageIndicesLaunch(const Signature &sig,
                                      const CodeObject &code,
                                      const ExpandPageIndicesArgs &args,
                                      ExpandPageIndicesLaunch &out,
                                      bool &empty) {
  empty = false;
  if (sig.op != OpKind::ExpandPageIndices)
    return invalidArgument(
        std::string("runExpandPageIndices needs an expand_page_indices "
                    "kernel, not ") +
        opKindName(sig.op));
  if (code.threadsPerBlock < 1)
    return Status(StatusCode::Internal,
                  "the expand_page_indices code object for '" +
                      sig.canonical() + "' lacks its block size");
  // batch is grid.y: CUDA allows 65535.
  if (args.batch < 0 || args.batch > 65535)
    return invalidArgument("batch must be in [0, 65535] (got " +
                           std::to_string(args.batch) + ")");
  if (args.maxSeqlen < 0)
    return invalidArgument("max_seqlen must be >= 0 (got " +
                           std::to_string(args.maxSeqlen) + ")");
  if (args.batch == 0 || args.maxSeqlen == 0) {
    empty = true;
    return Status::ok();
  }
  if (args.blockTableStride < 1)
    return invalidArgument("block_table_stride must be > 0 (got " +
                           std::to_string(args.blockTableStride) + ")");
  const struct {
    const char *name;
    const void *ptr;
    bool required;
  } pointers[] = {
      {"block_table", args.blockTable, true},
      {"cu_seqlens", args.cuSeqlens, true},
      {"seq_starts", args.seqStarts, false},
      {"slots", args.slots, true},
  };
  for (const auto &p : pointers) {
    if (!p.ptr) {
      if (p.required)
        return invalidArgument(std::string(p.name) + " is null");
      continue;
    }
    // A misaligned scalar access faults the whole GPU context.
    if (reinterpret_cast<uintptr_t>(p.ptr) % 4 != 0)
      return invalidArgument(std::string(p.name) + " must be 4-byte aligned");
  }

  out.params = {args.blockTable, args.cuSeqlens,        args.seqStarts,
                args.slots,      args.blockTableStride, args.batch};
  out.geometry.grid[0] = static_cast<unsigned>(
      (int64_t(args.maxSeqlen) + code.threadsPerBlock - 1) /
      code.threadsPerBlock);
  out.geometry.grid[1] = static_cast<unsigned>(args.batch);
  out.geometry.grid[2] = 1;
  out.geometry.threadsPerBlock = static_cast<unsigned>(code.threadsPerBlock);
  out.geometry.sharedBytes = static_cast<unsigned>(code.sharedBytes);
  return Status::ok();
}

} // namespace mlagen
