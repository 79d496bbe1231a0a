//===- GatherCacheTest.cpp - the GQA KV-cache gather without a GPU --------===//
//
// gather_cache's signature (canonical text, parsing, rules), and the
// launches runGatherCache and its C API give a recording fake
// DeviceBackend: geometry, the parameter block, argument checks. The kernel
// itself: lit (emission, AOT for every target) and
// python/tests/gqa_extend_device_test.py on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "GatherCacheLaunch.h"
#include "RecordingBackend.h"
#include "TestSupport.h"
#include "mlagen-c/Runtime.h"

#include <cstring>

using namespace mlagen;
using namespace mlagen::test;

namespace {

using GatherLaunch = RecordedLaunch<GatherCacheParams>;
using FakeGatherRuntime = FakeRuntime<GatherCacheParams>;

GatherCacheArgs someArgs(int tokens) {
  GatherCacheArgs args;
  args.kCache = fakeAddress<const void>(0x10000);
  args.vCache = fakeAddress<const void>(0x20000);
  args.outK = fakeAddress<void>(0x30000);
  args.outV = fakeAddress<void>(0x40000);
  args.slots = fakeAddress<const void>(0x50000);
  args.numTokens = tokens;
  return args;
}

std::string signatureError(const Signature &sig) {
  Status status = sig.validate();
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == StatusCode::InvalidSignature);
  return status.message();
}

} // namespace

TEST_CASE("gather_cache signatures: canonical text, parsing, rules",
          "[gather-cache]") {
  Signature sig = Signature::gatherCache();
  CHECK(sig.canonical() ==
        "gather_cache hkv=8 v=128 page=16 kv=bf16 arch=sm_90a");
  CHECK(sig.validate());
  Signature parsed;
  REQUIRE(parseSignature(sig.canonical(), parsed));
  CHECK(parsed == sig);

  REQUIRE(parseSignature("gather_cache arch=gfx90a page=1 kv=fp16 v=256 "
                         "hkv=4",
                         parsed));
  CHECK(parsed.op == OpKind::GatherCache);
  CHECK(parsed.numKVHeads == 4);
  CHECK(parsed.headDimV == 256);
  CHECK(parsed.qType == DType::FP16);
  CHECK(parsed.outType == DType::FP16);
  CHECK(parsed.validate());
  CHECK(parsed.canonical() ==
        "gather_cache hkv=4 v=256 page=1 kv=fp16 arch=gfx90a");

  // An fp8 cache names its outputs' type; bf16 by default.
  Signature fp8;
  REQUIRE(parseSignature("gather_cache hkv=8 v=128 page=64 kv=fp8e4m3 "
                         "arch=gfx942",
                         fp8));
  CHECK(fp8.outType == DType::BF16);
  CHECK(fp8.qType == DType::BF16);
  CHECK(fp8.validate());
  CHECK(fp8.canonical() == "gather_cache hkv=8 v=128 page=64 kv=fp8e4m3 "
                           "out=bf16 arch=gfx942");
  REQUIRE(parseSignature(fp8.canonical(), parsed));
  CHECK(parsed == fp8);
  REQUIRE(parseSignature("gather_cache hkv=8 v=128 page=64 out=fp16 "
                         "kv=fp8e4m3 arch=sm_80",
                         fp8));
  CHECK(fp8.outType == DType::FP16);
  CHECK(fp8.qType == DType::FP16);
  CHECK(fp8.canonical() == "gather_cache hkv=8 v=128 page=64 kv=fp8e4m3 "
                           "out=fp16 arch=sm_80");

  auto parseError = [](const std::string &text) {
    Signature none;
    Status status = parseSignature(text, none);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidSignature);
    return status.message();
  };
  CHECK(parseError("gather_cache hkv=8 v=128 page=16 in=bf16 "
                   "arch=sm_90a") ==
        "signature field 'in' is not a gather_cache field");
  CHECK(parseError("gather_cache hkv=8 v=128 page=16 hq=32 arch=sm_90a") ==
        "signature field 'hq' is not a gather_cache field");
  CHECK(parseError("gather_cache v=128 page=16 arch=sm_90a") ==
        "signature is missing field 'hkv'");
  CHECK(parseError("gather_cache hkv=8 v=128 arch=sm_90a") ==
        "signature is missing field 'page'");
  // A 16-bit cache's out= parses, then fails the rules.
  REQUIRE(parseSignature("gather_cache hkv=8 v=128 page=16 kv=bf16 out=fp16 "
                         "arch=sm_90a",
                         parsed));
  CHECK(signatureError(parsed) ==
        "out must equal kv for a 16-bit cache (got out=fp16, kv=bf16)");

  Signature bad = sig;
  bad.numKVHeads = 257;
  CHECK(signatureError(bad) ==
        "num_kv_heads must be in [1, 256] for gather_cache (got 257)");
  bad = sig;
  bad.headDimV = 100;
  CHECK(signatureError(bad) ==
        "head_dim_v (the head dim of keys and values) must be a multiple of "
        "8 in [8, 512] for gather_cache (got 100)");
  bad = sig;
  bad.pageSize = 0;
  CHECK(signatureError(bad) ==
        "page_size must be in [1, 4096] for gather_cache (got 0)");
  bad = sig;
  bad.qType = bad.kvType = bad.outType = DType::FP8E4M3;
  CHECK(signatureError(bad) ==
        "out (the gathered tokens' type) must be bf16 or fp16 for "
        "gather_cache (got fp8e4m3)");
  bad = sig;
  bad.headDimQK = 128;
  CHECK(signatureError(bad).find("a gather_cache signature sets only hkv, "
                                 "v, page, kv, out and arch") == 0);
  bad = sig;
  bad.qType = DType::FP16; // q is out's type
  CHECK(signatureError(bad).find("a gather_cache signature") == 0);
}

TEST_CASE("runGatherCache launches one vector per thread", "[gather-cache]") {
  FakeGatherRuntime fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::gatherCache(), kernel));
  GatherCacheArgs args = someArgs(100);

  SECTION("contiguous defaults") {
    args.stream = fakeAddress<void>(0x77);
    REQUIRE(fake.runtime->runGatherCache(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const GatherLaunch &r = fake.log->launches[0];
    // 100 tokens * 2 parts * 8 heads * 16 vectors / 256 threads.
    CHECK(r.geometry.grid[0] == 100);
    CHECK(r.geometry.grid[1] == 1);
    CHECK(r.geometry.threadsPerBlock == 256);
    CHECK(r.geometry.sharedBytes == 0);
    CHECK(r.stream == args.stream);
    const GatherCacheParams &p = r.params;
    CHECK(p.k_cache == args.kCache);
    CHECK(p.v_cache == args.vCache);
    CHECK(p.out_k == args.outK);
    CHECK(p.out_v == args.outV);
    CHECK(p.slots == args.slots);
    CHECK(p.k_scale == nullptr);
    CHECK(p.v_scale == nullptr);
    CHECK(p.out_k_head_stride == 128);
    CHECK(p.out_k_token_stride == 8 * 128);
    CHECK(p.out_v_head_stride == 128);
    CHECK(p.out_v_token_stride == 8 * 128);
    CHECK(p.k_cache_head_stride == 128);
    CHECK(p.k_cache_token_stride == 8 * 128);
    CHECK(p.k_cache_block_stride == 16 * 8 * 128);
    CHECK(p.v_cache_block_stride == 16 * 8 * 128);
    CHECK(p.num_tokens == 100);
    CHECK(p.slots_64 == 0);
  }
  SECTION("caches halves of one [blocks, 2, page, hkv, v] tensor, outputs "
          "slices of one [tokens, 2, hkv, v]") {
    args.kCacheBlockStride = args.vCacheBlockStride = 2 * 16 * 8 * 128;
    args.outKTokenStride = args.outVTokenStride = 2 * 8 * 128;
    REQUIRE(fake.runtime->runGatherCache(*kernel, args));
    const GatherCacheParams &p = fake.log->launches.at(0).params;
    CHECK(p.k_cache_block_stride == 2 * 16 * 8 * 128);
    CHECK(p.k_cache_token_stride == 8 * 128);
    CHECK(p.out_k_token_stride == 2 * 8 * 128);
    CHECK(p.out_v_token_stride == 2 * 8 * 128);
    CHECK(p.out_v_head_stride == 128);
  }
  SECTION("the grid rounds up") {
    Signature small = Signature::gatherCache();
    small.numKVHeads = 2;
    small.headDimV = 80;
    const Kernel *k = nullptr;
    REQUIRE(fake.runtime->getKernel(small, k));
    args.numTokens = 7;
    REQUIRE(fake.runtime->runGatherCache(*k, args));
    // ceil(7 * 2 * 2 * 10 / 256)
    CHECK(fake.log->launches.at(0).geometry.grid[0] == 2);
    CHECK(fake.log->launches.at(0).params.out_k_token_stride == 160);
  }
  SECTION("0 tokens launches nothing and checks nothing else") {
    args.numTokens = 0;
    args.kCache = nullptr;
    REQUIRE(fake.runtime->runGatherCache(*kernel, args));
    CHECK(fake.log->launches.empty());
  }
  SECTION("an fp8 cache takes both scales and 8-byte aligned rows") {
    Signature fp8Sig = Signature::gatherCache();
    fp8Sig.kvType = DType::FP8E4M3;
    const Kernel *fp8 = nullptr;
    REQUIRE(fake.runtime->getKernel(fp8Sig, fp8));
    GatherCacheArgs a = args;
    a.vScale = fakeAddress<const float>(0x60004);
    CHECK(fake.runtime->runGatherCache(*fp8, a).message() ==
          "k_scale is null: an fp8 cache gives key = stored * k_scale (a "
          "device fp32 [1])");
    a.kScale = fakeAddress<const float>(0x60000);
    a.vScale = nullptr;
    CHECK(fake.runtime->runGatherCache(*fp8, a).message() ==
          "v_scale is null: an fp8 cache gives value = stored * v_scale (a "
          "device fp32 [1])");
    a.vScale = fakeAddress<const float>(0x60002);
    CHECK(fake.runtime->runGatherCache(*fp8, a).message() ==
          "v_scale must be 4-byte aligned");
    a.vScale = fakeAddress<const float>(0x60004);
    a.kCache = fakeAddress<const void>(0x10008);
    a.vCache = fakeAddress<const void>(0x20008);
    a.kCacheHeadStride = 136; // 8-byte aligned fp8 rows
    REQUIRE(fake.runtime->runGatherCache(*fp8, a));
    const GatherCacheParams &p = fake.log->launches.at(0).params;
    CHECK(p.k_scale == a.kScale);
    CHECK(p.v_scale == a.vScale);
    CHECK(p.k_cache_head_stride == 136);
    CHECK(p.k_cache_token_stride == 8 * 136);
  }
  SECTION("a 16-bit cache ignores scales") {
    args.kScale = fakeAddress<const float>(0x60000);
    args.vScale = fakeAddress<const float>(0x60004);
    REQUIRE(fake.runtime->runGatherCache(*kernel, args));
    CHECK(fake.log->launches.at(0).params.k_scale == nullptr);
    CHECK(fake.log->launches.at(0).params.v_scale == nullptr);
  }
  SECTION("the C API launches the same") {
    mlagen_kernel *handle =
        reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernel));
    int64_t strides[10] = {2048, 0, 2048, 0, 32768, 0, 0, 32768, 0, 256};
    REQUIRE(mlagen_gather_cache_run(handle, args.kCache, args.vCache,
                                    args.outK, args.outV, args.slots, 64,
                                    nullptr, nullptr, 7, strides,
                                    nullptr) == 0);
    const GatherLaunch &r = fake.log->launches.at(0);
    CHECK(r.params.num_tokens == 7);
    CHECK(r.params.slots_64 == 1);
    CHECK(r.params.out_k_token_stride == 2048);
    CHECK(r.params.out_k_head_stride == 128);
    CHECK(r.params.out_v_token_stride == 2048);
    CHECK(r.params.k_cache_block_stride == 32768);
    CHECK(r.params.k_cache_token_stride == 1024);
    CHECK(r.params.v_cache_block_stride == 32768);
    CHECK(r.params.v_cache_token_stride == 8 * 256);
    CHECK(r.params.v_cache_head_stride == 256);
    CHECK(r.geometry.grid[0] == 7); // ceil(7 * 256 / 256)
    REQUIRE(mlagen_gather_cache_run(handle, args.kCache, args.vCache,
                                    args.outK, args.outV, args.slots, 32,
                                    nullptr, nullptr, 3, nullptr,
                                    nullptr) == 0);
    CHECK(fake.log->launches.at(1).params.slots_64 == 0);
    CHECK(fake.log->launches.at(1).params.out_k_token_stride == 1024);
    CHECK(mlagen_gather_cache_run(handle, args.kCache, args.vCache,
                                  args.outK, args.outV, args.slots, 16,
                                  nullptr, nullptr, 7, nullptr,
                                  nullptr) == MLAGEN_INVALID_ARGUMENT);
    CHECK(std::string(mlagen_last_error()) ==
          "slots_bits must be 32 or 64 (got 16)");
    CHECK(mlagen_gather_cache_run(handle, args.kCache, args.vCache, nullptr,
                                  args.outV, args.slots, 32, nullptr,
                                  nullptr, 7, nullptr,
                                  nullptr) == MLAGEN_INVALID_ARGUMENT);
    CHECK(std::string(mlagen_last_error()) == "out_k is null");
    CHECK(fake.log->launches.size() == 2);
  }
}

TEST_CASE("gather_cache argument checks name the argument",
          "[gather-cache]") {
  FakeGatherRuntime fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::gatherCache(), kernel));
  const GatherCacheArgs args = someArgs(100);
  auto error = [&](const GatherCacheArgs &a) {
    Status status = fake.runtime->runGatherCache(*kernel, a);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidArgument);
    return status.message();
  };
  GatherCacheArgs a = args;
  a.numTokens = -1;
  CHECK(error(a) == "num_tokens must be >= 0 (got -1)");
  for (auto [name, field] :
       {std::pair{"k_cache", &GatherCacheArgs::kCache},
        std::pair{"v_cache", &GatherCacheArgs::vCache},
        std::pair{"slots", &GatherCacheArgs::slots}}) {
    a = args;
    a.*field = nullptr;
    CHECK(error(a) == std::string(name) + " is null");
  }
  a = args;
  a.outV = nullptr;
  CHECK(error(a) == "out_v is null");
  a = args;
  a.outV = fakeAddress<void>(0x40008);
  CHECK(error(a) == "out_v must be 16-byte aligned (the kernel moves it in "
                    "16-byte units)");
  a = args;
  a.kCache = fakeAddress<const void>(0x10008); // a 16-bit cache: 16 bytes
  CHECK(error(a) == "k_cache must be 16-byte aligned (the kernel moves it in "
                    "16-byte units)");
  a = args;
  a.slots = fakeAddress<const void>(0x50004);
  a.slotsInt64 = true;
  CHECK(error(a) == "slots must be 8-byte aligned (the kernel moves it in "
                    "8-byte units)");
  a = args;
  a.outKTokenStride = 1028;
  CHECK(error(a) == "out_k_token_stride must be a multiple of 8 elements, so "
                    "vectors stay aligned (got 1028)");
  a = args;
  a.outVHeadStride = 132;
  CHECK(error(a) == "out_v_head_stride must be a multiple of 8 elements, so "
                    "vectors stay aligned (got 132)");
  a = args;
  a.vCacheBlockStride = -8;
  CHECK(error(a) == "v_cache_block_stride must be >= 0, 0 meaning contiguous "
                    "(got -8)");
  a = args;
  a.kCacheTokenStride = 4;
  CHECK(error(a) == "k_cache_token_stride must be a multiple of 8 elements, "
                    "so vectors stay aligned (got 4)");
  CHECK(fake.log->launches.empty());

  // The widest variant: 256 heads of 512, 128 blocks of 256 per token.
  Signature widest = Signature::gatherCache();
  widest.numKVHeads = 256;
  widest.headDimV = 512;
  const Kernel *wide = nullptr;
  REQUIRE(fake.runtime->getKernel(widest, wide));
  a = args;
  a.numTokens = 20000000;
  Status tooMany = fake.runtime->runGatherCache(*wide, a);
  CHECK(tooMany.code() == StatusCode::InvalidArgument);
  CHECK(tooMany.message() == "num_tokens (20000000) needs 2560000000 blocks, "
                             "more than a grid holds (2^31 - 1): split the "
                             "gather");

  // Another op's kernel is refused by name.
  const Kernel *write = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::reshapeAndCache(), write));
  Status status = fake.runtime->runGatherCache(*write, args);
  CHECK(status.message() ==
        "runGatherCache needs a gather_cache kernel, not reshape_and_cache");
}
