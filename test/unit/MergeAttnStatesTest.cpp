//===- MergeAttnStatesTest.cpp - merge and page indices without a GPU -----===//
//
// The signatures, the argument checks and the launches the recording fake
// device (RecordingBackend.h) sees, for runMergeAttnStates, runExpandPageIndices,
// runKVCacheWrite and their C API. The kernels themselves: lit (emission, AOT for every target)
// and python/tests/merge_attn_states_device_test.py on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "ExpandPageIndicesLaunch.h"
#include "KVCacheWriteLaunch.h"
#include "MergeAttnStatesLaunch.h"
#include "RecordingBackend.h"
#include "RuntimeInternal.h"
#include "TestSupport.h"
#include "mlagen-c/Runtime.h"

using namespace mlagen;
using namespace mlagen::test;

namespace {

MergeAttnStatesArgs someArgs(const Signature &sig, int tokens) {
  MergeAttnStatesArgs args;
  args.prefixOut = fakeAddress<const void>(0x10000);
  args.prefixLse = fakeAddress<const float>(0x20000);
  args.suffixOut = fakeAddress<const void>(0x30000);
  args.suffixLse = fakeAddress<const float>(0x40000);
  args.out = fakeAddress<void>(0x50000);
  args.outLse = fakeAddress<float>(0x60000);
  args.numTokens = tokens;
  args.numHeads = sig.numQHeads;
  args.headDim = sig.headDimV;
  return args;
}

std::string launchError(const MergeAttnStatesArgs &args,
                        const Signature &sig = Signature::mergeAttnStates()) {
  CodeObject code;
  code.threadsPerBlock = 256;
  MergeAttnStatesLaunch launch;
  bool empty = false;
  Status status = prepareMergeAttnStatesLaunch(sig, code, args, launch, empty);
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == StatusCode::InvalidArgument);
  return status.message();
}

} // namespace

TEST_CASE("merge_attn_states signatures: canonical text, parsing, rules",
          "[merge-attn-states]") {
  Signature sig = Signature::mergeAttnStates();
  CHECK(sig.canonical() ==
        "merge_attn_states v=128 hq=16 lse=1 out=bf16 arch=sm_90a");
  CHECK(sig.validate());

  Signature parsed;
  REQUIRE(parseSignature("merge_attn_states v=512 hq=128 lse=0 out=fp16 "
                         "arch=gfx942",
                         parsed));
  CHECK(parsed.canonical() ==
        "merge_attn_states v=512 hq=128 lse=0 out=fp16 arch=gfx942");
  // Both inputs have the output's type.
  CHECK(parsed.qType == DType::FP16);
  CHECK(parsed.kvType == DType::FP16);
  CHECK(parsed.validate());
  Signature again;
  REQUIRE(parseSignature(parsed.canonical(), again));
  CHECK(again == parsed);

  auto parseError = [](const std::string &text) {
    Signature out;
    Status status = parseSignature(text, out);
    REQUIRE_FALSE(status.isOk());
    return status.message();
  };
  CHECK(parseError("merge_attn_states v=128 hq=16 qk=192 arch=sm_90a") ==
        "signature field 'qk' is not a merge_attn_states field");
  CHECK(parseError("merge_attn_states v=128 hq=16 page=64 arch=sm_90a") ==
        "signature field 'page' is not a merge_attn_states field");
  CHECK(parseError("merge_attn_states v=128 arch=sm_90a") ==
        "signature is missing field 'hq'");

  auto invalid = [](Signature s) {
    Status status = s.validate();
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidSignature);
    return status.message();
  };
  Signature bad = sig;
  bad.headDimV = 100;
  CHECK(invalid(bad) == "head_dim_v must be a multiple of 8 in [8, 1024] for "
                        "merge_attn_states (16-byte vectors) (got 100)");
  bad = sig;
  bad.outType = bad.qType = bad.kvType = DType::FP8E4M3;
  CHECK(invalid(bad) ==
        "out_type must be bf16 or fp16 for merge_attn_states (got fp8e4m3)");
  bad = sig;
  bad.qType = DType::FP16;
  CHECK(invalid(bad).find("q_type and kv_type must equal out_type") == 0);
  bad = sig;
  bad.pageSize = 64;
  CHECK(invalid(bad).find("a merge_attn_states signature sets only v, hq") ==
        0);
  bad = sig;
  bad.numQHeads = 0;
  CHECK(invalid(bad) == "num_q_heads must be in [1, 65535] (got 0)");
}

TEST_CASE("runMergeAttnStates launches one vector per thread",
          "[merge-attn-states]") {
  FakeRuntime<MergeAttnStatesParams> fake;
  Signature sig = Signature::mergeAttnStates();
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));

  SECTION("contiguous defaults") {
    MergeAttnStatesArgs args = someArgs(sig, 1000);
    args.stream = fakeAddress<void>(0x99);
    REQUIRE(fake.runtime->runMergeAttnStates(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const RecordedLaunch<MergeAttnStatesParams> &r = fake.log->launches[0];
    // 1000 tokens * 16 heads * 16 vectors / 256 threads.
    CHECK(r.geometry.grid[0] == 1000);
    CHECK(r.geometry.grid[1] == 1);
    CHECK(r.geometry.threadsPerBlock == 256);
    CHECK(r.geometry.sharedBytes == 0);
    CHECK(r.stream == args.stream);
    const MergeAttnStatesParams &p = r.params;
    CHECK(p.prefix_out == args.prefixOut);
    CHECK(p.prefix_lse == args.prefixLse);
    CHECK(p.suffix_out == args.suffixOut);
    CHECK(p.suffix_lse == args.suffixLse);
    CHECK(p.out == args.out);
    CHECK(p.out_lse == args.outLse);
    CHECK(p.prefix_token_stride == 16 * 128);
    CHECK(p.prefix_head_stride == 128);
    CHECK(p.suffix_token_stride == 16 * 128);
    CHECK(p.out_head_stride == 128);
    CHECK(p.prefix_lse_head_stride == 1000);
    CHECK(p.out_lse_head_stride == 1000);
    CHECK(p.num_tokens == 1000);
  }
  SECTION("strided views and a longer LSE row") {
    MergeAttnStatesArgs args = someArgs(sig, 3);
    args.prefixTokenStride = 16 * 192; // q/k-width rows
    args.prefixHeadStride = 192;
    args.outTokenStride = 4096;
    args.suffixLseHeadStride = 17; // a prefill's LSE over 17 tokens
    REQUIRE(fake.runtime->runMergeAttnStates(*kernel, args));
    const MergeAttnStatesParams &p = fake.log->launches.at(0).params;
    CHECK(p.prefix_token_stride == 16 * 192);
    CHECK(p.prefix_head_stride == 192);
    CHECK(p.suffix_token_stride == 16 * 128);
    CHECK(p.out_token_stride == 4096);
    CHECK(p.prefix_lse_head_stride == 3);
    CHECK(p.suffix_lse_head_stride == 17);
    CHECK(fake.log->launches.at(0).geometry.grid[0] == 3); // 768 vectors
  }
  SECTION("no tokens launches nothing") {
    MergeAttnStatesArgs args = someArgs(sig, 0);
    args.out = nullptr;
    REQUIRE(fake.runtime->runMergeAttnStates(*kernel, args));
    CHECK(fake.log->launches.empty());
  }
  SECTION("a kernel of another op is refused") {
    Signature prefill = testSignature(Arch::SM90A);
    const Kernel *other = nullptr;
    REQUIRE(fake.runtime->getKernel(prefill, other));
    Status status =
        fake.runtime->runMergeAttnStates(*other, someArgs(sig, 4));
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK(status.message() ==
          "runMergeAttnStates needs a merge_attn_states kernel, not prefill");
  }
  SECTION("the C API launches the same") {
    mlagen_kernel *handle = reinterpret_cast<mlagen_kernel *>(
        const_cast<Kernel *>(kernel));
    int64_t strides[9] = {0, 0, 0, 0, 0, 0, 0, 0, 40};
    REQUIRE(mlagen_merge_attn_states_run(
                handle, fakeAddress<void>(0x10000), fakeAddress<float>(0x20000),
                fakeAddress<void>(0x30000), fakeAddress<float>(0x40000), fakeAddress<void>(0x50000),
                nullptr, 32, 16, 128, strides, nullptr) == 0);
    const MergeAttnStatesParams &p = fake.log->launches.at(0).params;
    CHECK(p.out_lse == nullptr);
    CHECK(p.num_tokens == 32);
    CHECK(fake.log->launches.at(0).geometry.grid[0] == 32);
    CHECK(mlagen_merge_attn_states_run(
              handle, fakeAddress<void>(0x10000), fakeAddress<float>(0x20000),
              fakeAddress<void>(0x30000), fakeAddress<float>(0x40000), fakeAddress<void>(0x50000),
              nullptr, 32, 8, 128, nullptr,
              nullptr) == static_cast<int>(StatusCode::InvalidArgument));
    CHECK(std::string(mlagen_last_error()) ==
          "num_heads (8) must equal the kernel's (16)");
  }
}

TEST_CASE("merge_attn_states argument checks name the argument",
          "[merge-attn-states]") {
  const Signature sig = Signature::mergeAttnStates();
  MergeAttnStatesArgs args = someArgs(sig, 8);
  CHECK(launchError(args, Signature()) ==
        "runMergeAttnStates needs a merge_attn_states kernel, not prefill");

  args = someArgs(sig, 8);
  args.headDim = 64;
  CHECK(launchError(args) == "head_dim (64) must equal the kernel's (128)");
  args = someArgs(sig, -1);
  CHECK(launchError(args) == "num_tokens must be >= 0 (got -1)");
  args = someArgs(sig, 8);
  args.suffixOut = nullptr;
  CHECK(launchError(args) == "suffix_out is null");
  args = someArgs(sig, 8);
  args.prefixLse = nullptr;
  CHECK(launchError(args) == "prefix_lse is null");
  args = someArgs(sig, 8);
  args.out = fakeAddress<void>(0x50008);
  CHECK(launchError(args) == "out must be 16-byte aligned (the kernel loads "
                             "it in 16-byte units)");
  args = someArgs(sig, 8);
  args.outLse = fakeAddress<float>(0x60002);
  CHECK(launchError(args) == "out_lse must be 4-byte aligned (the kernel "
                             "loads it in 4-byte units)");
  args = someArgs(sig, 8);
  args.suffixHeadStride = 132;
  CHECK(launchError(args) == "suffix_head_stride must be a multiple of 8 "
                             "elements, so rows stay 16-byte aligned (got "
                             "132)");
  args = someArgs(sig, 8);
  args.outTokenStride = -8;
  CHECK(launchError(args) ==
        "out_token_stride must be >= 0, 0 meaning contiguous (got -8)");
  args = someArgs(sig, 8);
  args.prefixLseHeadStride = 7;
  CHECK(launchError(args) == "prefix_lse_head_stride must be 0 (num_tokens) "
                             "or >= num_tokens (8; got 7)");

  // lse=0: out_lse is ignored, even misaligned.
  Signature noLse = sig;
  noLse.returnLSE = false;
  args = someArgs(sig, 8);
  args.outLse = fakeAddress<float>(0x60002);
  CodeObject code;
  code.threadsPerBlock = 256;
  MergeAttnStatesLaunch launch;
  bool empty = true;
  REQUIRE(prepareMergeAttnStatesLaunch(noLse, code, args, launch, empty));
  CHECK_FALSE(empty);
  CHECK(launch.params.out_lse == nullptr);
  CHECK(launch.params.out_lse_head_stride == 0);
}

TEST_CASE("expand_page_indices: signature, launch and argument checks",
          "[expand-page-indices]") {
  Signature sig = Signature::expandPageIndices();
  CHECK(sig.canonical() == "expand_page_indices page=64 arch=sm_90a");
  Signature parsed;
  REQUIRE(parseSignature("expand_page_indices page=528 arch=gfx942", parsed));
  CHECK(parsed.pageSize == 528);
  CHECK(parsed.validate());
  CHECK(parsed.canonical() == "expand_page_indices page=528 arch=gfx942");
  Signature none;
  CHECK(parseSignature("expand_page_indices page=64 hq=16 arch=sm_90a", none)
            .message() ==
        "signature field 'hq' is not a expand_page_indices field");
  CHECK(parseSignature("expand_page_indices arch=sm_90a", none).message() ==
        "signature is missing field 'page'");
  Signature bad = sig;
  bad.pageSize = 4097;
  CHECK(bad.validate().message() ==
        "page_size must be in [1, 4096] for expand_page_indices (got 4097)");
  bad = sig;
  bad.numQHeads = 16;
  CHECK(bad.validate().message().find(
            "an expand_page_indices signature sets only page and arch") == 0);

  FakeRuntime<ExpandPageIndicesParams> fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));
  ExpandPageIndicesArgs args;
  args.blockTable = fakeAddress<const int>(0x1000);
  args.blockTableStride = 37;
  args.cuSeqlens = fakeAddress<const int>(0x2000);
  args.slots = fakeAddress<int>(0x3000);
  args.batch = 5;
  args.maxSeqlen = 1000;
  args.stream = fakeAddress<void>(0x99);

  SECTION("one block row per request") {
    REQUIRE(fake.runtime->runExpandPageIndices(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const RecordedLaunch<ExpandPageIndicesParams> &r = fake.log->launches[0];
    CHECK(r.geometry.grid[0] == 4); // ceil(1000 / 256)
    CHECK(r.geometry.grid[1] == 5);
    CHECK(r.geometry.threadsPerBlock == 256);
    CHECK(r.stream == args.stream);
    CHECK(r.params.block_table == args.blockTable);
    CHECK(r.params.cu_seqlens == args.cuSeqlens);
    CHECK(r.params.seq_starts == nullptr);
    CHECK(r.params.slots == args.slots);
    CHECK(r.params.block_table_stride == 37);
    CHECK(r.params.batch == 5);
  }
  SECTION("nothing to do launches nothing") {
    args.maxSeqlen = 0;
    REQUIRE(fake.runtime->runExpandPageIndices(*kernel, args));
    args.maxSeqlen = 10;
    args.batch = 0;
    args.slots = nullptr;
    REQUIRE(fake.runtime->runExpandPageIndices(*kernel, args));
    CHECK(fake.log->launches.empty());
  }
  SECTION("the C API launches the same") {
    mlagen_kernel *handle =
        reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernel));
    REQUIRE(mlagen_expand_page_indices_run(
                handle, args.blockTable, 37, args.cuSeqlens,
                fakeAddress<const int32_t>(0x4000), args.slots, 2, 1, nullptr) ==
            0);
    const RecordedLaunch<ExpandPageIndicesParams> &r = fake.log->launches.at(0);
    CHECK(r.geometry.grid[0] == 1);
    CHECK(r.geometry.grid[1] == 2);
    CHECK(r.params.seq_starts == fakeAddress<const int>(0x4000));
  }
  SECTION("argument checks name the argument") {
    auto error = [&](ExpandPageIndicesArgs a) {
      Status status = fake.runtime->runExpandPageIndices(*kernel, a);
      REQUIRE_FALSE(status.isOk());
      CHECK(status.code() == StatusCode::InvalidArgument);
      return status.message();
    };
    ExpandPageIndicesArgs a = args;
    a.batch = 65536;
    CHECK(error(a) == "batch must be in [0, 65535] (got 65536)");
    a = args;
    a.maxSeqlen = -1;
    CHECK(error(a) == "max_seqlen must be >= 0 (got -1)");
    a = args;
    a.blockTableStride = 0;
    CHECK(error(a) == "block_table_stride must be > 0 (got 0)");
    a = args;
    a.cuSeqlens = nullptr;
    CHECK(error(a) == "cu_seqlens is null");
    a = args;
    a.seqStarts = fakeAddress<const int>(0x4002);
    CHECK(error(a) == "seq_starts must be 4-byte aligned");
    const Kernel *merge = nullptr;
    REQUIRE(fake.runtime->getKernel(Signature::mergeAttnStates(), merge));
    Status status = fake.runtime->runExpandPageIndices(*merge, args);
    CHECK(status.message() == "runExpandPageIndices needs an "
                              "expand_page_indices kernel, not "
                              "merge_attn_states");
    CHECK(fake.log->launches.empty());
  }
}

TEST_CASE("kv_cache_write: signature, launch and argument checks",
          "[kv-cache-write]") {
  Signature sig = Signature::kvCacheWrite();
  CHECK(sig.canonical() == "kv_cache_write qk=576 v=512 page=64 kv=bf16 "
                           "arch=sm_90a");
  CHECK(sig.validate());
  Signature parsed;
  REQUIRE(parseSignature("kv_cache_write qk=576 v=512 page=1 kv=fp16 "
                         "arch=gfx950",
                         parsed));
  CHECK(parsed.qType == DType::FP16);
  CHECK(parsed.outType == DType::FP16);
  CHECK(parsed.validate());
  CHECK(parsed.canonical() ==
        "kv_cache_write qk=576 v=512 page=1 kv=fp16 arch=gfx950");
  Signature none;
  CHECK(parseSignature("kv_cache_write qk=576 v=512 page=64 hq=1 arch=sm_90a",
                       none)
            .message() == "signature field 'hq' is not a kv_cache_write field");
  Signature bad = sig;
  bad.headDimQK = 512;
  CHECK(bad.validate().message() ==
        "head_dim_qk - head_dim_v (the rope width) must be a multiple of 8 in "
        "[8, 256] for kv_cache_write (got 0)");
  bad = sig;
  bad.qType = bad.kvType = bad.outType = DType::FP8E4M3;
  CHECK(bad.validate().message() ==
        "in (the new tokens' type) must be bf16 or fp16 for kv_cache_write "
        "(got fp8e4m3)");
  bad = sig;
  bad.qType = bad.outType = DType::FP16;
  CHECK(bad.validate().message() ==
        "in must equal kv for a 16-bit cache (got in=fp16, kv=bf16)");
  bad = sig;
  bad.mask = Mask::Causal;
  CHECK(bad.validate().message().find(
            "a kv_cache_write signature sets only qk, v, page, in, kv and "
            "arch") == 0);

  // An fp8 cache names its inputs' type; bf16 by default.
  Signature fp8;
  REQUIRE(parseSignature("kv_cache_write qk=576 v=512 page=64 kv=fp8e4m3 "
                         "arch=gfx942",
                         fp8));
  CHECK(fp8.qType == DType::BF16);
  CHECK(fp8.validate());
  CHECK(fp8.canonical() ==
        "kv_cache_write qk=576 v=512 page=64 in=bf16 kv=fp8e4m3 arch=gfx942");
  REQUIRE(parseSignature("kv_cache_write qk=576 v=512 page=64 in=fp16 "
                         "kv=fp8e4m3 arch=sm_90a",
                         fp8));
  CHECK(fp8.qType == DType::FP16);
  CHECK(fp8.outType == DType::FP16);
  CHECK(parseSignature("prefill qk=192 v=128 hq=16 hkv=16 mask=causal in=bf16 "
                       "arch=sm_90a",
                       none)
            .message() == "signature field 'in' is not a prefill field");

  FakeRuntime<KVCacheWriteParams> fake;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(sig, kernel));
  KVCacheWriteArgs args;
  args.kvC = fakeAddress<const void>(0x10000);
  args.kPe = fakeAddress<const void>(0x20000);
  args.kvCache = fakeAddress<void>(0x30000);
  args.slotMapping = fakeAddress<const void>(0x40000);
  args.numTokens = 100;

  SECTION("contiguous defaults") {
    REQUIRE(fake.runtime->runKVCacheWrite(*kernel, args));
    const RecordedLaunch<KVCacheWriteParams> &r = fake.log->launches.at(0);
    CHECK(r.geometry.grid[0] == 29); // ceil(100 * 72 / 256)
    CHECK(r.geometry.threadsPerBlock == 256);
    CHECK(r.params.kv_c == args.kvC);
    CHECK(r.params.k_pe == args.kPe);
    CHECK(r.params.kv_cache == args.kvCache);
    CHECK(r.params.slot_mapping == args.slotMapping);
    CHECK(r.params.kv_c_token_stride == 512);
    CHECK(r.params.k_pe_token_stride == 64);
    CHECK(r.params.cache_block_stride == 64 * 576);
    CHECK(r.params.cache_token_stride == 576);
    CHECK(r.params.num_tokens == 100);
  }
  SECTION("vLLM's views: k_pe a slice of a wider row, a padded cache row") {
    args.kPeTokenStride = 576;
    args.kvCTokenStride = 576;
    args.cacheTokenStride = 640;
    REQUIRE(fake.runtime->runKVCacheWrite(*kernel, args));
    const RecordedLaunch<KVCacheWriteParams> &r = fake.log->launches.at(0);
    CHECK(r.params.k_pe_token_stride == 576);
    CHECK(r.params.cache_block_stride == 64 * 640);
    CHECK(r.params.cache_token_stride == 640);
  }
  SECTION("the C API launches the same") {
    mlagen_kernel *handle =
        reinterpret_cast<mlagen_kernel *>(const_cast<Kernel *>(kernel));
    int64_t strides[4] = {0, 576, 0, 0};
    REQUIRE(mlagen_kv_cache_write_run(handle, args.kvC, args.kPe, args.kvCache,
                                      args.slotMapping, 64, nullptr, 7,
                                      strides, nullptr) == 0);
    const RecordedLaunch<KVCacheWriteParams> &r = fake.log->launches.at(0);
    CHECK(r.params.num_tokens == 7);
    CHECK(r.params.k_pe_token_stride == 576);
    CHECK(r.params.slot_mapping_64 == 1);
    CHECK(r.params.scale == nullptr); // a 16-bit cache has no scale
    CHECK(r.geometry.grid[0] == 2); // ceil(7 * 72 / 256)
    CHECK(mlagen_kv_cache_write_run(handle, args.kvC, args.kPe, args.kvCache,
                                    args.slotMapping, 16, nullptr, 7, strides,
                                    nullptr) == MLAGEN_INVALID_ARGUMENT);
    CHECK(std::string(mlagen_last_error()) ==
          "slot_mapping_bits must be 32 or 64 (got 16)");
  }
  SECTION("an fp8 cache takes a scale and 8-byte aligned rows") {
    Signature fp8Sig = sig;
    fp8Sig.kvType = DType::FP8E4M3;
    const Kernel *fp8Kernel = nullptr;
    REQUIRE(fake.runtime->getKernel(fp8Sig, fp8Kernel));
    KVCacheWriteArgs a = args;
    Status status = fake.runtime->runKVCacheWrite(*fp8Kernel, a);
    CHECK(status.message() == "scale is null: an fp8 cache stores x / scale "
                              "(a device fp32 [1])");
    a.scale = fakeAddress<const float>(0x50000);
    a.kvCache = fakeAddress<void>(0x30008);
    REQUIRE(fake.runtime->runKVCacheWrite(*fp8Kernel, a));
    const RecordedLaunch<KVCacheWriteParams> &r = fake.log->launches.at(0);
    CHECK(r.params.scale == a.scale);
    CHECK(r.params.cache_token_stride == 576); // bytes of an fp8 row
    CHECK(r.params.slot_mapping_64 == 0);
  }
  SECTION("argument checks name the argument") {
    auto error = [&](KVCacheWriteArgs a) {
      Status status = fake.runtime->runKVCacheWrite(*kernel, a);
      REQUIRE_FALSE(status.isOk());
      CHECK(status.code() == StatusCode::InvalidArgument);
      return status.message();
    };
    KVCacheWriteArgs a = args;
    a.numTokens = -1;
    CHECK(error(a) == "num_tokens must be >= 0 (got -1)");
    a = args;
    a.slotMapping = nullptr;
    CHECK(error(a) == "slot_mapping is null");
    a = args;
    a.kPe = fakeAddress<const void>(0x20008);
    CHECK(error(a) == "k_pe must be 16-byte aligned (the kernel moves it in "
                      "16-byte units)");
    a = args;
    a.kvCTokenStride = 516;
    CHECK(error(a) == "kv_c_token_stride must be a multiple of 8 elements, so "
                      "rows stay 16-byte aligned (got 516)");
    a = args;
    a.cacheTokenStride = 512;
    CHECK(error(a) ==
          "cache_token_stride must be >= the row of 576 elements (got 512)");
    a = args;
    a.slotMapping = fakeAddress<const void>(0x40004);
    a.slotMappingInt64 = true;
    CHECK(error(a) == "slot_mapping must be 8-byte aligned (the kernel moves "
                      "it in 8-byte units)");
    a = args;
    a.numTokens = 0;
    a.kvCache = nullptr;
    REQUIRE(fake.runtime->runKVCacheWrite(*kernel, a));
    CHECK(fake.log->launches.empty());
  }
}
