//===- PrefillLaunchTest.cpp - the prefill parameter block and tensor maps ===//
//
// runPrefill on a fake sm_90a device: which kernels get tensor maps of k and
// v for bulk copies, what they describe, and that the template declares the
// block the host fills.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "PrefillLaunch.h"
#include "RecordingBackend.h"
#include "TestSupport.h"

#include <string>
#include <vector>

using namespace mlagen;
using namespace mlagen::test;

namespace {

// 4 sequences, 5000 keys in all, 16 heads of 192 / 128.
PrefillArgs mlaArgs() {
  PrefillArgs args;
  args.q = fakeAddress<const void>(0x10000);
  args.k = fakeAddress<const void>(0x20000);
  args.v = fakeAddress<const void>(0x30000);
  args.out = fakeAddress<void>(0x40000);
  args.cuSeqlensQ = fakeAddress<const int>(0x50000);
  args.cuSeqlensK = fakeAddress<const int>(0x60000);
  args.batch = 4;
  args.maxSeqlenQ = 2048;
  args.totalK = 5000;
  return args;
}

Signature mlaSignature() {
  Signature sig = testSignature(Arch::SM90A);
  sig.headDimV = 128;
  sig.numQHeads = sig.numKVHeads = 16;
  return sig;
}

} // namespace

TEST_CASE("the prefill template declares the parameter block runPrefill "
          "passes",
          "[prefill-launch]") {
  // PrefillParams.h pins the host side's offsets; this pins the kernel's
  // declaration to the same fields, types and order.
  CHECK(templateStructDeclarations("kernels/prefill.hip",
                                   "mlagen_prefill_params") ==
        std::vector<std::string>{
            "constvoid*q",
            "constvoid*k",
            "constvoid*v",
            "void*out",
            "float*lse",
            "constint*cu_seqlens_q",
            "constint*cu_seqlens_k",
            "longlongq_token_stride,q_head_stride",
            "longlongk_token_stride,k_head_stride",
            "longlongv_token_stride,v_head_stride",
            "longlongout_token_stride,out_head_stride",
            "longlonglse_head_stride",
            "intbatch",
            "intmax_seqlen_q",
            "floatsoftmax_scale",
            "intkv_maps_ready",
            "constfloat*alibi_slopes",
            "alignas(64)unsignedchark_map[128]",
            "alignas(64)unsignedcharv_map[128]",
        });
}

TEST_CASE("the sm_90a wgmma prefill gets tensor maps of k and v when "
          "total_k is known",
          "[prefill-launch]") {
  FakeRuntime<PrefillParams> fake;
  fake.log->tensorMaps = true;
  // The warp-specialised layout: a producer warpgroup and two consumers.
  fake.generator->threadsPerBlock = 384;
  fake.generator->tileQ = 128;
  fake.generator->tileK = 128;
  const Kernel *kernel = nullptr;
  REQUIRE(fake.runtime->getKernel(mlaSignature(), kernel));

  SECTION("k and v as (head dim, kv head, token) in 64 x 1 x tile_k boxes") {
    PrefillArgs args = mlaArgs();
    args.vTokenStride = 16 * 256; // v inside a wider kv tensor
    REQUIRE(fake.runtime->runPrefill(*kernel, args));
    REQUIRE(fake.log->launches.size() == 1);
    const PrefillParams &p = fake.log->launches[0].params;
    CHECK(p.kv_maps_ready == 1);
    CHECK(p.k_map[0] == 0xA5);
    CHECK(p.v_map[127] == 0xA5);
    REQUIRE(fake.log->tensorMapRequests.size() == 2);
    const TensorMapRequest &k = fake.log->tensorMapRequests[0];
    const TensorMapRequest &v = fake.log->tensorMapRequests[1];
    CHECK(k.base == args.k);
    CHECK(k.sizes[0] == 192);
    CHECK(k.sizes[1] == 16);
    CHECK(k.sizes[2] == 5000);
    CHECK(k.strides[0] == 192 * 2);
    CHECK(k.strides[1] == 16 * 192 * 2);
    CHECK(k.box[0] == 64);
    CHECK(k.box[1] == 1);
    CHECK(k.box[2] == 128);
    CHECK(v.base == args.v);
    CHECK(v.sizes[0] == 128);
    CHECK(v.sizes[2] == 5000);
    CHECK(v.strides[0] == 128 * 2);
    CHECK(v.strides[1] == 16 * 256 * 2);

    // The same tensors again: the maps are kept, not encoded again.
    REQUIRE(fake.runtime->runPrefill(*kernel, args));
    CHECK(fake.log->tensorMapRequests.size() == 2);
    CHECK(fake.log->launches[1].params.kv_maps_ready == 1);
  }

  SECTION("total_k unknown: cp.async, no maps") {
    PrefillArgs args = mlaArgs();
    args.totalK = 0;
    REQUIRE(fake.runtime->runPrefill(*kernel, args));
    CHECK(fake.log->launches.at(0).params.kv_maps_ready == 0);
    CHECK(fake.log->tensorMapRequests.empty());
  }

  SECTION("a device without tensor maps: cp.async") {
    fake.log->tensorMaps = false;
    REQUIRE(fake.runtime->runPrefill(*kernel, mlaArgs()));
    CHECK(fake.log->launches.at(0).params.kv_maps_ready == 0);
  }

  SECTION("a negative total_k is refused") {
    PrefillArgs args = mlaArgs();
    args.totalK = -1;
    Status status = fake.runtime->runPrefill(*kernel, args);
    CHECK(status.code() == StatusCode::InvalidArgument);
    CHECK(status.message() ==
          "total_k must be >= 0, 0 meaning unknown (got -1)");
    CHECK(fake.log->launches.empty());
  }
}

TEST_CASE("only the sm_90a warp-specialised prefill describes tensor maps",
          "[prefill-launch]") {
  Signature sig = mlaSignature();
  CodeObject code;
  code.tileQ = 128;
  code.tileK = 128;
  code.threadsPerBlock = 384;
  const PrefillArgs args = mlaArgs();
  PrefillLaunch launch;
  bool empty = false;
  REQUIRE(preparePrefillLaunch(sig, code, args, launch, empty));
  TensorMapRequest k, v;
  CHECK(describePrefillTensorMaps(sig, code, args, launch, k, v));

  SECTION("one consumer warpgroup (tile_q 64, 256 threads)") {
    code.tileQ = 64;
    code.threadsPerBlock = 256;
    CHECK(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
  SECTION("mma.sync warps") {
    code.threadsPerBlock = 256;
    CHECK_FALSE(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
  SECTION("sm_80") {
    sig.arch = Arch::SM80;
    CHECK_FALSE(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
  SECTION("three consumer warpgroups (tile_q 192, 512 threads)") {
    code.tileQ = 192;
    code.threadsPerBlock = 512;
    CHECK(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
  SECTION("a head dim that ends inside a slab: 64-column boxes over it") {
    sig.headDimQK = 96;
    REQUIRE(describePrefillTensorMaps(sig, code, args, launch, k, v));
    CHECK(k.sizes[0] == 96); // the box's last 32 columns are zero-filled
    CHECK(k.box[0] == 64);
    CHECK(v.sizes[0] == 128);
  }
  SECTION("head dims below one 64-column slab") {
    sig.headDimQK = 48;
    CHECK_FALSE(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
  SECTION("a code object without its key tile") {
    code.tileK = 0;
    CHECK_FALSE(describePrefillTensorMaps(sig, code, args, launch, k, v));
  }
}
