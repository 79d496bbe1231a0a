//===- DecodePlan.cpp - split-KV work lists for absorbed MLA decode -------===//
//
// Balanced mode picks one chunk length per step. Starting from the length
// that spreads all keys evenly over the SMs (never below minChunkKeys, or
// in small steps the small-step floor: smallStepChunkKeysFor), it
// tries a few longer ones and keeps the one with the least estimated time:
// waves of blocks times the longest chunk, each block paying a fixed cost,
// and a merge cost where a request is split.
// Every chunk length it tries is at least the even spread, which bounds the
// work items by numSMs / blocksPerChunk + batch and the partial slots by
// 2 * numSMs / blocksPerChunk: the buffer sizes hold for any step.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Runtime/DecodePlan.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace mlagen {
namespace {

// A block's cost beyond its keys, in keys: loading its q rows (16 rows of
// 576 bf16 weigh as much as 16 keys) and writing 16 rows of 512 fp32
// partials (as much as 28 keys), rounded up.
constexpr int64_t kBlockOverheadKeys = 64;
// 16-bit caches: a pair of chunks of at most this many keys merges faster
// in the grid (the block that finishes second adds the two) than in a
// cluster; longer ones merge faster in the cluster. B64 H16 bf16, grid
// against cluster, S1024 / 1536 / 2048 / 3072 / 4096: H100 41.9 / 55.7 /
// 69.5 / 96.7 / 122.7 us against 44.6 / 58.5 / 70.2 / 94.7 / 118.9; H200
// 34.6 / 43.9 / 53.6 / 72.7 / 91.6 against 35.8 / 45.6 / 54.7 / 71.1 /
// 88.1. The e4m3 kernels gain from clusters at every length.
constexpr int64_t kGridMergeMaxChunk16 = 1024;
// A step that splits a request pays its merge (a pair in a cluster or the
// grid, else the reduce), in keys: enough that a lone request of two
// 128-key chunks stays whole (H200, B1 S256: 13.9 us whole, 15.5 split).
constexpr int64_t kSplitKeys = 128;
// Chunk lengths tried above the even spread, in steps of tileK.
constexpr int kChunkCandidates = 16;
// Added to the slot of a work item whose request is a pair merged in the
// grid (the kernels' kGridPair): only those blocks count their arrival.
constexpr int64_t kGridPair = int64_t(1) << 30;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

Status invalidArgument(const std::string &message) {
  return Status(StatusCode::InvalidArgument, message);
}

std::string got(int64_t value) {
  return " (got " + std::to_string(value) + ")";
}

// Chunks of a request with `len` keys; an empty request still takes one
// work item, which writes its zero rows.
int64_t chunksOf(int64_t len, int64_t chunk) {
  return len == 0 ? 1 : ceilDiv(len, chunk);
}

// Decode blocks an SM holds at once, as shared memory allows (NVIDIA: 228
// KB per SM on sm_90a, 164 KB on sm_80, 1 KB reserved per block), up to 4
// and to what the kernel's launch bounds leave registers for where it says
// (CodeObject::blocksPerSM: paged decode's fp8 blocks take 4, its 16-row
// fp8 blocks 2 although shared memory would hold 3). CDNA: 1 (not
// measured).
int64_t blocksPerSM(const Signature &sig, const CodeObject &code) {
  int64_t perSM = 0;
  if (sig.arch == Arch::SM90A)
    perSM = 233472;
  else if (sig.arch == Arch::SM80)
    perSM = 167936;
  if (perSM == 0 || code.sharedBytes <= 0)
    return 1;
  const int64_t limit =
      code.blocksPerSM > 0 ? std::min(code.blocksPerSM, 4) : 4;
  return std::clamp<int64_t>(perSM / (code.sharedBytes + 1024), 1, limit);
}

bool disabledByEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value && std::strcmp(value, "0") == 0;
}

} // namespace

// sm_90a's MLA decode blocks of 16 or 32 rows (one block a chunk) on a
// 16-bit cache start and write their partial cheaply, so small steps gain
// from twice the blocks: chunks of two 64-key tiles (H200,
// bench/probes/probe_small.py: B1 S4096 18.0 -> 15.8 us, B2 S4096 18.9 ->
// 17.3, B1 S1024 17.2 -> 14.2; one tile a chunk lost, 24.5 us at B1). The
// e4m3 kernels gained at B1-B2 but lost up to 8% elsewhere (B32 S512 18.8
// -> 20.3: their pairs went to the reduce), paged GQA decode lost 19% at
// B1 (21.2 -> 25.2 us) and 64-row blocks 3% at B2: they keep 256, as do
// the kernels not measured with it.
int DecodePlanner::minChunkKeysFor(const Signature &sig, int blocksPerChunk) {
  const bool cache16 = sig.kvType == DType::BF16 || sig.kvType == DType::FP16;
  return sig.op == OpKind::Decode && sig.arch == Arch::SM90A &&
                 blocksPerChunk == 1 && cache16
             ? 128
             : 256;
}

// Steps that leave most SMs idle are the latency of their longest chain,
// and shorter chunks shorten it: sm_90a's MLA decode (any rows, any cache)
// takes chunks of one 64-key tile while they need at most half a wave of
// blocks, else two tiles while those do, else the kernel's floor. H100,
// bench/probes/probe_fp8_small.py, two tiles against four on an fp8 cache
// (fp8 q): B1 S4096 16.5 -> 14.9-15.1 us, B1 S1024 16.0-16.1 -> 13.8-14.0,
// B8 S1024 18.7-18.8 -> 17.3-17.4; where two-tile chunks fill the SMs they
// lose (B32 S512 17.1-17.7 -> 18.0-18.8: its pairs went to the reduce).
// H200, 128 heads, two tiles against four: B1 S1024 24.6-25.1 -> 20.4-20.7
// (bf16), 42.5-42.7 -> 36.1-36.2 (fp8 cache). One tile against two (H200,
// same probe): 16 heads bf16 B1 S1024 13.4-13.5 -> 12.4-12.6, B1 S512
// 13.2-13.4 -> 12.1-12.2, B4 S512 14.1-14.3 -> 13.1-13.4; 128 heads fp8 q
// B1 S1024 25.3-25.8 -> 22.3-22.4; none slower (the thirty-fourth stop's
// one-tile chunks lost to a one-tile path the kernels no longer have).
int DecodePlanner::smallStepChunkKeysFor(const Signature &sig,
                                         int blocksPerChunk) {
  return sig.op == OpKind::Decode && sig.arch == Arch::SM90A
             ? 64
             : minChunkKeysFor(sig, blocksPerChunk);
}

Status DecodePlanner::create(const Kernel &kernel,
                             const DecodePlanOptions &options,
                             DecodePlanner &out) {
  return create(kernel.signature(), kernel.codeObject(), options, out);
}

Status DecodePlanner::create(const Signature &sig, const CodeObject &code,
                             const DecodePlanOptions &options,
                             DecodePlanner &out) {
  if (sig.op != OpKind::Decode && sig.op != OpKind::PagedDecode)
    return invalidArgument(std::string("DecodePlanner needs a decode or "
                                       "paged_decode kernel, not ") +
                           opKindName(sig.op));
  if (Status status = sig.validate(); !status)
    return status;
  if (code.tileK < 1 || code.tileQ < 1 || code.paddedHeads < sig.numQHeads)
    return invalidArgument("the code object has no decode geometry (tile_k " +
                           std::to_string(code.tileK) + ", rows per block " +
                           std::to_string(code.tileQ) + ", padded heads " +
                           std::to_string(code.paddedHeads) +
                           "): was it built for '" + sig.canonical() + "'?");
  if (options.maxBatch < 1 || options.maxBatch > (1 << 20))
    return invalidArgument("max_batch must be in [1, 1048576]" +
                           got(options.maxBatch));
  if (options.numSMs < 1 || options.numSMs > 65536)
    return invalidArgument("num_sms must be in [1, 65536]" +
                           got(options.numSMs));
  if (options.maxSeqLen < 0 || options.maxSeqLen > INT32_MAX)
    return invalidArgument("max_seq_len must be in [0, 2^31 - 1], 0 meaning "
                           "unbounded" +
                           got(options.maxSeqLen));
  if (options.maxTotalKeys < 0)
    return invalidArgument("max_total_keys must be >= 0, 0 meaning unknown" +
                           got(options.maxTotalKeys));
  if (options.minChunkKeys < 0)
    return invalidArgument("min_chunk_keys must be >= 0, 0 meaning the "
                           "kernel's floor" +
                           got(options.minChunkKeys));

  DecodePlanner planner;
  planner.options_ = options;
  planner.batchInvariant_ = sig.batchInvariant;
  planner.tileK_ = code.tileK;
  const int64_t rows = int64_t(sig.qLen) * code.paddedHeads;
  planner.blocksPerChunk_ = static_cast<int>(ceilDiv(rows, code.tileQ));
  planner.waveBlocks_ =
      static_cast<int>(options.numSMs * blocksPerSM(sig, code));
  planner.smallStepChunkKeys_ = options.minChunkKeys;
  if (options.minChunkKeys == 0) {
    planner.options_.minChunkKeys =
        minChunkKeysFor(sig, planner.blocksPerChunk_);
    planner.smallStepChunkKeys_ =
        smallStepChunkKeysFor(sig, planner.blocksPerChunk_);
  }
  // A cluster spans grid x, so each chunk must be one block; batch-
  // invariant plans keep the reduce's fixed order. Clusters of two tile
  // every GPC of an H100/H200 (their SM counts are even), so a wave still
  // holds numSMs blocks.
  if (options.clusterMerge && !disabledByEnvironment("MLAGEN_CLUSTER_MERGE") &&
      sig.op == OpKind::Decode && code.clusterParts >= 2 &&
      planner.blocksPerChunk_ == 1 && !sig.batchInvariant)
    planner.clusterBlocks_ = 2;
  // The kernels that merge pairs of an fp8 cache in clusters (sm_90a's
  // 16-row e4m3 kernels, one block a chunk) carry no grid merge: with
  // clusters off their pairs go to the reduce (kGridPairs in
  // templates/kernels/mla_decode.hip).
  const bool gridPairs = !(sig.kvType == DType::FP8E4M3 &&
                           code.clusterParts > 1 &&
                           planner.blocksPerChunk_ == 1);
  planner.gridMerge_ = options.gridMerge &&
                       !disabledByEnvironment("MLAGEN_GRID_MERGE") &&
                       sig.op == OpKind::Decode && gridPairs;
  // Short pairs go to the grid where it merges them (16-bit caches: an fp8
  // cache's cluster kernels have no grid merge, so gridMerge_ is false).
  if (planner.clusterBlocks_ > 1 && planner.gridMerge_)
    planner.clusterMergeAbove_ = kGridMergeMaxChunk16;

  const int64_t maxBatch = options.maxBatch, sms = planner.waveBlocks_;
  const int64_t perChunk = planner.blocksPerChunk_;
  int64_t work = 0, slots = 0;
  if (sig.batchInvariant) {
    const int64_t chunk = options.invariantChunkKeys;
    // Any boundary works (the kernel takes unaligned key ranges); a
    // multiple of tile_k wastes no part of a tile. sm_90a's 64-row blocks
    // take 48 keys a step, which 1024 is not a multiple of.
    if (chunk < 1)
      return invalidArgument("invariant_chunk_keys must be >= 1" + got(chunk));
    if (options.maxSeqLen == 0)
      return invalidArgument(
          "max_seq_len must be > 0 for a batch-invariant kernel: its chunks "
          "are fixed (" +
          std::to_string(chunk) +
          " keys), so the longest request sizes the work list");
    const int64_t perRequest = chunksOf(options.maxSeqLen, chunk);
    work = maxBatch * perRequest;
    // Only requests longer than one chunk take slots, fewer than 2 per
    // chunk of keys each.
    slots = perRequest > 1 ? work : 0;
    if (options.maxTotalKeys > 0) {
      work = std::min(work, maxBatch + ceilDiv(options.maxTotalKeys, chunk));
      slots = std::min(slots, 2 * ceilDiv(options.maxTotalKeys, chunk));
    }
    slots = std::min(slots, work);
  } else {
    // The bound launches take per batch (workSlack), for the largest.
    work = maxBatch + planner.workSlack();
    slots = ceilDiv(2 * sms, perChunk);
    if (options.maxSeqLen > 0) {
      // Steps planned with the small-step floor hold at most half a wave.
      auto itemsAt = [&](int64_t floor) {
        return maxBatch *
               chunksOf(options.maxSeqLen, roundUp(floor, code.tileK));
      };
      work = std::min(
          work, std::max(itemsAt(planner.options_.minChunkKeys),
                         std::min(itemsAt(planner.smallStepChunkKeys_),
                                  planner.smallStepBlocks() / perChunk)));
    }
    slots = std::min(slots, work);
  }
  // Whole clusters: the blocks past the last item exit at once.
  work = roundUp(work, planner.clusterBlocks_);
  // Slots are at most the work items, which stay under 2^30 (kGridPair).
  if (work >= kGridPair)
    return invalidArgument(
        "the work list would need " + std::to_string(work) +
        " items, more than a plan numbers (2^30 - 1): lower max_batch or "
        "max_seq_len, or give max_total_keys");

  DecodeBufferSizes &sizes = planner.sizes_;
  sizes.workCapacity = static_cast<int>(work);
  sizes.clusterBlocks = planner.clusterBlocks_;
  sizes.slotCapacity = static_cast<int>(std::max<int64_t>(1, slots));
  sizes.rows = static_cast<int>(rows);
  sizes.mergeOffset = 4;
  sizes.arrivalOffset = sizes.mergeOffset + 2 * maxBatch;
  // A counter per request and block of a chunk. Decode kernels take them
  // whether or not this planner merges in the grid (mergeArrivals).
  sizes.arrivalInts = sig.op == OpKind::Decode ? maxBatch * perChunk : 0;
  // Keeps work 16-byte aligned: the kernel reads it as int4.
  sizes.workOffset = roundUp(sizes.arrivalOffset + sizes.arrivalInts, 4);
  sizes.planInts = sizes.workOffset + 4 * work;
  sizes.partialLseFloats = sizes.slotCapacity * rows;
  sizes.partialOutFloats = sizes.partialLseFloats * sig.headDimV;
  out = planner;
  return Status::ok();
}

Status DecodePlanner::plan(const std::vector<int32_t> &seqLens,
                           std::vector<int32_t> &plan,
                           DecodePlanSummary *summary) const {
  if (seqLens.size() > static_cast<size_t>(options_.maxBatch))
    return invalidArgument("batch must be in [0, max_batch = " +
                           std::to_string(options_.maxBatch) + "]" +
                           got(static_cast<int64_t>(seqLens.size())));
  plan.assign(sizes_.planInts, 0);
  return this->plan(seqLens.data(), static_cast<int>(seqLens.size()),
                    plan.data(), static_cast<int64_t>(plan.size()), summary);
}

Status DecodePlanner::plan(const int32_t *seqLens, int batch, int32_t *plan,
                           int64_t planInts, DecodePlanSummary *summary) const {
  if (batch < 0 || batch > options_.maxBatch)
    return invalidArgument("batch must be in [0, max_batch = " +
                           std::to_string(options_.maxBatch) + "]" +
                           got(batch));
  if (batch > 0 && !seqLens)
    return invalidArgument("seq_lens is null");
  if (!plan)
    return invalidArgument("plan is null");
  if (planInts < sizes_.planInts)
    return invalidArgument("plan holds " + std::to_string(planInts) +
                           " int32, the planner needs " +
                           std::to_string(sizes_.planInts));

  int64_t totalKeys = 0, longest = 0;
  for (int b = 0; b < batch; ++b) {
    const int64_t len = seqLens[b];
    if (len < 0 || (options_.maxSeqLen > 0 && len > options_.maxSeqLen))
      return invalidArgument(
          "seq_lens[" + std::to_string(b) + "] must be in [0, " +
          (options_.maxSeqLen > 0
               ? "max_seq_len = " + std::to_string(options_.maxSeqLen)
               : std::string("2^31 - 1")) +
          "]" + got(len));
    totalKeys += len;
    longest = std::max(longest, len);
  }

  auto workItems = [&](int64_t chunk) {
    int64_t items = 0;
    for (int b = 0; b < batch; ++b)
      items += chunksOf(seqLens[b], chunk);
    return items;
  };
  int64_t chunk = options_.invariantChunkKeys;
  if (!batchInvariant_) {
    const int64_t sms = waveBlocks_, perChunk = blocksPerChunk_;
    // A small step takes the shortest of the small-step floor and its
    // doublings below the kernel's floor whose chunks fit in half a wave;
    // requests no longer than that floor stay whole (H200: 128 heads S256
    // bf16 15.6-15.8 us whole, 19.9-20.2 in four one-tile chunks; fp8 at 16
    // heads B4 S256 13.2-13.5 against 14.8-14.9 in sixteen).
    int64_t floor = options_.minChunkKeys;
    for (int64_t small = smallStepChunkKeys_; small < floor && longest > floor;
         small *= 2)
      if (workItems(roundUp(small, tileK_)) <= smallStepBlocks() / perChunk) {
        floor = small;
        break;
      }
    const int64_t even =
        roundUp(std::max<int64_t>(floor, ceilDiv(totalKeys * perChunk, sms)),
                tileK_);
    int64_t bestCost = INT64_MAX;
    for (int i = 0; i < kChunkCandidates; ++i) {
      const int64_t candidate = even + i * int64_t(tileK_);
      const int64_t waves = ceilDiv(workItems(candidate) * perChunk, sms);
      const int64_t cost =
          waves * (std::min(candidate, longest) + kBlockOverheadKeys) +
          (candidate < longest ? kSplitKeys : 0);
      // Ties go to the longer chunk: fewer partials to merge.
      if (cost <= bestCost) {
        bestCost = cost;
        chunk = candidate;
      }
      if (candidate >= longest)
        break; // every request is one chunk from here on
    }
  }

  std::memset(plan, 0, sizeof(int32_t) * sizes_.workOffset);
  int32_t *merge = plan + sizes_.mergeOffset;
  int32_t *work = plan + sizes_.workOffset;
  const int64_t cluster = clusterBlocks_;
  int64_t items = 0, slots = 0, reduceSlots = 0, groups = 0;
  for (int b = 0; b < batch; ++b) {
    const int64_t len = seqLens[b], chunks = chunksOf(len, chunk);
    // A request of exactly one cluster's chunks merges in its cluster, if
    // they are long enough to gain from it.
    const bool inCluster =
        cluster > 1 && chunks == cluster && chunk > clusterMergeAbove_;
    const bool usesSlots = chunks > 1 && !inCluster;
    if (items + chunks > sizes_.workCapacity ||
        (usesSlots && slots + chunks > sizes_.slotCapacity))
      return Status(StatusCode::Internal,
                    "decode plan overflows its buffers at request " +
                        std::to_string(b) + " (" + std::to_string(items) +
                        " work items, " + std::to_string(slots) + " slots)");
    // DECODE_CONTRACT.md: a pair counted -2 merges in the grid. (One block
    // merging three or more chunks alone was slower than the reduce:
    // bench/notes/decode-wgmma.md, "Pairs merged in the decode grid".)
    const bool inGrid = usesSlots && gridMerge_ && chunks == 2;
    merge[2 * b] = usesSlots ? static_cast<int32_t>(slots) : -1;
    merge[2 * b + 1] = static_cast<int32_t>(!usesSlots ? 0
                                            : inGrid   ? -2
                                                       : chunks);
    for (int64_t i = 0; i < chunks; ++i, ++items) {
      int32_t *item = work + 4 * items;
      item[0] = b;
      item[1] = static_cast<int32_t>(i * chunk);
      item[2] = static_cast<int32_t>(std::min(len, (i + 1) * chunk));
      // DECODE_CONTRACT.md: -2 - (8 x parts + rank) for a cluster's part,
      // the slot + 2^30 for a pair merged in the grid.
      item[3] = usesSlots  ? static_cast<int32_t>(slots + i + (inGrid ? kGridPair : 0))
                : inCluster ? static_cast<int32_t>(-2 - (8 * chunks + i))
                            : -1;
    }
    if (usesSlots)
      slots += chunks;
    if (usesSlots && !inGrid)
      reduceSlots += chunks;
    groups += inCluster;
  }
  // Longest first (stable): the short tails of requests run last, where
  // they fill the end of the last wave instead of delaying it. Slots stay
  // bound to (request, chunk), so the reduce's order and every block's
  // result are unchanged. With clusters, a merge group keeps its chunks in
  // rank order on one cluster, the other items fill clusters in order of
  // length, and a cluster left part-filled goes last.
  struct alignas(16) Item {
    int32_t v[4];
  };
  Item *first = reinterpret_cast<Item *>(work);
  auto longer = [](const Item &a, const Item &b) {
    return a.v[2] - a.v[1] > b.v[2] - b.v[1];
  };
  if (cluster == 1) {
    std::stable_sort(first, first + items, longer);
  } else {
    // Merge groups first (each in rank order, so whole clusters), then the
    // other items by length; then the clusters by their longest item.
    Item *singles = std::stable_partition(
        first, first + items, [](const Item &a) { return a.v[3] < -1; });
    std::stable_sort(singles, first + items, longer);
    auto longest = [&](int64_t start) {
      int32_t most = 0;
      for (int64_t i = start; i < std::min(start + cluster, items); ++i)
        most = std::max(most, first[i].v[2] - first[i].v[1]);
      return most;
    };
    std::vector<int64_t> starts;
    for (int64_t start = 0; start < items; start += cluster)
      starts.push_back(start);
    const bool partLast = items % cluster != 0; // a cluster of singles
    std::stable_sort(starts.begin(), starts.end() - (partLast ? 1 : 0),
                     [&](int64_t a, int64_t b) {
                       return longest(a) > longest(b);
                     });
    const std::vector<Item> listed(first, first + items);
    Item *to = first;
    for (int64_t start : starts)
      for (int64_t i = start; i < std::min(start + cluster, items); ++i)
        *to++ = listed[i];
  }
  plan[0] = static_cast<int32_t>(items);
  plan[1] = static_cast<int32_t>(reduceSlots);
  plan[2] = batch;
  plan[3] = static_cast<int32_t>(groups);
  if (summary) {
    *summary = DecodePlanSummary();
    summary->numWork = static_cast<int>(items);
    summary->numSlots = static_cast<int>(slots);
    summary->reduceSlots = static_cast<int>(reduceSlots);
    summary->mergeGroups = static_cast<int>(groups);
    summary->chunkKeys = chunk;
    summary->usedInts = sizes_.workOffset + 4 * items;
  }
  return Status::ok();
}

void DecodePlanner::bindPlan(const int32_t *devicePlan, float *partialOut,
                             float *partialLse, DecodeArgs &args) const {
  args.numWork = devicePlan;
  args.merge = devicePlan ? devicePlan + sizes_.mergeOffset : nullptr;
  // The plan is the caller's device memory: the kernel counts arrivals in
  // it (DecodePlanner::bindPlan's contract), so the pointer is not const.
  args.mergeArrivals = devicePlan && sizes_.arrivalInts > 0
                           ? const_cast<int32_t *>(devicePlan) +
                                 sizes_.arrivalOffset
                           : nullptr;
  args.work = devicePlan ? devicePlan + sizes_.workOffset : nullptr;
  args.workCapacity = sizes_.workCapacity;
  args.workSlack = workSlack();
  args.clusterBlocks = sizes_.clusterBlocks;
  args.maxBatch = options_.maxBatch;
  args.partialOut = partialOut;
  args.partialLse = partialLse;
}

int DecodePlanner::workSlack() const {
  // plan() never takes chunks shorter than ceil(keys x blocksPerChunk /
  // waveBlocks), so a request of len keys gets at most len / chunk + 1
  // items, and a step at most batch + waveBlocks / blocksPerChunk.
  return batchInvariant_ ? -1
                         : static_cast<int>(ceilDiv(waveBlocks_, blocksPerChunk_));
}

void DecodePlanner::bindPlan(const int32_t *devicePlan, float *partialOut,
                             float *partialLse, PagedDecodeArgs &args) const {
  DecodeArgs plan;
  bindPlan(devicePlan, partialOut, partialLse, plan);
  args.numWork = plan.numWork;
  args.merge = plan.merge;
  args.work = plan.work;
  args.workCapacity = plan.workCapacity;
  args.maxBatch = plan.maxBatch;
  args.partialOut = plan.partialOut;
  args.partialLse = plan.partialLse;
}

} // namespace mlagen
