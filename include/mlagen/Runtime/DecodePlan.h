//===- DecodePlan.h - split-KV work lists for MLA decode ------*- C++ -*-===//
//
// Decode reads each request's keys in chunks, one block per chunk, so that a
// few long requests still fill the GPU; a request cut into several chunks is
// merged by LSE (templates/DECODE_CONTRACT.md). A request of two chunks is
// merged in the decode grid: inside a thread-block cluster through
// distributed shared memory on kernels that can (CodeObject::clusterParts),
// else by whichever of its two blocks finishes second, through global
// memory (not on the 16-row e4m3 kernels that merge pairs in clusters:
// gridMerge()); one of more chunks, and those pairs, by a second kernel,
// the reduce. A step with no
// request of more than two chunks is one launch. The
// planner runs on the host before each step, on the sequence lengths the
// engine holds there already (vLLM's seq_lens_cpu). It allocates nothing on
// the device: it says how large the fixed device buffers must be, and the
// host copies each plan into them, so the launches that read them can be
// captured once in a CUDA/HIP graph and replayed:
//
//   DecodePlanner planner;                                   // at start-up
//   DecodePlanner::create(*kernel, {.maxBatch = 256, .numSMs = 132}, planner);
//   const DecodeBufferSizes &sizes = planner.sizes();
//   // allocate once: plan (sizes.planInts int32, 16-byte aligned), pinned
//   // host plan of the same size, partial_out (sizes.partialOutFloats),
//   // partial_lse (sizes.partialLseFloats)
//   DecodePlanSummary s;                                     // every step:
//   planner.plan(seqLensHost, batch, hostPlan, sizes.planInts, &s);
//   cudaMemcpyAsync(devicePlan, hostPlan, 4 * s.usedInts, H2D, stream);
//   DecodeArgs args = {...};
//   planner.bindPlan(devicePlan, partialOut, partialLse, args);
//   runtime->runDecode(*kernel, args);                       // no host sync
//
// The plan is one int32 array (so one copy moves it):
//   [0, 4)                          num_work, reduce slots, batch, merge groups
//   [mergeOffset, +2 * maxBatch)    merge: (first_slot, num_slots) per request,
//                                   num_slots -2: a pair merged in the grid
//   [arrivalOffset, +arrivalInts)   arrival counters (zero; decode only)
//   [workOffset, +4 * workCapacity) work: (request, key_begin, key_end, slot),
//                                   slot + 2^30 for a pair merged in the grid
// Only [0, usedInts) of a plan is read by the kernels. The decode kernel
// counts arrivals in the device copy and leaves them zero again, so a
// replayed graph may reuse a copy.
//
// Thread safety: a DecodePlanner is immutable after create(); plan() may run
// on any number of threads at once.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_DECODEPLAN_H
#define MLAGEN_RUNTIME_DECODEPLAN_H

#include "mlagen/Runtime/Runtime.h"

#include <cstdint>
#include <vector>

namespace mlagen {

struct DecodePlanOptions {
  int maxBatch = 0; // requests per step, at most
  int numSMs = 0;   // SMs (NVIDIA) or CUs (AMD) of the device
  // Keys of the longest request. Batch-invariant kernels need it (> 0) to
  // size the work list; otherwise optional: 0 is unbounded.
  int64_t maxSeqLen = 0;
  // Optional: keys of all requests of one step together (the cache's
  // capacity, num_blocks * page_size); 0 is unknown. Bounds the buffers of
  // batch-invariant kernels more tightly than maxBatch * maxSeqLen.
  int64_t maxTotalKeys = 0;
  // Balanced mode: no chunk is shorter than this (rounded up to tileK), so
  // a chunk's partial write and merge stay small beside its key reads.
  // 0: the kernel's floors (DecodePlanner::minChunkKeysFor, and for steps
  // that leave most SMs idle DecodePlanner::smallStepChunkKeysFor).
  int minChunkKeys = 0;
  // Batch-invariant mode: chunk boundaries at every multiple of this many
  // keys, whatever the batch or the device. Any value >= 1 works; a
  // multiple of the kernel's tileK leaves no tile part-used.
  int invariantChunkKeys = 1024;
  // Merge a request of clusterBlocks chunks inside a cluster where the
  // kernel can (sm_90a's 16-row kernels; on a 16-bit cache only chunks
  // longer than clusterMergeAbove()); false, or MLAGEN_CLUSTER_MERGE=0 in
  // the environment, merges them like any other split request (pairs in
  // the grid where the kernel can, gridMerge(); else the reduce).
  bool clusterMerge = true;
  // Merge a request of two chunks that no cluster merges in the decode
  // grid, by the block that finishes second (MLA decode kernels but the
  // 16-row e4m3 ones that merge pairs in clusters); false, or
  // MLAGEN_GRID_MERGE=0 in the environment, leaves them to the reduce.
  bool gridMerge = true;
};

// What the host allocates once, for any batch up to maxBatch.
struct DecodeBufferSizes {
  int workCapacity = 0; // work items: grid.x of mlagen_decode
  int slotCapacity = 0; // partial results of split requests (>= 1)
  // Blocks per cluster of mlagen_decode (grid.x, a multiple of it): 2 when
  // requests of two chunks merge in their cluster, else 1.
  int clusterBlocks = 1;
  int rows = 0;         // q rows per request: q_len * padded heads
  int64_t planInts = 0; // int32 elements of the plan
  // int32 offsets in the plan, and the arrival counters' count
  int64_t mergeOffset = 4, arrivalOffset = 0, arrivalInts = 0, workOffset = 0;
  int64_t partialOutFloats = 0;            // slotCapacity * rows * head_dim_v
  int64_t partialLseFloats = 0;            // slotCapacity * rows
};

struct DecodePlanSummary {
  int numWork = 0;       // work items (decode blocks that do work, per y)
  int numSlots = 0;      // partial slots in use
  // Of those, the slots the reduce merges (plan[1]): pass it as
  // DecodeArgs::planSlots; 0 means one launch.
  int reduceSlots = 0;
  int mergeGroups = 0;   // requests merged inside a cluster
  int64_t chunkKeys = 0; // keys per chunk (the last of a request: fewer)
  int64_t usedInts = 0;  // the prefix of the plan the kernels read
};

class DecodePlanner {
public:
  // `code` is the decode kernel's (Kernel::codeObject()): its tileK,
  // padded heads and rows per block shape the plan. decode and
  // paged_decode kernels (the latter: rows = q_len x hq, a block per kv
  // head's row block) share it.
  static Status create(const Signature &sig, const CodeObject &code,
                       const DecodePlanOptions &options, DecodePlanner &out);
  static Status create(const Kernel &kernel, const DecodePlanOptions &options,
                       DecodePlanner &out);

  const DecodeBufferSizes &sizes() const { return sizes_; }
  // The options as planned with (minChunkKeys resolved).
  const DecodePlanOptions &options() const { return options_; }
  // The shortest chunk a kernel's balanced plans take when the caller
  // leaves minChunkKeys 0.
  static int minChunkKeysFor(const Signature &sig, int blocksPerChunk);
  // The same for small steps: those whose chunks of this many keys (or of
  // a doubling below minChunkKeysFor) fill at most half a wave of blocks
  // and whose longest request is longer than minChunkKeysFor.
  static int smallStepChunkKeysFor(const Signature &sig, int blocksPerChunk);
  // Work items a plan of any batch holds beyond one a request: one wave's
  // blocks over the blocks of a chunk (chunks are never shorter than the
  // step's keys over a wave). -1 for batch-invariant plans, whose chunks
  // are fixed.
  int workSlack() const;
  // A request of one cluster's chunks merges in its cluster only when the
  // step's chunks are longer than this many keys (else in the grid).
  int64_t clusterMergeAbove() const { return clusterMergeAbove_; }
  // Whether pairs no cluster merges merge in the grid: the option, unless
  // the environment or the kernel leaves them to the reduce (paged_decode
  // kernels, and the 16-row e4m3 kernels that merge pairs in clusters,
  // carry no grid merge).
  bool gridMerge() const { return gridMerge_; }

  // Plans one step of `batch` requests (0 <= batch <= maxBatch) with
  // seqLens[b] keys each (host memory) into `plan` (host, planInts int32).
  // A request with no keys still gets a work item: its rows are written as
  // zeros with LSE -inf. InvalidArgument names the request at fault.
  Status plan(const int32_t *seqLens, int batch, int32_t *plan,
              int64_t planInts, DecodePlanSummary *summary = nullptr) const;
  Status plan(const std::vector<int32_t> &seqLens, std::vector<int32_t> &plan,
              DecodePlanSummary *summary = nullptr) const;

  // Points args' plan fields at a device copy of a plan (`devicePlan`, 16-
  // byte aligned: writable device memory, whose arrival counters the
  // kernel updates) and at the partial buffers; sets workCapacity,
  // workSlack, maxBatch and clusterBlocks.
  void bindPlan(const int32_t *devicePlan, float *partialOut, float *partialLse,
                DecodeArgs &args) const;
  // The same for a paged GQA decode step (a planner made from a
  // paged_decode kernel).
  void bindPlan(const int32_t *devicePlan, float *partialOut, float *partialLse,
                PagedDecodeArgs &args) const;

private:
  DecodePlanOptions options_;
  DecodeBufferSizes sizes_;
  bool batchInvariant_ = false;
  int tileK_ = 0;
  int blocksPerChunk_ = 0; // grid.y: decode blocks that share one chunk
  int waveBlocks_ = 0;     // blocks one wave holds: numSMs x blocks per SM
  int clusterBlocks_ = 1;  // sizes_.clusterBlocks
  bool gridMerge_ = false; // pairs not merged in clusters merge in the grid
  int64_t clusterMergeAbove_ = 0; // clusterMergeAbove()
  // The small-step floor (smallStepChunkKeysFor, or the caller's
  // minChunkKeys), and the blocks a small step fills at most (half a
  // wave; its work items are these over blocksPerChunk_).
  int smallStepChunkKeys_ = 0;
  int64_t smallStepBlocks() const { return waveBlocks_ / 2; }
};

} // namespace mlagen

#endif // MLAGEN_RUNTIME_DECODEPLAN_H
