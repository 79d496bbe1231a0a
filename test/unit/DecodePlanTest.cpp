//===- DecodePlanTest.cpp - the host-side split-KV planner ----------------===//
//
// Every plan is checked against what the kernels rely on (checkPlan): each
// request's keys covered once, in order, by chunks of one length (balanced:
// a multiple of tile_k; batch-invariant: any); slots consecutive per split
// request; the buffers never overflow. Then balance, batch invariance,
// sizes and errors.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Runtime/DecodePlan.h"

#include "CatchStatus.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <random>

using namespace mlagen;

namespace {

struct Item {
  int request, begin, end, slot;
  bool operator==(const Item &) const = default;
};

// A decode kernel's code object as select-tiling would shape it.
CodeObject decodeCode(int tileK = 64, int rowsPerBlock = 16,
                      int paddedHeads = 16, int clusterParts = 1) {
  CodeObject code;
  code.clusterParts = clusterParts;
  code.entryName = "mlagen_decode";
  code.threadsPerBlock = 256;
  code.tileQ = rowsPerBlock;
  code.tileK = tileK;
  code.paddedHeads = paddedHeads;
  code.extraEntries = {{"mlagen_decode_reduce", 256, 0, 2}};
  return code;
}

Signature decodeSignature(int heads = 16, int qLen = 1,
                          bool batchInvariant = false, bool fp8 = false) {
  Signature sig = Signature::decode();
  sig.numQHeads = heads;
  sig.qLen = qLen;
  sig.batchInvariant = batchInvariant;
  if (fp8)
    sig.kvType = DType::FP8E4M3;
  return sig;
}

DecodePlanner makePlanner(const Signature &sig, const CodeObject &code,
                          DecodePlanOptions options) {
  DecodePlanner planner;
  REQUIRE(DecodePlanner::create(sig, code, options, planner));
  return planner;
}

std::vector<Item> itemsOf(const DecodePlanner &planner,
                          const std::vector<int32_t> &plan) {
  std::vector<Item> items;
  const int32_t *work = plan.data() + planner.sizes().workOffset;
  for (int i = 0; i < plan[0]; ++i)
    items.push_back(
        {work[4 * i], work[4 * i + 1], work[4 * i + 2], work[4 * i + 3]});
  return items;
}

// Plans `lens` and checks every rule of the plan's layout, chunks starting
// at multiples of `alignment` (balanced plans: tile_k); returns the work
// items.
std::vector<Item> checkPlan(const DecodePlanner &planner, int alignment,
                            const std::vector<int32_t> &lens,
                            DecodePlanSummary *summaryOut = nullptr) {
  std::vector<int32_t> plan;
  DecodePlanSummary summary;
  REQUIRE(planner.plan(lens, plan, &summary));
  const DecodeBufferSizes &sizes = planner.sizes();
  REQUIRE(plan.size() == static_cast<size_t>(sizes.planInts));
  CHECK(plan[0] == summary.numWork);
  CHECK(plan[1] == summary.reduceSlots);
  CHECK(plan[2] == static_cast<int>(lens.size()));
  CHECK(summary.numWork <= sizes.workCapacity);
  // The bound a launch's grid takes from the batch (DecodeLaunch.cpp).
  if (planner.workSlack() >= 0)
    CHECK(summary.numWork <= static_cast<int>(lens.size()) + planner.workSlack());
  CHECK(summary.numSlots <= sizes.slotCapacity);
  CHECK(summary.usedInts == sizes.workOffset + 4 * summary.numWork);
  // The arrival counters sit between merge and work, zero in every plan.
  CHECK(sizes.arrivalOffset == sizes.mergeOffset + 2 * planner.options().maxBatch);
  CHECK(sizes.arrivalOffset + sizes.arrivalInts <= sizes.workOffset);
  CHECK(sizes.workOffset % 4 == 0);
  for (int64_t i = 0; i < sizes.arrivalInts; ++i)
    CHECK(plan[sizes.arrivalOffset + i] == 0);
  CHECK(summary.chunkKeys % alignment == 0);

  std::vector<Item> items = itemsOf(planner, plan);
  const int cluster = sizes.clusterBlocks;
  CHECK(sizes.workCapacity % cluster == 0);
  auto length = [&](size_t i) { return items[i].end - items[i].begin; };
  if (cluster == 1) {
    // Work items run longest first; the checks below walk them by request.
    for (size_t i = 1; i < items.size(); ++i)
      CHECK(length(i - 1) >= length(i));
  } else {
    // A merge group fills one cluster in rank order; clusters run longest
    // first, a part-filled one last.
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].slot >= -1)
        continue;
      const int code = -2 - items[i].slot;
      CHECK(code / 8 == cluster);
      CHECK(code % 8 == static_cast<int>(i % cluster));
      CHECK(items[i - i % cluster].request == items[i].request);
    }
    auto longest = [&](size_t c) {
      int most = 0;
      for (size_t i = c * cluster; i < std::min(items.size(), (c + 1) * cluster); ++i)
        most = std::max(most, length(i));
      return most;
    };
    const size_t clusters = (items.size() + cluster - 1) / cluster;
    for (size_t c = 1; c + 1 < clusters; ++c)
      CHECK(longest(c - 1) >= longest(c));
  }
  std::stable_sort(items.begin(), items.end(), [](const Item &a, const Item &b) {
    return a.request != b.request ? a.request < b.request : a.begin < b.begin;
  });
  const int32_t *merge = plan.data() + sizes.mergeOffset;
  size_t next = 0;
  int slots = 0, reduceSlots = 0;
  for (int b = 0; b < static_cast<int>(lens.size()); ++b) {
    // A count of -2: a pair merged in the decode grid.
    const int firstSlot = merge[2 * b], signedSlots = merge[2 * b + 1];
    const int numSlots = std::abs(signedSlots);
    int key = 0, chunks = 0;
    size_t count = 0;
    while (next + count < items.size() && items[next + count].request == b)
      ++count;
    // A request of exactly one cluster's chunks merges in it, slot-free,
    // if its chunks are longer than the planner's threshold.
    const bool inCluster = cluster > 1 && count == size_t(cluster) &&
                           summary.chunkKeys > planner.clusterMergeAbove();
    while (next < items.size() && items[next].request == b) {
      const Item &item = items[next];
      CHECK(item.begin == key);
      CHECK(item.begin % summary.chunkKeys == 0);
      CHECK((lens[b] == 0 ? item.end == 0 : item.end > item.begin));
      CHECK(item.end <= lens[b]);
      // A pair merged in the grid: its slots + 2^30.
      const int pairFlag = signedSlots == -2 ? 1 << 30 : 0;
      CHECK(item.slot == (numSlots    ? firstSlot + chunks + pairFlag
                          : inCluster ? -2 - (8 * cluster + chunks)
                                      : -1));
      key = item.end;
      ++chunks;
      ++next;
    }
    CHECK(key == lens[b]); // every key, once
    CHECK(chunks >= 1);    // an empty request still writes
    if (numSlots) {
      CHECK(numSlots == chunks);
      CHECK(numSlots >= 2);
      CHECK(firstSlot == slots); // slots in request order
      slots += numSlots;
      // The grid merges pairs where the planner may (decode); the reduce
      // the rest.
      const bool grid = sizes.arrivalInts > 0 && planner.gridMerge() &&
                        numSlots == 2;
      CHECK((signedSlots < 0) == grid);
      CHECK((signedSlots > 0 || signedSlots == -2));
      if (signedSlots > 0)
        reduceSlots += signedSlots;
    } else {
      CHECK((chunks == 1 || inCluster));
      CHECK(firstSlot == -1);
    }
  }
  CHECK(next == items.size()); // no item for a request out of range
  CHECK(slots == summary.numSlots);
  CHECK(reduceSlots == summary.reduceSlots);
  if (summaryOut)
    *summaryOut = summary;
  return items;
}

} // namespace

TEST_CASE("planner sizes follow from max_batch, SMs and the kernel",
          "[decode-plan]") {
  SECTION("16 heads: one block per chunk") {
    DecodePlanner planner =
        makePlanner(decodeSignature(), decodeCode(), {64, 132});
    const DecodeBufferSizes &s = planner.sizes();
    CHECK(s.workCapacity == 64 + 132);
    CHECK(s.slotCapacity == 196); // 2 * 132 = 264, bounded by the work
    CHECK(s.rows == 16);
    CHECK(s.mergeOffset == 4);
    CHECK(s.arrivalOffset == 4 + 128);
    CHECK(s.arrivalInts == 64); // a counter per request (one row block)
    CHECK(s.workOffset == 4 + 128 + 64);
    CHECK(s.planInts == 196 + 4 * 196);
    CHECK(s.partialLseFloats == 196 * 16);
    CHECK(s.partialOutFloats == 196 * 16 * 512);
  }
  SECTION("128 heads, 64 rows a block: two blocks per chunk") {
    DecodePlanner planner =
        makePlanner(decodeSignature(128), decodeCode(64, 64, 128), {256, 132});
    const DecodeBufferSizes &s = planner.sizes();
    CHECK(s.workCapacity == 256 + 66);
    CHECK(s.slotCapacity == 132);
    CHECK(s.rows == 128);
    CHECK(s.arrivalInts == 256 * 2); // per request and row block
    CHECK(s.partialOutFloats == int64_t(132) * 128 * 512);
  }
  SECTION("AMD pads 8 heads to 16 rows; q_len multiplies them") {
    DecodePlanner planner =
        makePlanner(decodeSignature(8, 2), decodeCode(32, 32, 16), {4, 304});
    CHECK(planner.sizes().rows == 32);
    CHECK(planner.sizes().arrivalInts == 4); // 32 rows: one block
    CHECK(planner.sizes().workOffset == 4 + 8 + 4);
  }
  SECTION("max_seq_len bounds the work of small batches") {
    DecodePlanner planner =
        makePlanner(decodeSignature(), decodeCode(), {2, 132, 1000});
    // Small steps' one-tile chunks: 16 of 64 keys each, 32 of at most 66.
    CHECK(planner.sizes().workCapacity == 2 * 16);
  }
  SECTION("batch-invariant: fixed chunks of the longest request") {
    DecodePlanner planner = makePlanner(decodeSignature(16, 1, true),
                                        decodeCode(), {8, 132, 16384});
    CHECK(planner.sizes().workCapacity == 8 * 16);
    CHECK(planner.sizes().slotCapacity == 8 * 16);
    DecodePlanOptions bounded{8, 132, 16384, 4096};
    DecodePlanner tight =
        makePlanner(decodeSignature(16, 1, true), decodeCode(), bounded);
    CHECK(tight.sizes().workCapacity == 8 + 4);
    CHECK(tight.sizes().slotCapacity == 8);
    DecodePlanner shortOnly =
        makePlanner(decodeSignature(16, 1, true), decodeCode(), {8, 132, 1024});
    CHECK(shortOnly.sizes().slotCapacity == 1); // never splits, still valid
  }
}

TEST_CASE("one long request is spread over the SMs", "[decode-plan]") {
  DecodePlanner planner =
      makePlanner(decodeSignature(), decodeCode(), {64, 132});
  DecodePlanSummary summary;
  std::vector<Item> items = checkPlan(planner, 64, {16384}, &summary);
  // 16384 / 132 keys is below the 128-key minimum: 128 chunks of 128.
  CHECK(summary.chunkKeys == 128);
  CHECK(items.size() == 128);
  CHECK(summary.numSlots == 128);

  std::vector<Item> longer = checkPlan(planner, 64, {65536}, &summary);
  // 65536 / 132 = 497 -> 512 keys: 128 blocks, one wave on 132 SMs.
  CHECK(summary.chunkKeys == 512);
  CHECK(longer.size() == 128);
}

TEST_CASE("the shortest chunk follows the kernel unless the caller sets it",
          "[decode-plan]") {
  // sm_90a MLA decode, one block a chunk (16 or 32 rows): 128 keys.
  CHECK(makePlanner(decodeSignature(), decodeCode(), {64, 132})
            .options()
            .minChunkKeys == 128);
  CHECK(makePlanner(decodeSignature(16, 2), decodeCode(64, 32, 16), {64, 132})
            .options()
            .minChunkKeys == 128);
  // An fp8 cache, 64-row blocks (two a chunk at 128 heads), another arch,
  // paged GQA: 256.
  Signature fp8 = decodeSignature();
  fp8.kvType = DType::FP8E4M3;
  CHECK(makePlanner(fp8, decodeCode(), {64, 132}).options().minChunkKeys == 256);
  CHECK(makePlanner(decodeSignature(128), decodeCode(64, 64, 128), {64, 132})
            .options()
            .minChunkKeys == 256);
  Signature sm80 = decodeSignature();
  sm80.arch = Arch::SM80;
  CHECK(makePlanner(sm80, decodeCode(), {64, 132}).options().minChunkKeys ==
        256);
  CodeObject pagedCode = decodeCode(16, 4, 32);
  pagedCode.entryName = "mlagen_paged_decode";
  CHECK(makePlanner(Signature::pagedDecode(), pagedCode, {64, 132})
            .options()
            .minChunkKeys == 256);
  // The caller's own floor wins: one request of 4096 keys in 16 chunks.
  DecodePlanOptions options{64, 132};
  options.minChunkKeys = 256;
  DecodePlanner planner = makePlanner(decodeSignature(), decodeCode(), options);
  DecodePlanSummary summary;
  checkPlan(planner, 64, {4096}, &summary);
  CHECK(summary.chunkKeys == 256);
  CHECK(summary.numWork == 16);
  // Steps that fill more than half a wave keep the kernel's floor.
  checkPlan(makePlanner(decodeSignature(), decodeCode(), {64, 132}), 64,
            {8192, 8192}, &summary);
  CHECK(summary.chunkKeys == 128);
  CHECK(summary.numWork == 128);
}

// Plans `lens` (checkPlan's rules) and expects chunks of `chunkKeys` in
// `numWork` items.
static void expectChunks(const DecodePlanner &planner,
                  const std::vector<int32_t> &lens, int64_t chunkKeys,
                  int numWork) {
  DecodePlanSummary summary;
  checkPlan(planner, 64, lens, &summary);
  CHECK(summary.chunkKeys == chunkKeys);
  CHECK(summary.numWork == numWork);
}

TEST_CASE("small steps take one- or two-tile chunks while they fill at most "
          "half a wave",
          "[decode-plan]") {
  // sm_90a's 16-row e4m3 kernels (an fp8 cache) merge pairs in clusters.
  const Signature fp8 = decodeSignature(16, 1, false, true);
  const CodeObject code = decodeCode(64, 16, 16, 2);
  CHECK(DecodePlanner::smallStepChunkKeysFor(fp8, 1) == 64);
  DecodePlanOptions options{64, 132};
  options.maxSeqLen = 4096;
  DecodePlanner planner = makePlanner(fp8, code, options);
  CHECK(planner.options().minChunkKeys == 256);
  DecodePlanSummary summary;
  // One request: 64 one-tile chunks fill 64 of 132 SMs.
  expectChunks(planner, {4096}, 64, 64);
  // Eight of 1024 keys: 128 one-tile chunks are too many, 64 of two tiles
  // fit.
  expectChunks(planner, std::vector<int32_t>(8, 1024), 128, 64);
  // 32 of 512 keys would take 128 blocks in chunks of 128: they keep 256,
  // so that each request is a pair merged in its cluster.
  checkPlan(planner, 64, std::vector<int32_t>(32, 512), &summary);
  CHECK(summary.chunkKeys == 256);
  CHECK(summary.mergeGroups == 32);
  // Four of 256 keys, the floor: whole.
  checkPlan(planner, 64, std::vector<int32_t>(4, 256), &summary);
  CHECK(summary.numWork == 4);
  // Four of 4096: 128 blocks in chunks of 128, so 64 of 256.
  expectChunks(planner, std::vector<int32_t>(4, 4096), 256, 64);
  // The work list holds the small steps' items (at most half a wave), and
  // no more than the 256-key floor's where those are more: 64 x 16 here.
  CHECK(planner.sizes().workCapacity == 64 + 132);
  DecodePlanOptions one = options;
  one.maxBatch = 1;
  CHECK(makePlanner(fp8, code, one).sizes().workCapacity == 64);
  one.maxBatch = 8;
  CHECK(makePlanner(fp8, code, one).sizes().workCapacity == 128);
  // A 16-bit cache's floor is 128: its small steps take one tile.
  expectChunks(makePlanner(decodeSignature(), code, options), {2048}, 64, 32);
  // A floor the caller sets holds for every step.
  options.minChunkKeys = 256;
  expectChunks(makePlanner(fp8, code, options), {4096}, 256, 16);
}

TEST_CASE("64-row blocks count two blocks a chunk toward half a wave",
          "[decode-plan]") {
  // 128 heads: two 64-row blocks a chunk.
  const Signature sig = decodeSignature(128);
  const CodeObject code = decodeCode(64, 64, 128);
  CHECK(DecodePlanner::smallStepChunkKeysFor(sig, 2) == 64);
  DecodePlanOptions options{2, 132};
  options.maxSeqLen = 4096;
  DecodePlanner planner = makePlanner(sig, code, options);
  CHECK(planner.options().minChunkKeys == 256);
  DecodePlanSummary summary;
  // One request of 2048 keys: 32 one-tile chunks, 64 blocks.
  expectChunks(planner, {2048}, 64, 32);
  // 4096 keys: 64 one-tile chunks are 128 blocks; 32 of 128 keys fit.
  expectChunks(planner, {4096}, 128, 32);
  // Two: 128 blocks in chunks of 128, so 256-key chunks.
  expectChunks(planner, {4096, 4096}, 256, 32);
  // Requests no longer than the floor stay whole.
  checkPlan(planner, 64, {256}, &summary);
  CHECK(summary.numWork == 1);
  // Small steps hold at most 66 blocks, 33 items of two blocks.
  CHECK(planner.sizes().workCapacity == 33);
}

TEST_CASE("a wave holds as many NVIDIA blocks as shared memory allows",
          "[decode-plan]") {
  // fp8 16-row blocks on sm_90a (98816 bytes) fit twice on an SM: the
  // planner fills 2 x 132 blocks; a bf16 block (173568) once; CDNA once.
  CodeObject fp8 = decodeCode(), bf16 = decodeCode();
  fp8.sharedBytes = 98816;
  bf16.sharedBytes = 173568;
  Signature sig = decodeSignature();
  CHECK(makePlanner(sig, fp8, {64, 132}).sizes().workCapacity == 64 + 264);
  CHECK(makePlanner(sig, bf16, {64, 132}).sizes().workCapacity == 64 + 132);
  sig.arch = Arch::GFX942;
  CHECK(makePlanner(sig, fp8, {64, 132}).sizes().workCapacity == 64 + 132);
  // 64 requests of 4096 keys: 256 chunks of 1024 keys fill the 264 slots.
  sig.arch = Arch::SM90A;
  DecodePlanSummary summary;
  checkPlan(makePlanner(sig, fp8, {64, 132}), 64,
            std::vector<int32_t>(64, 4096), &summary);
  CHECK(summary.numWork <= 264);
  CHECK(summary.numWork > 132);
}

TEST_CASE("a wave holds no more blocks than the kernel's launch bounds",
          "[decode-plan]") {
  // Paged decode's 16-row fp8 blocks (70400 bytes) would fit three times
  // by shared memory, but their registers leave room for two: the code
  // object says so. Small blocks stop at 4 an SM, or what they state.
  CodeObject code = decodeCode();
  code.sharedBytes = 70400;
  Signature sig = decodeSignature();
  CHECK(makePlanner(sig, code, {64, 132}).sizes().workCapacity == 64 + 396);
  code.blocksPerSM = 2;
  CHECK(makePlanner(sig, code, {64, 132}).sizes().workCapacity == 64 + 264);
  code.sharedBytes = 20000;
  code.blocksPerSM = 0;
  CHECK(makePlanner(sig, code, {64, 132}).sizes().workCapacity == 64 + 528);
  code.blocksPerSM = 3;
  CHECK(makePlanner(sig, code, {64, 132}).sizes().workCapacity == 64 + 396);
}

TEST_CASE("blocks fill whole waves rather than spill into a new one",
          "[decode-plan]") {
  DecodePlanner planner =
      makePlanner(decodeSignature(), decodeCode(), {64, 132});
  for (int batch : {2, 3, 5, 8, 16, 33, 64}) {
    for (int len : {1000, 4096, 8191, 40000}) {
      std::vector<int32_t> lens(batch, len);
      DecodePlanSummary summary;
      checkPlan(planner, 64, lens, &summary);
      // The even spread: every key over 132 SMs, at least the floor a chunk.
      const int64_t keys = int64_t(batch) * len;
      // Small steps (chunks that fill at most half a wave) go down to one
      // or two tiles.
      int64_t floor = planner.options().minChunkKeys;
      for (int64_t small : {64, 128})
        if (small < floor && batch * ((len + small - 1) / small) <= 66) {
          floor = small;
          break;
        }
      const int64_t even =
          (std::max<int64_t>(floor, (keys + 131) / 132) + 63) / 64 * 64;
      const int64_t waves = (summary.numWork + 131) / 132;
      CAPTURE(batch, len, summary.numWork, summary.chunkKeys);
      CHECK(summary.chunkKeys >= even);
      // It costs no more than the even spread, whose work items
      // (<= 132 + batch <= 196) take at most two waves.
      CHECK(waves * (std::min<int64_t>(summary.chunkKeys, len) + 64) <=
            2 * (std::min<int64_t>(even, len) + 64));
    }
  }
  // Eight requests of 4096 keys: 128 blocks of 256 keys in one wave.
  DecodePlanSummary summary;
  checkPlan(planner, 64, std::vector<int32_t>(8, 4096), &summary);
  CHECK(summary.numWork == 128);
  CHECK(summary.chunkKeys == 256);
}

TEST_CASE("empty, one-key and huge requests", "[decode-plan]") {
  DecodePlanner planner =
      makePlanner(decodeSignature(), decodeCode(), {8, 132});
  std::vector<Item> items = checkPlan(planner, 64, {0, 1, 0});
  CHECK(items ==
        std::vector<Item>{{0, 0, 0, -1}, {1, 0, 1, -1}, {2, 0, 0, -1}});

  DecodePlanSummary summary;
  checkPlan(planner, 64, {INT32_MAX, 0, 7}, &summary);
  CHECK(summary.numWork <= planner.sizes().workCapacity);
  checkPlan(planner, 64, std::vector<int32_t>(8, INT32_MAX), &summary);

  std::vector<int32_t> plan;
  REQUIRE(planner.plan({}, plan, &summary));
  CHECK(plan[0] == 0);
  CHECK(summary.numWork == 0);
  CHECK(summary.usedInts == planner.sizes().workOffset);
}

TEST_CASE("random batches never overflow the fixed buffers", "[decode-plan]") {
  std::mt19937 rng(1234);
  auto pick = [&](std::initializer_list<int> values) {
    return *(values.begin() +
             std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng));
  };
  for (int trial = 0; trial < 300; ++trial) {
    const int tileK = pick({16, 32, 48, 64});
    const int heads = pick({1, 16, 128});
    const int rowsPerBlock = pick({16, 64});
    const int qLen = pick({1, 2, 8});
    const int maxBatch = pick({1, 3, 64, 256});
    const int sms = pick({1, 7, 108, 132, 304});
    const bool invariant = trial % 3 == 0;
    const int clusterParts = pick({1, 2});
    const int64_t maxSeqLen =
        invariant ? pick({1, 1000, 70000}) : pick({0, 0, 5000});
    // 0: the kernel's floors, small steps' included.
    const int minChunkKeys = pick({0, 256});
    DecodePlanner planner =
        makePlanner(decodeSignature(heads, qLen, invariant),
                    decodeCode(tileK, rowsPerBlock, heads, clusterParts),
                    {maxBatch, sms, maxSeqLen, 0, minChunkKeys, 1024});
    CHECK((planner.workSlack() == -1) == invariant);
    const int batch = std::uniform_int_distribution<int>(0, maxBatch)(rng);
    const int64_t longest =
        maxSeqLen > 0 ? maxSeqLen : pick({1, 5000, 1 << 20});
    std::vector<int32_t> lens(batch);
    for (int32_t &len : lens)
      len = static_cast<int32_t>(
          std::uniform_int_distribution<int64_t>(0, longest)(rng));
    CAPTURE(trial, tileK, heads, rowsPerBlock, qLen, maxBatch, sms, invariant,
            clusterParts, minChunkKeys, maxSeqLen, batch);
    // Invariant chunks are 1024 keys whatever tile_k is.
    checkPlan(planner, invariant ? 1024 : tileK, lens);
  }
}

TEST_CASE("batch-invariant chunks do not depend on the batch or the GPU",
          "[decode-plan]") {
  const int32_t len = 5000;
  auto chunksOfRequest = [&](int maxBatch, int sms,
                             const std::vector<int32_t> &lens, int request) {
    DecodePlanner planner = makePlanner(decodeSignature(16, 1, true),
                                        decodeCode(), {maxBatch, sms, 8192});
    std::vector<std::pair<int, int>> chunks;
    for (const Item &item : checkPlan(planner, 64, lens))
      if (item.request == request)
        chunks.emplace_back(item.begin, item.end);
    return chunks;
  };
  const std::vector<std::pair<int, int>> alone =
      chunksOfRequest(1, 132, {len}, 0);
  CHECK(alone ==
        std::vector<std::pair<int, int>>{
            {0, 1024}, {1024, 2048}, {2048, 3072}, {3072, 4096}, {4096, 5000}});
  CHECK(chunksOfRequest(64, 132, {7, 8192, len, 0, 1}, 2) == alone);
  CHECK(chunksOfRequest(64, 1, {len, 100, 100}, 0) == alone);
  CHECK(chunksOfRequest(3, 304, {3000, 1, len}, 2) == alone);
  // A request that fits one chunk is written directly in every batch.
  CHECK(chunksOfRequest(4, 7, {1024, len}, 0) ==
        std::vector<std::pair<int, int>>{{0, 1024}});

  // Balanced plans, by contrast, cut the same request by the batch.
  DecodePlanner balanced =
      makePlanner(decodeSignature(), decodeCode(), {64, 132});
  DecodePlanSummary one, many;
  checkPlan(balanced, 64, {len}, &one);
  checkPlan(balanced, 64, std::vector<int32_t>(64, len), &many);
  CHECK(one.chunkKeys != many.chunkKeys);
}

TEST_CASE("batch-invariant chunks need not be multiples of tile_k",
          "[decode-plan]") {
  // sm_90a's 64-row blocks take 48 keys a step; the kernel takes any key
  // range, so the default 1024-key boundaries stay.
  DecodePlanner planner = makePlanner(decodeSignature(128, 1, true),
                                      decodeCode(48, 64, 128), {4, 132, 3000});
  DecodePlanSummary summary;
  std::vector<Item> items = checkPlan(planner, 1024, {3000, 0, 1024}, &summary);
  CHECK(summary.chunkKeys == 1024);
  CHECK(items == std::vector<Item>{{0, 0, 1024, 0},
                                   {0, 1024, 2048, 1},
                                   {0, 2048, 3000, 2},
                                   {1, 0, 0, -1},
                                   {2, 0, 1024, -1}});
}

TEST_CASE("the planner names what is wrong", "[decode-plan]") {
  DecodePlanner planner;
  auto createError = [&](const Signature &sig, const CodeObject &code,
                         DecodePlanOptions options) {
    Status status = DecodePlanner::create(sig, code, options, planner);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidArgument);
    return status.message();
  };
  CHECK(createError(Signature(), decodeCode(), {8, 132}) ==
        "DecodePlanner needs a decode or paged_decode kernel, not prefill");
  CHECK_THAT(createError(decodeSignature(), CodeObject(), {8, 132}),
             Catch::StartsWith("the code object has no decode geometry"));
  CHECK(createError(decodeSignature(), decodeCode(), {0, 132}) ==
        "max_batch must be in [1, 1048576] (got 0)");
  CHECK(createError(decodeSignature(), decodeCode(), {8, 0}) ==
        "num_sms must be in [1, 65536] (got 0)");
  CHECK_THAT(createError(decodeSignature(16, 1, true), decodeCode(), {8, 132}),
             Catch::StartsWith("max_seq_len must be > 0 for a "
                               "batch-invariant kernel"));
  CHECK(createError(decodeSignature(16, 1, true), decodeCode(),
                    {8, 132, 4096, 0, 256, 0}) ==
        "invariant_chunk_keys must be >= 1 (got 0)");
  CHECK_THAT(createError(decodeSignature(16, 1, true), decodeCode(),
                         {1 << 20, 132, INT32_MAX}),
             Catch::Contains("more than a plan numbers (2^30 - 1)"));

  planner = makePlanner(decodeSignature(), decodeCode(), {4, 132, 10000});
  std::vector<int32_t> plan(planner.sizes().planInts);
  auto planError = [&](const int32_t *lens, int batch, int64_t size) {
    Status status = planner.plan(lens, batch, plan.data(), size);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidArgument);
    return status.message();
  };
  const int32_t lens[] = {10, -1, 10001, 5, 5};
  CHECK(planError(lens, 5, plan.size()) ==
        "batch must be in [0, max_batch = 4] (got 5)");
  CHECK(planError(lens, 2, plan.size()) ==
        "seq_lens[1] must be in [0, max_seq_len = 10000] (got -1)");
  CHECK(planError(lens + 1, 2, plan.size()) ==
        "seq_lens[0] must be in [0, max_seq_len = 10000] (got -1)");
  CHECK(planError(lens + 2, 1, plan.size()) ==
        "seq_lens[0] must be in [0, max_seq_len = 10000] (got 10001)");
  CHECK_THAT(planError(lens, 1, plan.size() - 1),
             Catch::StartsWith("plan holds"));
  CHECK(planError(nullptr, 1, plan.size()) == "seq_lens is null");
}

TEST_CASE("bindPlan points the arguments into one device plan",
          "[decode-plan]") {
  DecodePlanner planner =
      makePlanner(decodeSignature(), decodeCode(), {10, 132});
  alignas(16) static int32_t devicePlan[2048];
  float partialOut, partialLse;
  DecodeArgs args;
  planner.bindPlan(devicePlan, &partialOut, &partialLse, args);
  CHECK(args.numWork == devicePlan);
  CHECK(args.merge == devicePlan + 4);
  CHECK(args.mergeArrivals == devicePlan + 4 + 20);
  CHECK(args.work == devicePlan + 4 + 20 + 12); // 10 counters, aligned
  CHECK(reinterpret_cast<uintptr_t>(args.work) % 16 == 0);
  CHECK(args.workCapacity == planner.sizes().workCapacity);
  CHECK(args.workSlack == 132); // a wave of one-block chunks
  CHECK(args.workSlack == planner.workSlack());
  CHECK(args.clusterBlocks == planner.sizes().clusterBlocks);
  CHECK(args.maxBatch == 10);
  CHECK(args.partialOut == &partialOut);
  CHECK(args.partialLse == &partialLse);
}

// Each request's merge count in the plan (plan[mergeOffset + 2 b + 1]):
// -2 a pair merged in the grid, >= 2 the reduce's slots, 0 none.
static std::vector<int32_t> countsOf(const DecodePlanner &planner, const std::vector<int32_t> &lens) {
  std::vector<int32_t> plan;
  REQUIRE(planner.plan(lens, plan));
  std::vector<int32_t> counts;
  for (size_t b = 0; b < lens.size(); ++b)
    counts.push_back(plan[planner.sizes().mergeOffset + 2 * b + 1]);
  return counts;
}

TEST_CASE("requests of two chunks merge in the decode grid",
          "[decode-plan]") {
  const Signature sig = decodeSignature(128);
  const CodeObject code = decodeCode(64, 64, 128); // two row blocks a chunk
  // 132 SMs, two blocks a chunk: B32 S4096 splits each request in two, B16
  // in four; one request of 65536 keys among short ones splits in many.
  const DecodePlanner planner = makePlanner(sig, code, {64, 132});
  SECTION("B32 S4096: every request a pair merged in the grid, no reduce") {
    DecodePlanSummary summary;
    checkPlan(planner, 64, std::vector<int32_t>(32, 4096), &summary);
    CHECK(summary.numSlots > 0);
    CHECK(summary.reduceSlots == 0);
    for (int32_t count : countsOf(planner, std::vector<int32_t>(32, 4096)))
      CHECK(count == -2);
  }
  SECTION("more than two chunks: the reduce") {
    DecodePlanSummary summary;
    checkPlan(planner, 64, std::vector<int32_t>(16, 4096), &summary);
    CHECK(summary.reduceSlots == 64);
    std::vector<int32_t> lens(4, 300);
    lens[1] = 65536;
    checkPlan(planner, 64, lens, &summary);
    const std::vector<int32_t> counts = countsOf(planner, lens);
    CHECK(counts[1] > 2);
    CHECK(summary.reduceSlots == counts[1]);
  }
  SECTION("off: the option or the environment") {
    DecodePlanOptions off = {64, 132};
    off.gridMerge = false;
    DecodePlanSummary summary;
    const DecodePlanner offPlanner = makePlanner(sig, code, off);
    checkPlan(offPlanner, 64, std::vector<int32_t>(32, 4096), &summary);
    CHECK(summary.reduceSlots == summary.numSlots);
    CHECK(summary.reduceSlots > 0);
    setenv("MLAGEN_GRID_MERGE", "0", 1);
    const DecodePlanner envPlanner = makePlanner(sig, code, {64, 132});
    unsetenv("MLAGEN_GRID_MERGE");
    for (int32_t count : countsOf(envPlanner, std::vector<int32_t>(32, 4096)))
      CHECK(count >= 2);
    // The counters stay in the plan: the kernel takes them either way.
    CHECK(envPlanner.sizes().arrivalInts == 64 * 2);
  }
  SECTION("paged GQA decode keeps its pairs for the reduce") {
    const Signature paged = Signature::pagedDecode(); // 32 q / 8 kv heads
    CodeObject pagedCode = decodeCode(16, 4, 32);     // 4 rows a block: 8 a chunk
    pagedCode.entryName = "mlagen_paged_decode";
    const DecodePlanner pagedPlanner = makePlanner(paged, pagedCode, {64, 132});
    CHECK(pagedPlanner.sizes().arrivalInts == 0);
    DecodePlanSummary summary;
    checkPlan(pagedPlanner, 16, std::vector<int32_t>(8, 1024), &summary);
    CHECK(summary.numSlots == 16); // 8 requests in two chunks each
    CHECK(summary.reduceSlots == 16);
  }
}

TEST_CASE("requests of two chunks merge in their cluster", "[decode-plan]") {
  const Signature sig = decodeSignature(16);
  const DecodePlanner planner =
      makePlanner(sig, decodeCode(64, 16, 16, 2), {256, 132});
  CHECK(planner.sizes().clusterBlocks == 2);
  SECTION("B64 S4096: every request in two chunks, no slot, no reduce") {
    DecodePlanSummary summary;
    const std::vector<Item> items =
        checkPlan(planner, 64, std::vector<int32_t>(64, 4096), &summary);
    CHECK(items.size() == 128);
    CHECK(summary.numSlots == 0);
    for (size_t i = 0; i < items.size(); ++i)
      CHECK(items[i].slot == -2 - (16 + int(i % 2)));
  }
  SECTION("pairs of short chunks of a 16-bit cache merge in the grid") {
    CHECK(planner.clusterMergeAbove() == 1024);
    DecodePlanSummary summary;
    // B64 S2048: chunks of 1024 keys.
    std::vector<Item> items =
        checkPlan(planner, 64, std::vector<int32_t>(64, 2048), &summary);
    CHECK(summary.chunkKeys == 1024);
    CHECK(summary.mergeGroups == 0); // the step launches without clusters
    CHECK(summary.numSlots == 128);
    CHECK(summary.reduceSlots == 0); // every pair in the grid
    // B64 S3072: chunks of 1536, in clusters again.
    items = checkPlan(planner, 64, std::vector<int32_t>(64, 3072), &summary);
    CHECK(summary.chunkKeys == 1536);
    CHECK(summary.mergeGroups == 64);
    CHECK(summary.numSlots == 0);
    // B64 S2500 (the GPU decode test's long pairs): clusters too.
    checkPlan(planner, 64, std::vector<int32_t>(64, 2500), &summary);
    CHECK(summary.chunkKeys > 1024);
    CHECK(summary.mergeGroups == 64);
  }
  SECTION("without the grid merge, short pairs stay in clusters") {
    DecodePlanOptions noGrid = {256, 132};
    noGrid.gridMerge = false;
    const DecodePlanner clusters = makePlanner(sig, decodeCode(64, 16, 16, 2), noGrid);
    CHECK(clusters.clusterMergeAbove() == 0);
    DecodePlanSummary summary;
    checkPlan(clusters, 64, std::vector<int32_t>(64, 2048), &summary);
    CHECK(summary.chunkKeys == 1024);
    CHECK(summary.mergeGroups == 64);
    CHECK(summary.numSlots == 0);
  }
  SECTION("an fp8 cache merges pairs of any length in clusters") {
    const DecodePlanner fp8 =
        makePlanner(decodeSignature(16, 1, false, true), decodeCode(64, 16, 16, 2), {256, 132});
    CHECK(fp8.clusterMergeAbove() == 0);
    DecodePlanSummary summary;
    checkPlan(fp8, 64, std::vector<int32_t>(64, 1024), &summary);
    CHECK(summary.chunkKeys == 512);
    CHECK(summary.mergeGroups == 64);
  }
  SECTION("an fp8 cache's kernel with clusters off: pairs to the reduce") {
    // Its kernel carries no grid merge (kGridPairs in mla_decode.hip).
    const Signature fp8Sig = decodeSignature(16, 1, false, true);
    DecodePlanOptions off = {256, 132};
    off.clusterMerge = false;
    const DecodePlanner fp8 = makePlanner(fp8Sig, decodeCode(64, 16, 16, 2), off);
    CHECK(fp8.sizes().clusterBlocks == 1);
    CHECK_FALSE(fp8.gridMerge());
    DecodePlanSummary summary;
    checkPlan(fp8, 64, std::vector<int32_t>(64, 4096), &summary);
    CHECK(summary.numSlots == 128);
    CHECK(summary.reduceSlots == 128);
    for (int32_t count : countsOf(fp8, std::vector<int32_t>(64, 4096)))
      CHECK(count == 2);
    // The GPU decode test's step: two requests of 500 keys on 4 SMs, two
    // chunks each with one block an SM or two.
    DecodePlanOptions four = {2, 4};
    four.clusterMerge = false;
    for (int64_t shared : {0, 100000}) {
      CodeObject code = decodeCode(64, 16, 16, 2);
      code.sharedBytes = shared; // 0: one block an SM; 100000: two
      CHECK(countsOf(makePlanner(fp8Sig, code, four), {500, 500}) == std::vector<int32_t>{2, 2});
    }
    // With clusters on, every pair in its cluster and still none in the grid.
    const DecodePlanner clustered = makePlanner(fp8Sig, decodeCode(64, 16, 16, 2), {256, 132});
    CHECK_FALSE(clustered.gridMerge());
    checkPlan(clustered, 64, std::vector<int32_t>(64, 4096), &summary);
    CHECK(summary.mergeGroups == 64);
    CHECK(summary.numSlots == 0);
    // Two row blocks a chunk (no cluster) or no cluster merge in the kernel:
    // the grid merges their pairs.
    CHECK(makePlanner(decodeSignature(16, 2, false, true), decodeCode(64, 16, 16, 2), {256, 132}).gridMerge());
    CHECK(makePlanner(fp8Sig, decodeCode(64, 16, 16, 1), off).gridMerge());
    // A 16-bit cache's kernel keeps its grid merge with clusters off.
    CHECK(makePlanner(sig, decodeCode(64, 16, 16, 2), off).gridMerge());
  }
  SECTION("a mixed batch: groups on whole clusters, others through slots") {
    std::vector<int32_t> lens(40, 4096);
    lens[3] = 100;    // one chunk
    lens[7] = 0;      // empty
    lens[9] = 40000;  // many chunks: slots and the reduce
    DecodePlanSummary summary;
    const std::vector<Item> items = checkPlan(planner, 64, lens, &summary);
    CHECK(summary.numSlots > 2);
  }
  SECTION("no cluster: the option, the environment, batch invariance, rows") {
    DecodePlanOptions off = {256, 132};
    off.clusterMerge = false;
    CHECK(makePlanner(sig, decodeCode(64, 16, 16, 2), off).sizes().clusterBlocks == 1);
    setenv("MLAGEN_CLUSTER_MERGE", "0", 1);
    CHECK(makePlanner(sig, decodeCode(64, 16, 16, 2), {256, 132}).sizes().clusterBlocks == 1);
    unsetenv("MLAGEN_CLUSTER_MERGE");
    CHECK(makePlanner(decodeSignature(16, 1, true), decodeCode(64, 16, 16, 2),
                      {256, 132, 4096})
              .sizes()
              .clusterBlocks == 1);
    // Two row blocks a chunk: a cluster along x would span two items.
    CHECK(makePlanner(decodeSignature(16, 2), decodeCode(64, 16, 16, 2), {256, 132})
              .sizes()
              .clusterBlocks == 1);
    CHECK(makePlanner(sig, decodeCode(64, 16, 16, 1), {256, 132}).sizes().clusterBlocks == 1);
  }
}
