//===- DecodeRuntimeTest.cpp - runDecode and the decode C API -------------===//
//
// Launch plumbing without a GPU, as RuntimeTest.cpp does for prefill: a
// recording fake DeviceBackend checks both grids, the shared parameter
// block and every argument check. Real launches: test/gpu and
// python/tests/decode_device_test.py.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "DecodeLaunch.h"
#include "DecodeParams.h"
#include "RecordingBackend.h"
#include "RuntimeInternal.h"
#include "TestSupport.h"
#include "mlagen-c/Runtime.h"
#include "mlagen/Runtime/DecodePlan.h"

#include <cmath>
#include <cstring>

using namespace mlagen;
using namespace mlagen::test;

namespace {

void *const kDecodeFunction = reinterpret_cast<void *>(0x2000);
void *const kReduceFunction = reinterpret_cast<void *>(0x3000);

struct DecodeLaunchRecord {
  void *function = nullptr;
  LaunchGeometry geometry;
  void *stream = nullptr;
  DecodeParams params{};
};

struct DecodeDeviceLog {
  std::mutex mutex;
  std::vector<std::string> loadedEntries;
  std::vector<DecodeLaunchRecord> launches;
  // What the device says of every stream: being captured into a graph.
  bool capturing = false;
  int captureQueries = 0; // how often the runtime asked
};

// Hands out kDecodeFunction for a code object's first entry and
// kReduceFunction for its extra one; records every launch's parameter block
// as a DecodeParams (only runDecode launches here).
class DecodeFakeBackend final : public MemorylessBackend {
public:
  DecodeFakeBackend(Arch arch, std::shared_ptr<DecodeDeviceLog> log)
      : arch_(arch), log_(std::move(log)) {}
  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return arch_; }
  std::string description() const override { return "fake decode device"; }
  Status load(const CodeObject &code, DeviceFunction &out) override {
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->loadedEntries.push_back(code.entryName);
    for (const KernelEntry &entry : code.extraEntries)
      log_->loadedEntries.push_back(entry.name);
    out = {reinterpret_cast<void *>(0x1000), kDecodeFunction,
           std::vector<void *>(code.extraEntries.size(), kReduceFunction)};
    return Status::ok();
  }
  void unload(DeviceFunction &) override {}
  bool capturing(void *) const override {
    ++log_->captureQueries;
    return log_->capturing;
  }
  Status launch(const DeviceFunction &function, const LaunchGeometry &geometry,
                void *stream, void **params) override {
    DecodeLaunchRecord record{function.function, geometry, stream, {}};
    std::memcpy(&record.params, params[0], sizeof(DecodeParams));
    std::lock_guard<std::mutex> lock(log_->mutex);
    log_->launches.push_back(record);
    return Status::ok();
  }

private:
  Arch arch_;
  std::shared_ptr<DecodeDeviceLog> log_;
};

struct FakeDecodeRuntime {
  std::shared_ptr<DecodeDeviceLog> log = std::make_shared<DecodeDeviceLog>();
  std::shared_ptr<CountingGenerator> generator =
      std::make_shared<CountingGenerator>();
  std::unique_ptr<Runtime> runtime;

  explicit FakeDecodeRuntime(Arch arch) {
    generator->threadsPerBlock = 256;
    // A real 16-row sm_90a block's size: one block per SM.
    generator->sharedBytes = 170 * 1024;
    RuntimeOptions options;
    options.generator = generator;
    options.diskCache = false;
    REQUIRE(createRuntimeWithBackend(
        std::move(options), std::make_unique<DecodeFakeBackend>(arch, log),
        runtime));
  }
};

// A step of 3 requests with every pointer a distinct, aligned fake address
// and the plan bound by `planner`.
DecodeArgs someDecodeArgs(const Signature &sig, const DecodePlanner &planner) {
  DecodeArgs args;
  args.q = fakeAddress<const void>(0x10000);
  args.kvCache = fakeAddress<const void>(0x20000);
  args.out = fakeAddress<void>(0x30000);
  args.blockTable = fakeAddress<const int>(0x40000);
  args.blockTableStride = 100;
  args.seqLens = fakeAddress<const int>(0x50000);
  args.batch = 3;
  args.qLen = sig.qLen;
  args.numQHeads = sig.numQHeads;
  args.softmaxScale = 1.0f / std::sqrt(192.0f);
  planner.bindPlan(fakeAddress<const int32_t>(0x60000),
                   fakeAddress<float>(0x70000), fakeAddress<float>(0x80000),
                   args);
  return args;
}

// Binds `name` to an arch a compiler here builds, or skips the test.
#define REQUIRE_COMPILE_TARGET(name)                                           \
  const CompileTarget target_##name = findCompileTarget();                     \
  if (!target_##name.arch) {                                                   \
    WARN("skipped: no device compiler (" << target_##name.whyNot << ")");      \
    SUCCEED("no device compiler");                                             \
    return;                                                                    \
  }                                                                            \
  const Arch name = *target_##name.arch

} // namespace

TEST_CASE("runDecode launches decode then reduce with one parameter block",
          "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  FakeDecodeRuntime fake(arch);
  Signature sig = Signature::decode();
  sig.arch = arch;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));
  CHECK(fake.log->loadedEntries ==
        std::vector<std::string>{"mlagen_test_kernel", "mlagen_test_kernel"});
  DecodePlanner planner;
  REQUIRE(DecodePlanner::create(*kernel, {8, 132}, planner));

  SECTION("contiguous defaults") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    args.stream = fakeAddress<void>(0x99);
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    REQUIRE(fake.log->launches.size() == 2);
    const DecodeLaunchRecord &decode = fake.log->launches[0];
    const DecodeLaunchRecord &reduce = fake.log->launches[1];
    CHECK(decode.function == kDecodeFunction);
    // The most items a plan of 3 requests holds (not the work list's 8 + 132)
    CHECK(decode.geometry.grid[0] == 3u + 132u);
    CHECK(decode.geometry.grid[1] == 1);         // 16 rows, 16 a block
    CHECK(decode.geometry.grid[2] == 1);
    CHECK(decode.geometry.threadsPerBlock == 256);
    CHECK(decode.geometry.sharedBytes == 170 * 1024);
    CHECK(reduce.function == kReduceFunction);
    CHECK(reduce.geometry.grid[0] == 3); // one block row per request
    CHECK(reduce.geometry.grid[1] == 8); // 16 rows, 2 a block
    // 24 blocks: the columns split 8 ways (about 256 blocks)
    CHECK(reduce.geometry.grid[2] == 8);
    CHECK(reduce.geometry.threadsPerBlock == 256);
    CHECK(reduce.geometry.sharedBytes == 0);
    CHECK(decode.stream == args.stream);
    CHECK(reduce.stream == args.stream);
    CHECK(std::memcmp(&decode.params, &reduce.params, sizeof(DecodeParams)) ==
          0);
    const DecodeParams &p = decode.params;
    CHECK(p.q == args.q);
    CHECK(p.kv_cache == args.kvCache);
    CHECK(p.out == args.out);
    CHECK(p.lse == nullptr);
    CHECK(p.block_table == args.blockTable);
    CHECK(p.seq_lens == args.seqLens);
    CHECK(p.num_work == fakeAddress<const int>(0x60000));
    CHECK(p.merge == fakeAddress<const int>(0x60000) + 4);
    CHECK(p.merge_arrivals == fakeAddress<int>(0x60000) + 4 + 16);
    CHECK(p.work == fakeAddress<const int>(0x60000) + 4 + 16 + 8);
    CHECK(p.partial_out == args.partialOut);
    CHECK(p.partial_lse == args.partialLse);
    CHECK(p.q_batch_stride == 16 * 576);
    CHECK(p.q_token_stride == 16 * 576);
    CHECK(p.q_head_stride == 576);
    CHECK(p.out_batch_stride == 16 * 512);
    CHECK(p.out_token_stride == 16 * 512);
    CHECK(p.out_head_stride == 512);
    CHECK(p.kv_block_stride == 64 * 576);
    CHECK(p.kv_token_stride == 576);
    CHECK(p.block_table_stride == 100);
    CHECK(p.batch == 3);
    CHECK(p.softmax_scale == args.softmaxScale);
    CHECK(p.kv_scale == 1.0f);
    // Unchecked: the kernel's one branch sees a null error_flags.
    CHECK(p.error_flags == nullptr);
    CHECK(p.num_blocks == 0);
    CHECK(p.max_pages == 0);
    // No tensor map: this kernel has 16 rows a block (and the fake device
    // has no tensor maps).
    CHECK(p.kv_map_ready == 0);
  }

  SECTION("a plan that splits nothing needs no reduce, unless captured") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    args.planSlots = 0;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    CHECK(fake.log->launches[0].function == kDecodeFunction);
    // A replay of a captured graph may meet a plan that splits.
    fake.log->capturing = true;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    REQUIRE(fake.log->launches.size() == 3);
    CHECK(fake.log->launches[2].function == kReduceFunction);
    fake.log->capturing = false;
    args.planSlots = 5;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.size() == 5);
    args.planSlots = -1; // unknown
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.size() == 7);
  }

  SECTION("the grid covers the plan's items, unless captured") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    REQUIRE(args.workCapacity == 8 + 132);
    REQUIRE(args.workSlack == 132);
    auto decodeGrid = [&] {
      REQUIRE(fake.runtime->runDecode(*kernel, args));
      // The decode launch; the reduce (planSlots -1) follows it.
      return fake.log->launches[fake.log->launches.size() - 2].geometry.grid[0];
    };
    // Items unknown: what any plan of 3 requests may hold.
    const unsigned most = 3 + 132;
    CHECK(decodeGrid() == most);
    args.planWork = 7;
    const int queries = fake.log->captureQueries;
    CHECK(decodeGrid() == 7u);
    CHECK(fake.log->captureQueries == queries + 1);
    // The reduce's grid is the batch's either way.
    CHECK(fake.log->launches.back().geometry.grid[0] == 3u);
    // A replay of a captured graph may meet a plan of more items, not of
    // more requests.
    fake.log->capturing = true;
    CHECK(decodeGrid() == most);
    fake.log->capturing = false;
    // A plan that fills the bound asks the driver nothing.
    args.planWork = int(most);
    CHECK(decodeGrid() == most);
    CHECK(fake.log->captureQueries == queries + 2);
    // Unbounded (batch-invariant plans): the whole work list.
    args.planWork = -1;
    args.workSlack = -1;
    CHECK(decodeGrid() == 8u + 132u);
    // A full batch may need the whole work list.
    args.workSlack = 132;
    args.batch = 8;
    CHECK(decodeGrid() == 8u + 132u);
  }

  SECTION("explicit strides and lse pass through") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    args.lse = fakeAddress<float>(0x90000);
    args.qBatchStride = 20000;
    args.qTokenStride = 10000;
    args.qHeadStride = 584;
    args.outBatchStride = 9000;
    args.outTokenStride = 8200;
    args.outHeadStride = 520;
    args.kvBlockStride = 40000;
    args.kvTokenStride = 600;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    const DecodeParams &p = fake.log->launches.at(0).params;
    CHECK(p.lse == args.lse);
    CHECK(p.q_batch_stride == 20000);
    CHECK(p.q_token_stride == 10000);
    CHECK(p.q_head_stride == 584);
    CHECK(p.out_batch_stride == 9000);
    CHECK(p.out_token_stride == 8200);
    CHECK(p.out_head_stride == 520);
    CHECK(p.kv_block_stride == 40000);
    CHECK(p.kv_token_stride == 600);
  }

  SECTION("a given kv token stride sets the contiguous block stride") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    args.kvTokenStride = 640;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.at(0).params.kv_block_stride == 64 * 640);
  }

  SECTION("a batch of 0 launches nothing") {
    DecodeArgs args;
    CHECK(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.empty());
  }

  SECTION("bad arguments are rejected with the argument's name") {
    auto rejection = [&](const DecodeArgs &args) {
      Status status = fake.runtime->runDecode(*kernel, args);
      CHECK(status.code() == StatusCode::InvalidArgument);
      return status.message();
    };
    const DecodeArgs good = someDecodeArgs(sig, planner);
    DecodeArgs args = good;
    args.batch = -1;
    CHECK(rejection(args) == "batch must be >= 0 (got -1)");
    args = good;
    args.batch = 9;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("batch (9) exceeds max_batch (8)"));
    args = good;
    args.clusterBlocks = 2; // this kernel merges nothing in clusters
    CHECK_THAT(rejection(args),
               Catch::StartsWith("cluster_blocks (2) must be 1, or at most "
                                 "the kernel's cluster parts (1)"));
    args = good;
    args.planGroups = -2;
    CHECK(rejection(args) == "plan_groups must be >= 0, or -1 for unknown (got -2)");
    args = good;
    args.qLen = 2;
    CHECK(rejection(args) == "q_len (2) must equal the kernel's (1)");
    args = good;
    args.numQHeads = 128;
    CHECK(rejection(args) == "num_q_heads (128) must equal the kernel's (16)");
    args = good;
    args.blockTableStride = 0;
    CHECK(rejection(args) == "block_table_stride must be > 0 (got 0)");
    args = good;
    args.workCapacity = 0;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("work_capacity must be >= 1"));
    args = good;
    args.mergeArrivals = nullptr; // args filled by hand, not by bindPlan
    CHECK_THAT(rejection(args), Catch::StartsWith("merge_arrivals is null"));

    const std::pair<const char *, const void **> required[] = {
        {"q", reinterpret_cast<const void **>(&args.q)},
        {"kv_cache", reinterpret_cast<const void **>(&args.kvCache)},
        {"out",
         const_cast<const void **>(reinterpret_cast<void **>(&args.out))},
        {"block_table", reinterpret_cast<const void **>(&args.blockTable)},
        {"seq_lens", reinterpret_cast<const void **>(&args.seqLens)},
        {"work", reinterpret_cast<const void **>(&args.work)},
        {"num_work", reinterpret_cast<const void **>(&args.numWork)},
        {"merge", reinterpret_cast<const void **>(&args.merge)},
        {"partial_out", const_cast<const void **>(
                            reinterpret_cast<void **>(&args.partialOut))},
        {"partial_lse", const_cast<const void **>(
                            reinterpret_cast<void **>(&args.partialLse))},
    };
    for (auto [name, field] : required) {
      args = good;
      *field = nullptr;
      CHECK(rejection(args) == std::string(name) + " is null");
    }
    const std::tuple<const char *, const void **, unsigned> aligned[] = {
        {"q", reinterpret_cast<const void **>(&args.q), 16},
        {"kv_cache", reinterpret_cast<const void **>(&args.kvCache), 16},
        {"work", reinterpret_cast<const void **>(&args.work), 16},
        {"merge", reinterpret_cast<const void **>(&args.merge), 8},
        {"seq_lens", reinterpret_cast<const void **>(&args.seqLens), 4},
    };
    for (auto [name, field, alignment] : aligned) {
      args = good;
      *field = static_cast<const char *>(*field) + alignment / 2;
      CHECK(rejection(args) == std::string(name) + " must be " +
                                   std::to_string(alignment) +
                                   "-byte aligned (the kernel loads it in " +
                                   std::to_string(alignment) + "-byte units)");
    }
    args = good;
    args.lse = fakeAddress<float>(0x90002);
    CHECK(rejection(args) == "lse must be 4-byte aligned (the kernel loads it "
                             "in 4-byte units)");
    args = good;
    args.qHeadStride = 580;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("q_head_stride must be a multiple of 8"));
    args = good;
    args.kvTokenStride = -576;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("kv_token_stride must be >= 0"));
    args = good;
    args.outBatchStride = 12;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("out_batch_stride must be a multiple of 8"));
    for (float scale : {0.0f, -1.0f, std::nanf(""), INFINITY}) {
      args = good;
      args.softmaxScale = scale;
      CHECK_THAT(rejection(args),
                 Catch::StartsWith("softmax_scale must be finite and > 0"));
    }
    CHECK(fake.log->launches.empty());
  }

  SECTION("checked mode passes the flags, the cache and the table width") {
    DecodeArgs args = someDecodeArgs(sig, planner);
    args.checked = true;
    args.errorFlags = fakeAddress<int>(0xA0000);
    args.numBlocks = 4096;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    REQUIRE(fake.log->launches.size() == 2);
    const DecodeParams &p = fake.log->launches[0].params;
    CHECK(p.error_flags == args.errorFlags);
    CHECK(p.num_blocks == 4096);
    CHECK(p.max_pages == 100); // the block table stride
    CHECK(std::memcmp(&p, &fake.log->launches[1].params,
                      sizeof(DecodeParams)) == 0);

    fake.log->launches.clear();
    args.maxPages = 64;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.at(0).params.max_pages == 64);

    // Flags given without checked are not passed: unchecked stays unchecked.
    fake.log->launches.clear();
    args.checked = false;
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    CHECK(fake.log->launches.at(0).params.error_flags == nullptr);
  }

  SECTION("checked mode needs its flags and the cache size") {
    DecodeArgs good = someDecodeArgs(sig, planner);
    good.checked = true;
    good.errorFlags = fakeAddress<int>(0xA0000);
    good.numBlocks = 4096;
    auto rejection = [&](const DecodeArgs &args) {
      Status status = fake.runtime->runDecode(*kernel, args);
      CHECK(status.code() == StatusCode::InvalidArgument);
      return status.message();
    };
    DecodeArgs args = good;
    args.errorFlags = nullptr;
    CHECK_THAT(rejection(args),
               Catch::StartsWith("checked decode needs error_flags (8 zeroed"));
    args = good;
    args.errorFlags = reinterpret_cast<int *>(0xA0002);
    CHECK_THAT(rejection(args), Catch::StartsWith("error_flags must be 4-byte"));
    for (int64_t blocks : {int64_t(0), int64_t(-1), int64_t(1) << 31}) {
      args = good;
      args.numBlocks = blocks;
      CHECK_THAT(rejection(args),
                 Catch::StartsWith("checked decode needs num_blocks"));
    }
    for (int pages : {-1, 101}) {
      args = good;
      args.maxPages = pages;
      CHECK_THAT(rejection(args),
                 Catch::StartsWith("max_pages must be in [0, "
                                   "block_table_stride 100]"));
    }
    CHECK(fake.log->launches.empty());
  }

  SECTION("ops do not mix, nor do runtimes") {
    const Kernel *prefill = nullptr;
    Signature prefillSig;
    prefillSig.arch = arch;
    REQUIRE(fake.runtime->getKernel(prefillSig, prefill));
    DecodeArgs args = someDecodeArgs(sig, planner);
    Status status = fake.runtime->runDecode(*prefill, args);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK(status.message() == "runDecode needs a decode kernel, not prefill");
    PrefillArgs prefillArgs;
    prefillArgs.batch = 1;
    prefillArgs.maxSeqlenQ = 1;
    status = fake.runtime->runPrefill(*kernel, prefillArgs);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK(status.message() == "runPrefill needs a prefill kernel, not decode");
    FakeDecodeRuntime other(arch);
    CHECK(other.runtime->runDecode(*kernel, args).code() ==
          StatusCode::InvalidArgument);
  }
}

TEST_CASE("decode grids follow q_len, padded heads and rows per block",
          "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  FakeDecodeRuntime fake(arch);
  fake.generator->tileQ = 64; // rows a decode block owns
  fake.generator->threadsPerBlock = 512;
  Signature sig = Signature::decode();
  sig.numQHeads = 8;
  sig.qLen = 4;
  sig.arch = arch;
  fake.generator->paddedHeads = 16; // as AMD pads 8 heads
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));
  DecodePlanner planner;
  REQUIRE(DecodePlanner::create(*kernel, {4, 100}, planner));
  CHECK(planner.sizes().rows == 64);
  DecodeArgs args = someDecodeArgs(sig, planner);
  REQUIRE(fake.runtime->runDecode(*kernel, args));
  REQUIRE(fake.log->launches.size() == 2);
  // The work list holds max_batch 4 + 100 items; a plan of 3 requests at
  // most 3 + 100 (workSlack: one wave's blocks a chunk).
  CHECK(planner.sizes().workCapacity == 4 + 100);
  CHECK(planner.workSlack() == 100);
  CHECK(fake.log->launches[0].geometry.grid[0] == 3u + 100u);
  CHECK(fake.log->launches[0].geometry.grid[1] == 1);  // 64 rows / 64
  CHECK(fake.log->launches[1].geometry.grid[1] == 16); // 64 rows / 4
  // 3 x 16 blocks: split 4 ways is the most that stays within 256
  CHECK(fake.log->launches[1].geometry.grid[2] == 4);
  // Both kernels wait for their predecessor, so both may start early.
  CHECK(fake.log->launches[0].geometry.earlyStart);
  CHECK(fake.log->launches[1].geometry.earlyStart);
  // Contiguous strides are the caller's tensors: 8 heads.
  CHECK(fake.log->launches[0].params.q_token_stride == 8 * 576);
  CHECK(fake.log->launches[0].params.q_batch_stride == 4 * 8 * 576);
}

TEST_CASE("a generator's decode output is checked", "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  FakeDecodeRuntime fake(arch);
  Signature sig = Signature::decode();
  sig.arch = arch;
  sig.tileK = 32;
  const Kernel *kernel = nullptr;
  Status status = fake.runtime->getKernel(sig, kernel);
  REQUIRE(status); // the fake honours a pinned tile_k
  CHECK(kernel->codeObject().tileK == 32);

  fake.generator->paddedHeads = 8;
  Signature more = sig;
  more.numQHeads = 16;
  more.tileK = 0;
  more.qLen = 2;
  status = fake.runtime->getKernel(more, kernel);
  CHECK(status.code() == StatusCode::GeneratorError);
  CHECK_THAT(status.message(), Catch::Contains("paddedHeads >= num_q_heads"));
}

TEST_CASE("a decode code object keeps its reduce entry in the disk cache",
          "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  ScratchDirectory dir;
  auto generator = std::make_shared<CountingGenerator>();
  generator->threadsPerBlock = 384;
  Signature sig = Signature::decode();
  sig.arch = arch;
  sig.numQHeads = 128;
  CodeObject first, second;
  for (CodeObject *code : {&first, &second}) {
    RuntimeOptions options;
    options.generator = generator;
    options.backend = BackendKind::None;
    options.cacheDir = dir.path();
    std::unique_ptr<Runtime> runtime;
    REQUIRE(Runtime::create(std::move(options), runtime));
    REQUIRE(runtime->compile(sig, *code));
  }
  CHECK(generator->calls() == 1); // the second came from disk
  CHECK(second.tileK == 64);
  CHECK(second.paddedHeads == 128);
  CHECK(second.extraEntries ==
        std::vector<KernelEntry>{{"mlagen_test_kernel", 384, 0, 3}});
  CHECK(second.extraEntries == first.extraEntries);
}

TEST_CASE("the decode C API plans and launches", "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  FakeDecodeRuntime fake(arch);
  Signature sig = Signature::decode();
  sig.arch = arch;
  const Kernel *cxxKernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, cxxKernel));
  auto *kernel = reinterpret_cast<const mlagen_kernel *>(
      static_cast<const void *>(cxxKernel));

  mlagen_decode_planner *planner = nullptr;
  REQUIRE(mlagen_decode_planner_create(kernel, 4, 132, 0, &planner) ==
          MLAGEN_OK);
  int64_t sizes[MLAGEN_DECODE_NUM_SIZES];
  REQUIRE(mlagen_decode_planner_sizes(planner, sizes,
                                      MLAGEN_DECODE_NUM_SIZES) == MLAGEN_OK);
  CHECK(sizes[MLAGEN_DECODE_WORK_CAPACITY] == 4 + 132);
  CHECK(sizes[MLAGEN_DECODE_SLOT_CAPACITY] == 136);
  CHECK(sizes[MLAGEN_DECODE_PLAN_INTS] == 4 + 8 + 4 + 4 * 136);
  CHECK(sizes[MLAGEN_DECODE_PARTIAL_LSE_FLOATS] == 136 * 16);
  CHECK(sizes[MLAGEN_DECODE_PARTIAL_OUT_FLOATS] == 136 * 16 * 512);
  CHECK(mlagen_decode_planner_sizes(planner, sizes, 6) ==
        MLAGEN_INVALID_ARGUMENT);

  std::vector<int32_t> plan(sizes[MLAGEN_DECODE_PLAN_INTS]);
  const int32_t seqLens[] = {3000, 1, 0};
  int64_t used = 0;
  REQUIRE(mlagen_decode_plan(planner, seqLens, 3, plan.data(), plan.size(),
                             &used) == MLAGEN_OK);
  // A small step (49 items, under half of 132 SMs): 3000 keys in one-tile
  // chunks (sm_90a: 64 keys), then two.
  const int floor = DecodePlanner::smallStepChunkKeysFor(sig, 1);
  const int chunks = (3000 + floor - 1) / floor;
  CHECK(plan[0] == chunks + 1 + 1);
  CHECK(used == 16 + 4 * plan[0]);
  const int32_t negative[] = {-5};
  CHECK(mlagen_decode_plan(planner, negative, 1, plan.data(), plan.size(),
                           nullptr) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "seq_lens[0] must be in [0, 2^31 - 1] (got -5)");

  alignas(16) static int32_t devicePlan[1024];
  const int64_t strides[8] = {0, 0, 1152, 0, 0, 0, 0, 0};
  REQUIRE(mlagen_decode_run(
              planner, fakeAddress<const void>(0x10000),
              fakeAddress<const void>(0x20000), fakeAddress<void>(0x30000),
              nullptr, fakeAddress<const int32_t>(0x40000), 64,
              fakeAddress<const int32_t>(0x50000), devicePlan,
              fakeAddress<float>(0x70000), fakeAddress<float>(0x80000), 3, 1,
              16, strides, 0.07f, 1.0f, 1.0f, plan[0], plan[1], plan[3],
              fakeAddress<void>(0x99)) == MLAGEN_OK);
  REQUIRE(plan[1] == chunks); // the 3000-key request's chunks (> 8) reduce
  REQUIRE(fake.log->launches.size() == 2);
  // The grid covers the plan's items, not the work list's 136.
  CHECK(fake.log->launches[0].geometry.grid[0] == unsigned(plan[0]));
  const DecodeParams &p = fake.log->launches[0].params;
  CHECK(p.num_work == devicePlan);
  CHECK(p.merge_arrivals == devicePlan + 12);
  CHECK(p.work == devicePlan + 16);
  CHECK(p.q_head_stride == 1152);
  CHECK(p.q_token_stride == 16 * 576);
  CHECK(p.softmax_scale == 0.07f);
  CHECK(fake.log->launches[1].geometry.grid[0] == 3);

  CHECK(mlagen_decode_run(planner, nullptr, nullptr, nullptr, nullptr, nullptr,
                          64, nullptr, devicePlan, nullptr, nullptr, 3, 2, 16,
                          nullptr, 0.07f, 1.0f, 1.0f, -1, -1, -1,
                          nullptr) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "q_len (2) must equal the kernel's (1)");
  // A good step but for the plan's item, slot or merge-group count.
  auto runWithCounts = [&](int planSlots, int planGroups, int planWork = -1) {
    return mlagen_decode_run(
        planner, fakeAddress<const void>(0x10000),
        fakeAddress<const void>(0x20000), fakeAddress<void>(0x30000), nullptr,
        fakeAddress<const int32_t>(0x40000), 64,
        fakeAddress<const int32_t>(0x50000), devicePlan,
        fakeAddress<float>(0x70000), fakeAddress<float>(0x80000), 3, 1, 16,
        strides, 0.07f, 1.0f, 1.0f, planWork, planSlots, planGroups,
        nullptr);
  };
  CHECK(runWithCounts(-2, -1) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "plan_slots must be >= 0, or -1 for unknown (got -2)");
  CHECK(runWithCounts(-1, -3) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "plan_groups must be >= 0, or -1 for unknown (got -3)");
  CHECK(runWithCounts(-1, -1, 2) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "plan_work must be the plan's work items, in [batch = 3, work "
        "capacity = 136] (a plan gives every request one), or -1 for unknown "
        "(got 2)");
  CHECK(runWithCounts(-1, -1, 137) == MLAGEN_INVALID_ARGUMENT);
  CHECK(runWithCounts(-1, -1, -2) == MLAGEN_INVALID_ARGUMENT);
  CHECK(fake.log->launches.size() == 2);
  mlagen_decode_planner_destroy(planner);
  mlagen_decode_planner_destroy(nullptr);

  const Kernel *prefill = nullptr;
  Signature prefillSig;
  prefillSig.arch = arch;
  REQUIRE(fake.runtime->getKernel(prefillSig, prefill));
  CHECK(mlagen_decode_planner_create(reinterpret_cast<const mlagen_kernel *>(
                                         static_cast<const void *>(prefill)),
                                     4, 132, 0,
                                     &planner) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "DecodePlanner needs a decode or paged_decode kernel, not prefill");
  CHECK(planner == nullptr);
  CHECK(mlagen_decode_planner_create(nullptr, 4, 132, 0, &planner) ==
        MLAGEN_INVALID_ARGUMENT);
}

TEST_CASE("the decode template declares the parameter block runDecode passes",
          "[decode-runtime]") {
  // DecodeParams.h pins the host side's offsets; this pins the kernel's
  // declaration to the same fields, types and order.
  const std::vector<std::string> declarations =
      templateStructDeclarations("kernels/mla_decode.hip", "mlagen_decode_params");
  CHECK(declarations ==
        std::vector<std::string>{
            "constvoid*q",
            "constvoid*kv_cache",
            "void*out",
            "float*lse",
            "constint*block_table",
            "constint*seq_lens",
            "constint*work",
            "constint*num_work",
            "constint*merge",
            "float*partial_out",
            "float*partial_lse",
            "longlongq_batch_stride,q_token_stride,q_head_stride",
            "longlongout_batch_stride,out_token_stride,"
            "out_head_stride",
            "longlongkv_block_stride,kv_token_stride",
            "intblock_table_stride",
            "intbatch",
            "floatsoftmax_scale",
            "floatkv_scale",
            "int*error_flags",
            "intnum_blocks",
            "intmax_pages",
            "intkv_map_ready",
            "alignas(64)unsignedcharkv_map[128]",
            "int*merge_arrivals",
        });
}

TEST_CASE("only 64-row sm_90a kernels over pages of one tile get a cache "
          "tensor map",
          "[decode-runtime]") {
  Signature sig = Signature::decode();
  sig.arch = Arch::SM90A;
  sig.headDimQK = 576;
  sig.pageSize = 64;
  CodeObject code;
  code.tileQ = 64;
  code.tileK = 64;
  DecodeArgs args;
  DecodeLaunch launch;
  launch.params.kv_cache = fakeAddress<const void>(0x7000);
  launch.params.kv_token_stride = 640; // padded rows
  launch.params.kv_block_stride = 64 * 640 + 64;
  TensorMapRequest request;
  REQUIRE(describeCacheTensorMap(sig, code, args, launch, request));
  CHECK(request.base == launch.params.kv_cache);
  CHECK(request.sizes[0] == 576);
  CHECK(request.sizes[1] == 64);
  CHECK(request.sizes[2] == (1ull << 31)); // unchecked: the size is unknown
  CHECK(request.strides[0] == 640 * 2);
  CHECK(request.strides[1] == (64 * 640 + 64) * 2);
  CHECK(request.box[0] == 64);
  CHECK(request.box[1] == 64);
  CHECK(request.box[2] == 1);
  args.checked = true;
  args.numBlocks = 1000;
  REQUIRE(describeCacheTensorMap(sig, code, args, launch, request));
  CHECK(request.sizes[2] == 1000);

  SECTION("other pages") {
    sig.pageSize = 16;
    CHECK_FALSE(describeCacheTensorMap(sig, code, args, launch, request));
  }
  SECTION("fp8 cache: its bytes as 16-bit pairs") {
    sig.kvType = DType::FP8E4M3;
    launch.params.kv_token_stride = 576;
    launch.params.kv_block_stride = 64 * 576;
    REQUIRE(describeCacheTensorMap(sig, code, args, launch, request));
    CHECK(request.sizes[0] == 288);
    CHECK(request.strides[0] == 576);
    CHECK(request.strides[1] == 64 * 576);
    CHECK(request.box[0] == 64);
  }
  SECTION("16 rows a block") {
    code.tileQ = 16;
    CHECK_FALSE(describeCacheTensorMap(sig, code, args, launch, request));
  }
  SECTION("sm_80") {
    sig.arch = Arch::SM80;
    CHECK_FALSE(describeCacheTensorMap(sig, code, args, launch, request));
  }
}

TEST_CASE("checked decode's flags become a message", "[decode-runtime]") {
  int none[kDecodeErrorFlagInts] = {};
  CHECK(checkDecodeErrors(none));
  CHECK(checkDecodeErrors(nullptr).code() == StatusCode::InvalidArgument);

  // [code, request, value, page index, max_pages, num_blocks, page_size, 0]
  const int seqLen[kDecodeErrorFlagInts] = {kDecodeErrorSeqLen, 3, 5000, 0,
                                            64, 4096, 64, 0};
  Status status = checkDecodeErrors(seqLen);
  CHECK(status.code() == StatusCode::InvalidArgument);
  CHECK(status.message() ==
        "request 3: seq_len 5000 needs 79 pages of 64 keys, block table has "
        "64");

  const int negative[kDecodeErrorFlagInts] = {kDecodeErrorSeqLen, 0, -2, 0,
                                              64, 4096, 64, 0};
  CHECK(checkDecodeErrors(negative).message() ==
        "request 0: seq_len -2 is negative");

  const int page[kDecodeErrorFlagInts] = {kDecodeErrorPage, 3, 9999, 7,
                                          64, 4096, 64, 0};
  CHECK(checkDecodeErrors(page).message() ==
        "request 3: block table entry 9999 (page 7) is outside the cache "
        "(4096 blocks)");

  const int unknown[kDecodeErrorFlagInts] = {42};
  CHECK(checkDecodeErrors(unknown).code() == StatusCode::Internal);

  // The C API: 0, or the status code with the message in mlagen_last_error.
  CHECK(mlagen_decode_error_check(none) == MLAGEN_OK);
  CHECK(mlagen_decode_error_check(page) == MLAGEN_INVALID_ARGUMENT);
  CHECK(std::string(mlagen_last_error()) ==
        "request 3: block table entry 9999 (page 7) is outside the cache "
        "(4096 blocks)");
  CHECK(MLAGEN_DECODE_ERROR_FLAG_INTS == kDecodeErrorFlagInts);
}

TEST_CASE("runDecode launches in clusters only when the plan merges in them",
          "[decode-runtime]") {
  REQUIRE_COMPILE_TARGET(arch);
  FakeDecodeRuntime fake(arch);
  fake.generator->clusterParts = 2;
  Signature sig = Signature::decode();
  sig.arch = arch;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));
  DecodePlanner planner;
  REQUIRE(DecodePlanner::create(*kernel, {8, 132}, planner));
  REQUIRE(planner.sizes().clusterBlocks == 2);
  CHECK(planner.sizes().workCapacity % 2 == 0);
  DecodeArgs args = someDecodeArgs(sig, planner);
  auto clusterOfLast = [&] {
    REQUIRE(fake.runtime->runDecode(*kernel, args));
    // The decode launch; the reduce (planSlots -1) follows it.
    return fake.log->launches[fake.log->launches.size() - 2].geometry.clusterX;
  };
  // Whole clusters of the plan's items.
  args.planWork = 5;
  CHECK(clusterOfLast() == 2u);
  CHECK(fake.log->launches[fake.log->launches.size() - 2].geometry.grid[0] ==
        6u);
  args.planWork = -1;
  CHECK(clusterOfLast() == 2u); // groups unknown
  args.planGroups = 3;
  CHECK(clusterOfLast() == 2u);
  args.planGroups = 0; // nothing merges in a cluster
  CHECK(clusterOfLast() == 1u);
  fake.log->capturing = true; // a replay may meet a plan that does
  CHECK(clusterOfLast() == 2u);
  fake.log->capturing = false;

  // Every split request merged in its cluster: one launch, in clusters.
  args.planSlots = 0;
  args.planGroups = 5;
  size_t launches = fake.log->launches.size();
  int queries = fake.log->captureQueries;
  REQUIRE(fake.runtime->runDecode(*kernel, args));
  REQUIRE(fake.log->launches.size() == launches + 1);
  CHECK(fake.log->launches.back().geometry.clusterX == 2u);
  CHECK(fake.log->captureQueries == queries + 1);
  // Nothing split at all: one launch without clusters, one question asked.
  args.planGroups = 0;
  launches = fake.log->launches.size();
  queries = fake.log->captureQueries;
  REQUIRE(fake.runtime->runDecode(*kernel, args));
  REQUIRE(fake.log->launches.size() == launches + 1);
  CHECK(fake.log->launches.back().geometry.clusterX == 1u);
  CHECK(fake.log->captureQueries == queries + 1);
}
