//===- ReshapeAndCacheTest.cpp - the GQA KV-cache write without a GPU -----===//
//
// reshape_and_cache's signature (canonical text, parsing, rules), and the
// launches runReshapeAndCache and its C API give a recording fake
// DeviceBackend: geometry, the parameter block, argument checks. The kernel
// itself: lit (emission, AOT for every target) and
// python/tests/reshape_and_cache_device_test.py on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "ReshapeAndCacheLaunch.h"
#include "RecordingBackend.h"
#include "TestSupport.h"
#include "mlagen-c/Runtime.h"

#include <cstring>

using namespace mlagen;
using namespace mlagen::test;

namespace {

using WriteLaunch = RecordedLaunch<ReshapeAndCacheParams>;
using FakeWriteRuntime = FakeRuntime<ReshapeAndCacheParams>;

ReshapeAndCacheArgs someArgs(int tokens) {
  ReshapeAndCacheArgs args;
  args.key = fakeAddress<const void>(0x10000);
  args.value = fakeAddress<const void>(0x20000);
  args.kCache = fakeAddress<void>(0x30000);
  args.vCache = fakeAddress<void>(0x40000);
  args.slotMapping = fakeAddress<const void>(0x50000);
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

TEST_CASE("reshape_and_cache signatures: canonical text, parsing, rules",
          "[reshape-and-cache]") {
  Signature sig = Signature::reshapeAndCache();
  CHECK(sig.canonical() ==
        "reshape_and_cache hkv=8 v=128 page=16 kv=bf16 arch=sm_90a");
  CHECK(sig.validate());
  Signature parsed;
  REQUIRE(parseSignature(sig.canonical(), parsed));
  CHECK(parsed == sig);

  REQUIRE(parseSignature("reshape_and_cache arch=gfx950 page=1 kv=fp16 v=256 "
                         "hkv=4",
                         parsed));
  CHECK(parsed.numKVHeads == 4);
  CHECK(parsed.headDimV == 256);
  CHECK(parsed.qType == DType::FP16);
  CHECK(parsed.outType == DType::FP16);
  CHECK(parsed.validate());
  CHECK(parsed.canonical() ==
        "reshape_and_cache hkv=4 v=256 page=1 kv=fp16 arch=gfx950");

  // An fp8 cache names its inputs' type; bf16 by default.
  Signature fp8;
  REQUIRE(parseSignature("reshape_and_cache hkv=8 v=128 page=64 kv=fp8e4m3 "
                         "arch=gfx942",
                         fp8));
  CHECK(fp8.qType == DType::BF16);
  CHECK(fp8.validate());
  CHECK(fp8.canonical() == "reshape_and_cache hkv=8 v=128 page=64 in=bf16 "
                           "kv=fp8e4m3 arch=gfx942");
  REQUIRE(parseSignature(fp8.canonical(), parsed));
  CHECK(parsed == fp8);
  REQUIRE(parseSignature("reshape_and_cache hkv=8 v=128 page=64 in=fp16 "
                         "kv=fp8e4m3 arch=sm_90a",
                         fp8));
  CHECK(fp8.qType == DType::FP16);
  CHECK(fp8.outType == DType::FP16);
  CHECK(fp8.canonical() == "reshape_and_cache hkv=8 v=128 page=64 in=fp16 "
                           "kv=fp8e4m3 arch=sm_90a");

  auto parseError = [](const std::string &text) {
    Signature none;
    Status status = parseSignature(text, none);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidSignature);
    return status.message();
  };
  CHECK(parseError("reshape_and_cache hkv=8 v=128 page=16 qk=128 "
                   "arch=sm_90a") ==
        "signature field 'qk' is not a reshape_and_cache field");
  CHECK(parseError("reshape_and_cache hkv=8 v=128 page=16 hq=32 "
                   "arch=sm_90a") ==
        "signature field 'hq' is not a reshape_and_cache field");
  CHECK(parseError("reshape_and_cache v=128 page=16 arch=sm_90a") ==
        "signature is missing field 'hkv'");
  CHECK(parseError("reshape_and_cache hkv=8 v=128 arch=sm_90a") ==
        "signature is missing field 'page'");

  Signature bad = sig;
  bad.numKVHeads = 0;
  CHECK(signatureError(bad) ==
        "num_kv_heads must be in [1, 256] for reshape_and_cache (got 0)");
  bad.numKVHeads = 257;
  CHECK(signatureError(bad) ==
        "num_kv_heads must be in [1, 256] for reshape_and_cache (got 257)");
  bad = sig;
  bad.headDimV = 100;
  CHECK(signatureError(bad) ==
        "head_dim_v (the head dim of keys and values) must be a multiple of "
        "8 in [8, 512] for reshape_and_cache (got 100)");
  bad.headDimV = 520;
  CHECK(signatureError(bad) ==
        "head_dim_v (the head dim of keys and values) must be a multiple of "
        "8 in [8, 512] for reshape_and_cache (got 520)");
  bad = sig;
  bad.pageSize = 4097;
  CHECK(signatureError(bad) ==
        "page_size must be in [1, 4096] for reshape_and_cache (got 4097)");
  bad = sig;
  bad.qType = bad.kvType = bad.outType = DType::FP8E4M3;
  CHECK(signatureError(bad) ==
        "in (the new tokens' type) must be bf16 or fp16 for "
        "reshape_and_cache (got fp8e4m3)");
  bad = sig;
  bad.qType = bad.outType = DType::FP16;
  CHECK(signatureError(bad) ==
        "in must equal kv for a 16-bit cache (got in=fp16, kv=bf16)");
  bad = sig;
  bad.headDimQK = 128;
  CHECK(signatureError(bad).find(
            "a reshape_and_cache signature sets only hkv, v, page, in, kv "
            "and arch") == 0);
  bad = sig;
  bad.outType = DType::FP16; // out is in's type
  CHECK(signatureError(bad).find("a reshape_and_cache signature") == 0);
}

TEST_CASE("runReshapeAndCache launches one vector per thread",
          "[reshape-and-cache]") {
  FakeWriteRuntime fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::reshapeAndCache(), kernel));
  ReshapeAndCacheArgs args = someArgs(100);

  SECTION("contiguous defaults") {
    args.stream = fakeAddress<void>(0x77);
    REQUIRE(fake.runtime->runReshapeAndCache(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const WriteLaunch &r = fake.log->launches[0];
    // 100 tokens * 2 parts * 8 heads * 16 vectors / 256 threads.
    CHECK(r.geometry.grid[0] == 100);
    CHECK(r.geometry.grid[1] == 1);
    CHECK(r.geometry.threadsPerBlock == 256);
    CHECK(r.geometry.sharedBytes == 0);
    CHECK(r.stream == args.stream);
    const ReshapeAndCacheParams &p = r.params;
    CHECK(p.key == args.key);
    CHECK(p.value == args.value);
    CHECK(p.k_cache == args.kCache);
    CHECK(p.v_cache == args.vCache);
    CHECK(p.slot_mapping == args.slotMapping);
    CHECK(p.k_scale == nullptr);
    CHECK(p.v_scale == nullptr);
    CHECK(p.key_head_stride == 128);
    CHECK(p.key_token_stride == 8 * 128);
    CHECK(p.value_head_stride == 128);
    CHECK(p.value_token_stride == 8 * 128);
    CHECK(p.k_cache_head_stride == 128);
    CHECK(p.k_cache_token_stride == 8 * 128);
    CHECK(p.k_cache_block_stride == 16 * 8 * 128);
    CHECK(p.v_cache_head_stride == 128);
    CHECK(p.v_cache_token_stride == 8 * 128);
    CHECK(p.v_cache_block_stride == 16 * 8 * 128);
    CHECK(p.num_tokens == 100);
    CHECK(p.slot_mapping_64 == 0);
  }
  SECTION("vLLM's views: key and value slices of a fused qkv projection, "
          "caches halves of one [blocks, 2, page, hkv, v] tensor") {
    // Llama-3-8B: qkv rows of (32 + 2 * 8) * 128 elements.
    args.keyTokenStride = args.valueTokenStride = 48 * 128;
    args.kCacheBlockStride = args.vCacheBlockStride = 2 * 16 * 8 * 128;
    REQUIRE(fake.runtime->runReshapeAndCache(*kernel, args));
    const ReshapeAndCacheParams &p = fake.log->launches.at(0).params;
    CHECK(p.key_token_stride == 48 * 128);
    CHECK(p.key_head_stride == 128);
    CHECK(p.value_token_stride == 48 * 128);
    CHECK(p.k_cache_block_stride == 2 * 16 * 8 * 128);
    CHECK(p.v_cache_block_stride == 2 * 16 * 8 * 128);
    CHECK(p.k_cache_token_stride == 8 * 128);
  }
  SECTION("0 is contiguous given the stride inside it") {
    // An HND cache seen as NHD: head stride page * v, token stride v.
    args.kCacheHeadStride = 16 * 128;
    args.kCacheTokenStride = 128;
    args.kCacheBlockStride = 8 * 16 * 128;
    args.vCacheHeadStride = 256; // a padded head
    REQUIRE(fake.runtime->runReshapeAndCache(*kernel, args));
    const ReshapeAndCacheParams &p = fake.log->launches.at(0).params;
    CHECK(p.k_cache_head_stride == 16 * 128);
    CHECK(p.k_cache_token_stride == 128);
    CHECK(p.k_cache_block_stride == 8 * 16 * 128);
    CHECK(p.v_cache_head_stride == 256);
    CHECK(p.v_cache_token_stride == 8 * 256);
    CHECK(p.v_cache_block_stride == 16 * 8 * 256);
  }
  SECTION("the grid rounds up") {
    Signature small = Signature::reshapeAndCache();
    small.numKVHeads = 2;
    small.headDimV = 80;
    const Kernel *k = nullptr;
    REQUIRE(fake.runtime->getKernel(small, k));
    args.numTokens = 7;
    REQUIRE(fake.runtime->runReshapeAndCache(*k, args));
    // ceil(7 * 2 * 2 * 10 / 256)
    CHECK(fake.log->launches.at(0).geometry.grid[0] == 2);
    CHECK(fake.log->launches.at(0).params.key_token_stride == 160);
  }
  SECTION("0 tokens launches nothing and checks nothing else") {
    args.numTokens = 0;
    args.key = nullptr;
    REQUIRE(fake.runtime->runReshapeAndCache(*kernel, args));
    CHECK(fake.log->launches.empty());
  }
  SECTION("an fp8 cache takes both scales and 8-byte aligned rows") {
    Signature fp8Sig = Signature::reshapeAndCache();
    fp8Sig.kvType = DType::FP8E4M3;
    const Kernel *fp8 = nullptr;
    REQUIRE(fake.runtime->getKernel(fp8Sig, fp8));
    ReshapeAndCacheArgs a = args;
    a.vScale = fakeAddress<const float>(0x60004);
    CHECK(fake.runtime->runReshapeAndCache(*fp8, a).message() ==
          "k_scale is null: an fp8 cache stores key / k_scale (a device fp32 "
          "[1])");
    a.kScale = fakeAddress<const float>(0x60000);
    a.vScale = nullptr;
    CHECK(fake.runtime->runReshapeAndCache(*fp8, a).message() ==
          "v_scale is null: an fp8 cache stores value / v_scale (a device "
          "fp32 [1])");
    a.vScale = fakeAddress<const float>(0x60002);
    CHECK(fake.runtime->runReshapeAndCache(*fp8, a).message() ==
          "v_scale must be 4-byte aligned");
    a.vScale = fakeAddress<const float>(0x60004);
    a.kCache = fakeAddress<void>(0x30008);
    a.vCache = fakeAddress<void>(0x40008);
    a.kCacheHeadStride = 136; // 8-byte aligned fp8 rows
    REQUIRE(fake.runtime->runReshapeAndCache(*fp8, a));
    const ReshapeAndCacheParams &p = fake.log->launches.at(0).params;
    CHECK(p.k_scale == a.kScale);
    CHECK(p.v_scale == a.vScale);
    CHECK(p.k_cache_head_stride == 136);
    CHECK(p.k_cache_token_stride == 8 * 136);
  }
  SECTION("a 16-bit cache ignores scales") {
    args.kScale = fakeAddress<const float>(0x60000);
    args.vScale = fakeAddress<const float>(0x60004);
    REQUIRE(fake.runtime->runReshapeAndCache(*kernel, args));
    CHECK(fake.log->launches.at(0).params.k_scale == nullptr);
    CHECK(fake.log->launches.at(0).params.v_scale == nullptr);
  }
  SECTION("the C API launches the same") {
    mlagen_kernel *handle =
        reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernel));
    int64_t strides[10] = {6144, 0, 6144, 0, 32768, 0, 0, 32768, 0, 256};
    REQUIRE(mlagen_reshape_and_cache_run(handle, args.key, args.value,
                                         args.kCache, args.vCache,
                                         args.slotMapping, 64, nullptr,
                                         nullptr, 7, strides, nullptr) == 0);
    const WriteLaunch &r = fake.log->launches.at(0);
    CHECK(r.params.num_tokens == 7);
    CHECK(r.params.slot_mapping_64 == 1);
    CHECK(r.params.key_token_stride == 6144);
    CHECK(r.params.key_head_stride == 128);
    CHECK(r.params.value_token_stride == 6144);
    CHECK(r.params.k_cache_block_stride == 32768);
    CHECK(r.params.k_cache_token_stride == 1024);
    CHECK(r.params.v_cache_block_stride == 32768);
    CHECK(r.params.v_cache_token_stride == 8 * 256);
    CHECK(r.params.v_cache_head_stride == 256);
    CHECK(r.geometry.grid[0] == 7); // ceil(7 * 256 / 256)
    REQUIRE(mlagen_reshape_and_cache_run(handle, args.key, args.value,
                                         args.kCache, args.vCache,
                                         args.slotMapping, 32, nullptr,
                                         nullptr, 3, nullptr, nullptr) == 0);
    CHECK(fake.log->launches.at(1).params.slot_mapping_64 == 0);
    CHECK(fake.log->launches.at(1).params.key_token_stride == 1024);
    CHECK(mlagen_reshape_and_cache_run(handle, args.key, args.value,
                                       args.kCache, args.vCache,
                                       args.slotMapping, 16, nullptr, nullptr,
                                       7, nullptr,
                                       nullptr) == MLAGEN_INVALID_ARGUMENT);
    CHECK(std::string(mlagen_last_error()) ==
          "slot_mapping_bits must be 32 or 64 (got 16)");
    CHECK(mlagen_reshape_and_cache_run(handle, nullptr, args.value,
                                       args.kCache, args.vCache,
                                       args.slotMapping, 32, nullptr, nullptr,
                                       7, nullptr,
                                       nullptr) == MLAGEN_INVALID_ARGUMENT);
    CHECK(std::string(mlagen_last_error()) == "key is null");
    CHECK(fake.log->launches.size() == 2);
  }
}

TEST_CASE("reshape_and_cache argument checks name the argument",
          "[reshape-and-cache]") {
  FakeWriteRuntime fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::reshapeAndCache(), kernel));
  const ReshapeAndCacheArgs args = someArgs(100);
  auto error = [&](const ReshapeAndCacheArgs &a) {
    Status status = fake.runtime->runReshapeAndCache(*kernel, a);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidArgument);
    return status.message();
  };
  ReshapeAndCacheArgs a = args;
  a.numTokens = -1;
  CHECK(error(a) == "num_tokens must be >= 0 (got -1)");
  for (auto [name, field] :
       {std::pair{"key", &ReshapeAndCacheArgs::key},
        std::pair{"value", &ReshapeAndCacheArgs::value},
        std::pair{"slot_mapping", &ReshapeAndCacheArgs::slotMapping}}) {
    a = args;
    a.*field = nullptr;
    CHECK(error(a) == std::string(name) + " is null");
  }
  a = args;
  a.vCache = nullptr;
  CHECK(error(a) == "v_cache is null");
  a = args;
  a.value = fakeAddress<const void>(0x20008);
  CHECK(error(a) == "value must be 16-byte aligned (the kernel moves it in "
                    "16-byte units)");
  a = args;
  a.kCache = fakeAddress<void>(0x30008); // a 16-bit cache: 16 bytes
  CHECK(error(a) == "k_cache must be 16-byte aligned (the kernel moves it in "
                    "16-byte units)");
  a = args;
  a.slotMapping = fakeAddress<const void>(0x50004);
  a.slotMappingInt64 = true;
  CHECK(error(a) == "slot_mapping must be 8-byte aligned (the kernel moves "
                    "it in 8-byte units)");
  a = args;
  a.keyTokenStride = 1028;
  CHECK(error(a) == "key_token_stride must be a multiple of 8 elements, so "
                    "vectors stay aligned (got 1028)");
  a = args;
  a.valueHeadStride = 132;
  CHECK(error(a) == "value_head_stride must be a multiple of 8 elements, so "
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
  Signature widest = Signature::reshapeAndCache();
  widest.numKVHeads = 256;
  widest.headDimV = 512;
  const Kernel *wide = nullptr;
  REQUIRE(fake.runtime->getKernel(widest, wide));
  a = args;
  a.numTokens = 20000000;
  Status tooMany = fake.runtime->runReshapeAndCache(*wide, a);
  CHECK(tooMany.code() == StatusCode::InvalidArgument);
  CHECK(tooMany.message() == "num_tokens (20000000) needs 2560000000 blocks, "
                             "more than a grid holds (2^31 - 1): split the "
                             "write");
  a.numTokens = 16777215; // 2^31 - 128 blocks
  REQUIRE(fake.runtime->runReshapeAndCache(*wide, a));
  CHECK(fake.log->launches.at(0).geometry.grid[0] == 2147483520u);

  // Another op's kernel is refused by name.
  const Kernel *write = nullptr;
  REQUIRE(fake.runtime->getKernel(Signature::kvCacheWrite(), write));
  Status status = fake.runtime->runReshapeAndCache(*write, args);
  CHECK(status.message() ==
        "runReshapeAndCache needs a reshape_and_cache kernel, not "
        "kv_cache_write");
}
