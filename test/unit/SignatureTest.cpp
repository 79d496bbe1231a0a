//===- SignatureTest.cpp - canonical text, parsing, validation ------------===//

#include "mlagen/Runtime/Signature.h"

#include "CatchStatus.h"

#include <cmath>
#include <limits>

using namespace mlagen;

namespace {

// The message of `sig.validate()`, which must fail with `code`.
std::string rejection(const Signature &sig,
                      StatusCode code = StatusCode::InvalidSignature) {
  Status status = sig.validate();
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == code);
  return status.message();
}

} // namespace

TEST_CASE("canonical text of the default signature", "[signature]") {
  CHECK(Signature().canonical() ==
        "prefill qk=192 v=128 hq=16 hkv=16 mask=causal window=-1,-1 "
        "softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen "
        "tile_q=0 arch=sm_90a");
}

TEST_CASE("parseSignature inverts canonical", "[signature]") {
  Signature sig;
  sig.headDimQK = 128;
  sig.headDimV = 128;
  sig.numQHeads = 32;
  sig.numKVHeads = 8;
  sig.mask = Mask::None;
  sig.windowLeft = 255;
  sig.windowRight = 0;
  sig.softCap = 30.5f;
  sig.alibi = true;
  sig.returnLSE = false;
  sig.qType = sig.kvType = sig.outType = DType::FP16;
  sig.tileQ = 64;
  sig.arch = Arch::GFX942;

  for (Arch arch : {Arch::GFX90A, Arch::GFX942, Arch::GFX950, Arch::SM80,
                    Arch::SM90A}) {
    sig.arch = arch;
    Signature parsed;
    REQUIRE(parseSignature(sig.canonical(), parsed));
    CHECK(parsed == sig);
    CHECK(parsed.canonical() == sig.canonical());
  }
}

TEST_CASE("soft caps print as the shortest text that reads back",
          "[signature]") {
  for (float cap : {0.1f, 1e-7f, 50.0f, 3.4e38f}) {
    Signature sig;
    sig.softCap = cap;
    Signature parsed;
    REQUIRE(parseSignature(sig.canonical(), parsed));
    CHECK(parsed.softCap == cap);
  }
  Signature negativeZero;
  negativeZero.softCap = -0.0f;
  CHECK(negativeZero.canonical().find("softcap=0 ") != std::string::npos);
}

TEST_CASE("parseSignature accepts any field order", "[signature]") {
  Signature parsed;
  REQUIRE(parseSignature(
      "prefill arch=gfx950 tile_q=0 layout=varlen out=bf16 kv=bf16 q=bf16 "
      "lse=1 softcap=0 window=-1,-1 mask=causal hkv=1 hq=16 v=512 qk=576",
      parsed));
  CHECK(parsed.arch == Arch::GFX950);
  CHECK(parsed.headDimQK == 576);
  CHECK(parsed.numKVHeads == 1);
}

TEST_CASE("alibi is a prefill flag that defaults to off", "[signature]") {
  // Text written before alibi existed still parses, as alibi=0.
  Signature parsed;
  REQUIRE(parseSignature("prefill qk=128 v=128 hq=32 hkv=8 mask=causal "
                         "window=-1,-1 softcap=0 lse=1 arch=sm_90a",
                         parsed));
  CHECK_FALSE(parsed.alibi);
  REQUIRE(parseSignature("prefill qk=128 v=128 hq=32 hkv=32 mask=causal "
                         "alibi=1 arch=gfx942",
                         parsed));
  CHECK(parsed.alibi);
  CHECK(parsed.canonical().find(" alibi=1 ") != std::string::npos);
  Signature other;
  Status status = parseSignature("prefill qk=128 v=128 hq=8 hkv=8 "
                                 "mask=causal alibi=yes arch=sm_80",
                                 other);
  CHECK(status.message() ==
        "signature field 'alibi' has a malformed value 'yes'");
  status = parseSignature("decode qk=576 v=512 hq=16 q_len=1 page=64 "
                          "alibi=1 arch=sm_90a",
                          other);
  CHECK(status.message() == "signature field 'alibi' is not a decode field");
}

TEST_CASE("parseSignature names what is wrong", "[signature]") {
  const std::string good = Signature().canonical();
  auto error = [](const std::string &text) {
    Signature sig;
    Status status = parseSignature(text, sig);
    REQUIRE_FALSE(status.isOk());
    CHECK(status.code() == StatusCode::InvalidSignature);
    return status.message();
  };
  CHECK(error("") == "signature text is empty");
  CHECK(error("merge qk=1") ==
        "unknown op 'merge' (expected prefill, decode, merge_attn_states, "
        "expand_page_indices, kv_cache_write, reshape_and_cache, "
        "gather_cache or paged_decode)");
  CHECK(error(good + " color=red") == "unknown signature field 'color'");
  CHECK(error(good + " qk=64") == "signature field 'qk' appears twice");
  CHECK(error("prefill qk=192") == "signature is missing field 'v'");
  CHECK(error("prefill qk=192 v=128 hq=16 hkv=16 mask=causal") ==
        "signature is missing field 'arch'");
  CHECK_THAT(error("prefill qk=1x2"),
             Catch::Contains("'qk'") && Catch::Contains("'1x2'"));
  std::string badArch = good;
  badArch.replace(badArch.find("sm_90a"), 6, "sm_75");
  CHECK_THAT(error(badArch), Catch::Contains("'arch'"));
  CHECK_THAT(error("prefill window=3"), Catch::Contains("'window'"));
  CHECK_THAT(error("prefill lse=2"), Catch::Contains("'lse'"));
  CHECK_THAT(error("prefill qk"), Catch::Contains("not key=value"));
}

TEST_CASE("validate accepts the MLA and GQA shapes", "[signature]") {
  Signature mla;
  CHECK(mla.validate());
  Signature gqa;
  gqa.headDimQK = gqa.headDimV = 128;
  gqa.numQHeads = 32;
  gqa.numKVHeads = 8;
  gqa.windowLeft = 0;
  gqa.softCap = 50.0f;
  gqa.alibi = true;
  gqa.tileQ = 256;
  CHECK(gqa.validate());
  // A window wider than any sequence is just unbounded in practice.
  gqa.windowLeft = gqa.windowRight = 1 << 30;
  CHECK(gqa.validate());
}

TEST_CASE("validate names the field and the rule", "[signature]") {
  Signature sig;
  sig.headDimQK = 100;
  CHECK(rejection(sig) ==
        "head_dim_qk must be a multiple of 16 in [16, 576] (got 100)");
  sig = Signature();
  sig.headDimQK = 592;
  CHECK(rejection(sig) ==
        "head_dim_qk must be a multiple of 16 in [16, 576] (got 592)");
  sig = Signature();
  sig.headDimV = 528;
  CHECK(rejection(sig) ==
        "head_dim_v must be a multiple of 16 in [16, 512] (got 528)");
  sig = Signature();
  sig.numQHeads = 0;
  CHECK(rejection(sig) == "num_q_heads must be in [1, 65535] (got 0)");
  sig = Signature();
  sig.numKVHeads = 0;
  CHECK(rejection(sig) == "num_kv_heads must be >= 1 (got 0)");
  sig = Signature();
  sig.numKVHeads = 5;
  CHECK(rejection(sig) ==
        "num_q_heads must be a multiple of num_kv_heads (got 16 and 5)");
  sig = Signature();
  sig.windowLeft = -2;
  CHECK(rejection(sig) ==
        "window_left must be -1 (unbounded) or >= 0 (got -2)");
  sig = Signature();
  sig.windowLeft = -5;
  sig.windowRight = 0;
  CHECK(rejection(sig) ==
        "window_left must be -1 (unbounded) or >= 0 (got -5)");
  sig = Signature();
  sig.windowRight = -3;
  CHECK(rejection(sig) ==
        "window_right must be -1 (unbounded) or >= 0 (got -3)");
  sig = Signature();
  sig.softCap = -1.0f;
  CHECK(rejection(sig) == "soft_cap must be finite and >= 0 (got -1)");
  sig.softCap = std::numeric_limits<float>::infinity();
  CHECK_THAT(rejection(sig), Catch::StartsWith("soft_cap must be finite"));
  sig.softCap = std::nanf("");
  CHECK_THAT(rejection(sig), Catch::StartsWith("soft_cap must be finite"));
  sig.softCap = -std::numeric_limits<float>::infinity();
  CHECK_THAT(rejection(sig), Catch::StartsWith("soft_cap must be finite"));
  sig.softCap = -0.5f;
  CHECK(rejection(sig) == "soft_cap must be finite and >= 0 (got -0.5)");
  for (int tile : {8, 24, 272, -16}) {
    sig = Signature();
    sig.tileQ = tile;
    CHECK(rejection(sig) ==
          "tile_q must be 0 (chosen by the compiler) or a multiple of 16 in "
          "[16, 256] (got " +
              std::to_string(tile) + ")");
  }
  sig = Signature();
  sig.outType = DType::FP16;
  CHECK(rejection(sig) == "out_type must equal q_type for now (got out=fp16, "
                          "q=bf16)");
  sig = Signature();
  sig.kvType = DType::FP16;
  CHECK(rejection(sig) ==
        "kv_type must equal q_type for now (got kv=fp16, q=bf16)");
  sig = Signature();
  sig.arch = static_cast<Arch>(42);
  CHECK(rejection(sig) == "arch has an unknown value (got 42)");
}

TEST_CASE("fp8 prefill is Unsupported, not invalid", "[signature]") {
  for (int which = 0; which < 3; ++which) {
    Signature sig;
    (which == 0 ? sig.qType : which == 1 ? sig.kvType : sig.outType) =
        DType::FP8E4M3;
    CHECK(rejection(sig, StatusCode::Unsupported) ==
          "fp8 prefill is not supported yet");
  }
}

TEST_CASE("arch names round-trip", "[signature]") {
  for (Arch arch : {Arch::GFX90A, Arch::GFX942, Arch::GFX950, Arch::SM80,
                    Arch::SM90A}) {
    Arch parsed;
    REQUIRE(parseArch(archName(arch), parsed));
    CHECK(parsed == arch);
  }
  Arch unused;
  CHECK_FALSE(parseArch("gfx1100", unused));
  CHECK(isAMD(Arch::GFX942));
  CHECK_FALSE(isAMD(Arch::SM80));
}

TEST_CASE("Status prints its code name", "[signature]") {
  CHECK(Status().toString() == "Ok");
  CHECK(Status(StatusCode::CompileError, "boom").toString() ==
        "CompileError: boom");
  CHECK(std::string(statusCodeName(StatusCode::Internal)) == "Internal");
}

TEST_CASE("a signature text may leave the optional fields out",
          "[signature]") {
  Signature sig;
  REQUIRE(parseSignature("prefill qk=128 v=128 hq=32 hkv=8 mask=none "
                         "arch=gfx942",
                         sig)
              .isOk());
  Signature expected;
  expected.headDimQK = 128;
  expected.headDimV = 128;
  expected.numQHeads = 32;
  expected.numKVHeads = 8;
  expected.mask = Mask::None;
  expected.arch = Arch::GFX942;
  CHECK(sig == expected);
}

TEST_CASE("paged_decode signatures round-trip and default their types",
          "[signature]") {
  const std::string text = "paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 "
                           "window=-1 softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 "
                           "out=bf16 arch=sm_90a";
  CHECK(Signature::pagedDecode().canonical() == text);
  Signature sig;
  REQUIRE(parseSignature(text, sig));
  CHECK(sig == Signature::pagedDecode());
  CHECK(sig.validate());

  // The required fields only; an fp8 cache defaults q and out to bf16.
  REQUIRE(parseSignature("paged_decode hq=16 hkv=4 v=80 q_len=4 page=64 "
                         "window=256 softcap=30 kv=fp8e4m3 arch=gfx942",
                         sig));
  CHECK(sig.canonical() == "paged_decode hq=16 hkv=4 v=80 q_len=4 page=64 "
                           "window=256 softcap=30 alibi=0 lse=1 q=bf16 "
                           "kv=fp8e4m3 out=bf16 arch=gfx942");
  CHECK(sig.headDimQK == 80);
  CHECK(sig.windowLeft == 256);
  CHECK(sig.windowRight == -1);
  CHECK(sig.validate());
  REQUIRE(parseSignature("paged_decode hq=8 hkv=2 v=32 q_len=1 page=1 "
                         "kv=fp16 arch=sm_80",
                         sig));
  CHECK(sig.qType == DType::FP16);
  CHECK(sig.outType == DType::FP16);
  CHECK(sig.validate());
}

TEST_CASE("paged_decode's alibi flag defaults to off", "[signature]") {
  // Text written before paged_decode had alibi still parses, as alibi=0.
  Signature sig;
  REQUIRE(parseSignature("paged_decode hq=32 hkv=32 v=128 q_len=1 page=16 "
                         "window=-1 softcap=0 lse=1 q=bf16 kv=bf16 out=bf16 "
                         "arch=sm_90a",
                         sig));
  CHECK_FALSE(sig.alibi);
  REQUIRE(parseSignature("paged_decode hq=32 hkv=32 v=128 q_len=4 page=64 "
                         "window=256 alibi=1 kv=fp8e4m3 arch=gfx942",
                         sig));
  CHECK(sig.alibi);
  CHECK(sig.validate());
  CHECK(sig.canonical() == "paged_decode hq=32 hkv=32 v=128 q_len=4 page=64 "
                           "window=256 softcap=0 alibi=1 lse=1 q=bf16 "
                           "kv=fp8e4m3 out=bf16 arch=gfx942");
  Signature back;
  REQUIRE(parseSignature(sig.canonical(), back));
  CHECK(back == sig);
  // alibi makes the signature, its key and its cache slot differ.
  Signature plain = sig;
  plain.alibi = false;
  CHECK_FALSE(plain == sig);
  CHECK(plain.canonical() != sig.canonical());
  Status status = parseSignature("paged_decode hq=32 hkv=8 v=128 q_len=1 "
                                 "page=16 alibi=on arch=sm_90a",
                                 sig);
  CHECK(status.message() ==
        "signature field 'alibi' has a malformed value 'on'");
}

TEST_CASE("paged_decode's tile_k is printed only where pinned",
          "[signature]") {
  Signature sig;
  REQUIRE(parseSignature("paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 "
                         "tile_k=32 arch=sm_90a",
                         sig));
  CHECK(sig.tileK == 32);
  CHECK(sig.validate());
  CHECK(sig.canonical() == "paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 "
                           "window=-1 softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 "
                           "out=bf16 tile_k=32 arch=sm_90a");
  sig.tileK = 48;
  CHECK(sig.validate().message() == "tile_k must be 0 (chosen by the shape), "
                                    "32, 64 or 128 for paged_decode (got 48)");
}

TEST_CASE("paged_decode validation names the field", "[signature]") {
  auto error = [](const std::string &fields) {
    Signature sig;
    Status parsed = parseSignature(
        "paged_decode hq=32 hkv=8 v=128 q_len=1 page=16 arch=sm_90a " + fields,
        sig);
    if (!parsed)
      return parsed.message();
    return sig.validate().message();
  };
  CHECK(error("") == "");
  CHECK(error("mask=none") ==
        "signature field 'mask' is not a paged_decode field");
  CHECK(error("in=bf16") == "signature field 'in' is not a paged_decode field");
  Signature sig = Signature::pagedDecode();
  sig.numKVHeads = 5;
  CHECK(sig.validate().message() ==
        "num_q_heads must be a multiple of num_kv_heads (got 32 and 5)");
  sig = Signature::pagedDecode();
  sig.headDimQK = sig.headDimV = 100;
  CHECK(sig.validate().message() ==
        "head_dim must be a multiple of 8 in [8, 256] for paged_decode "
        "(16-byte cache vectors) (got 100)");
  sig.headDimQK = sig.headDimV = 40;
  sig.kvType = DType::FP8E4M3;
  CHECK(sig.validate().message() ==
        "head_dim must be a multiple of 16 in [8, 256] for paged_decode "
        "(16-byte cache vectors) (got 40)");
  sig = Signature::pagedDecode();
  sig.qLen = 9;
  CHECK(sig.validate().message() ==
        "q_len must be in [1, 8] for paged_decode (got 9)");
  sig = Signature::pagedDecode();
  sig.pageSize = 24;
  CHECK(sig.validate().message() ==
        "page_size must be a power of two in [1, 256] (got 24)");
  sig = Signature::pagedDecode();
  sig.windowLeft = -2;
  CHECK(sig.validate().message() ==
        "window must be -1 (unbounded) or >= 0 (got -2)");
  sig = Signature::pagedDecode();
  sig.softCap = -1.0f;
  CHECK(sig.validate().message() ==
        "soft_cap must be finite and >= 0 (got -1)");
  sig = Signature::pagedDecode();
  sig.kvType = DType::FP8E4M3;
  sig.arch = Arch::GFX90A;
  CHECK(sig.validate().message() ==
        "gfx90a has no fp8 conversion instructions: an fp8 cache needs "
        "sm_80, sm_90a, gfx942 or gfx950");
  sig = Signature::pagedDecode();
  sig.windowRight = 3;
  CHECK_FALSE(sig.validate());
}
