//===- PagedDecodeLaunchTest.cpp - paged decode argument checks -----------===//
//
// preparePagedDecodeLaunch without a device: the ALiBi slopes' rules and
// the parameter block's layout against the kernel template's declaration.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "PagedDecodeLaunch.h"
#include "TestSupport.h"
#include "mlagen/Templates/Templates.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace mlagen;

namespace {

template <typename T> T *address(uintptr_t value) {
  return reinterpret_cast<T *>(value);
}

// The geometry PrepareEmission reports for a paged_decode code object.
CodeObject pagedCode(const Signature &sig) {
  CodeObject code;
  code.arch = sig.arch;
  code.threadsPerBlock = 128;
  code.sharedBytes = 40000;
  code.tileQ = 4;
  code.tileK = 64;
  code.paddedHeads = sig.numQHeads;
  code.extraEntries.push_back({"mlagen_paged_decode_reduce", 128, 0, 4});
  return code;
}

PagedDecodeArgs someArgs(const Signature &sig) {
  PagedDecodeArgs args;
  args.q = address<const void>(0x10000);
  args.kCache = address<const void>(0x20000);
  args.vCache = address<const void>(0x30000);
  args.out = address<void>(0x40000);
  args.blockTable = address<const int>(0x50000);
  args.blockTableStride = 8;
  args.seqLens = address<const int>(0x60000);
  args.batch = 2;
  args.qLen = sig.qLen;
  args.numQHeads = sig.numQHeads;
  args.numKVHeads = sig.numKVHeads;
  args.work = address<const int>(0x70000);
  args.numWork = address<const int>(0x70100);
  args.merge = address<const int>(0x70200);
  args.workCapacity = 16;
  args.maxBatch = 4;
  args.partialOut = address<float>(0x80000);
  args.partialLse = address<float>(0x90000);
  args.softmaxScale = 0.125f;
  return args;
}

Status prepare(const Signature &sig, const PagedDecodeArgs &args,
               PagedDecodeLaunch &launch) {
  bool empty = false;
  return preparePagedDecodeLaunch(sig, pagedCode(sig), args, launch, empty);
}

} // namespace

TEST_CASE("an alibi paged decode needs slopes; others refuse them",
          "[paged-decode]") {
  Signature alibi = Signature::pagedDecode();
  alibi.numKVHeads = 32;
  alibi.alibi = true;
  Signature plain = alibi;
  plain.alibi = false;
  PagedDecodeLaunch launch;

  PagedDecodeArgs args = someArgs(alibi);
  Status status = prepare(alibi, args, launch);
  CHECK(status.code() == StatusCode::InvalidArgument);
  CHECK(status.message() == "alibi_slopes is null, but the kernel has "
                            "alibi=1: pass [num_q_heads] fp32 slopes");
  args.alibiSlopes = address<const float>(0xa0002);
  CHECK(prepare(alibi, args, launch).message() ==
        "alibi_slopes must be 4-byte aligned (the kernel loads it in 4-byte "
        "units)");
  args.alibiSlopes = address<const float>(0xa0000);
  REQUIRE(prepare(alibi, args, launch));
  CHECK(launch.params.alibi_slopes == args.alibiSlopes);
  CHECK(launch.params.softmax_scale == 0.125f);
  CHECK(launch.params.block_table_stride == 8);

  CHECK_THAT(prepare(plain, args, launch).message(),
             Catch::StartsWith("alibi_slopes is given, but the kernel has "
                               "alibi=0"));
  args.alibiSlopes = nullptr;
  REQUIRE(prepare(plain, args, launch));
  CHECK(launch.params.alibi_slopes == nullptr);
}

TEST_CASE("both paged decode kernels may start early", "[paged-decode]") {
  // Each waits for its predecessor first (PAGED_DECODE_CONTRACT.md).
  Signature sig = Signature::pagedDecode();
  PagedDecodeLaunch launch;
  REQUIRE(prepare(sig, someArgs(sig), launch));
  CHECK(launch.decode.earlyStart);
  CHECK(launch.reduce.earlyStart);
  const std::string source(*templates::lookup("kernels/paged_decode.hip"));
  for (const char *entry :
       {"mlagen_paged_decode(mlagen_paged_decode_params p) {",
        "mlagen_paged_decode_reduce(mlagen_paged_decode_params p) {"}) {
    const size_t body = source.find(entry);
    REQUIRE(body != std::string::npos);
    const size_t wait = source.find("grid_dependency_wait();", body);
    const size_t firstRead = source.find("p.", body + std::strlen(entry));
    CHECK(wait < firstRead);
  }
}

TEST_CASE("the paged decode template declares the parameter block the "
          "runtime passes",
          "[paged-decode]") {
  // PagedDecodeParams.h pins the host side's offsets; this pins the kernel's
  // declaration to the same fields, types and order.
  const std::vector<std::string> declarations =
      test::templateStructDeclarations("kernels/paged_decode.hip",
                                       "mlagen_paged_decode_params");
  CHECK(declarations ==
        std::vector<std::string>{
            "constvoid*q",
            "constvoid*k_cache",
            "constvoid*v_cache",
            "void*out",
            "float*lse",
            "constint*block_table",
            "constint*seq_lens",
            "constint*work",
            "constint*num_work",
            "constint*merge",
            "float*partial_out",
            "float*partial_lse",
            "constfloat*k_scale",
            "constfloat*v_scale",
            "constfloat*alibi_slopes",
            "longlongq_batch_stride,q_token_stride,q_head_stride",
            "longlongout_batch_stride,out_token_stride,out_head_stride",
            "longlongkv_block_stride,kv_token_stride,kv_head_stride",
            "intblock_table_stride",
            "intbatch",
            "floatsoftmax_scale",
            "intreserved",
        });
}
