//===- DecodeSignatureTest.cpp - decode signatures: text, parse, rules ----===//

#include "mlagen/Runtime/Signature.h"

#include "CatchStatus.h"

using namespace mlagen;

namespace {

std::string rejection(const Signature &sig,
                      StatusCode code = StatusCode::InvalidSignature) {
  Status status = sig.validate();
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == code);
  return status.message();
}

std::string parseError(const std::string &text) {
  Signature sig;
  Status status = parseSignature(text, sig);
  REQUIRE_FALSE(status.isOk());
  CHECK(status.code() == StatusCode::InvalidSignature);
  return status.message();
}

} // namespace

TEST_CASE("canonical text of the default decode signature", "[signature]") {
  CHECK(Signature::decode().canonical() ==
        "decode qk=576 v=512 hq=16 q_len=1 page=64 mask=causal lse=1 q=bf16 "
        "kv=bf16 out=bf16 batch_invariant=0 tile_k=0 arch=sm_90a");
  CHECK(Signature::decode().validate());
  // Decode's text did not change when prefill gained alibi (cache v3).
  CHECK(Signature().canonical() ==
        "prefill qk=192 v=128 hq=16 hkv=16 mask=causal window=-1,-1 "
        "softcap=0 alibi=0 lse=1 q=bf16 kv=bf16 out=bf16 layout=varlen tile_q=0 "
        "arch=sm_90a");
}

TEST_CASE("parseSignature inverts a decode canonical", "[signature]") {
  Signature sig = Signature::decode();
  sig.numQHeads = 128;
  sig.qLen = 4;
  sig.pageSize = 1;
  sig.returnLSE = false;
  sig.qType = sig.kvType = sig.outType = DType::FP16;
  sig.batchInvariant = true;
  sig.tileK = 32;
  for (int tileQ : {0, 16})
    for (Arch arch :
         {Arch::GFX90A, Arch::GFX942, Arch::GFX950, Arch::SM80, Arch::SM90A}) {
      sig.tileQ = tileQ;
      sig.arch = arch;
      Signature parsed;
      REQUIRE(parseSignature(sig.canonical(), parsed));
      CHECK(parsed == sig);
      CHECK(parsed.canonical() == sig.canonical());
    }
}

TEST_CASE("a pinned decode tile_q is in the text only where pinned",
          "[signature]") {
  Signature sig = Signature::decode();
  sig.qLen = 2;
  sig.tileQ = 16;
  CHECK(sig.canonical() ==
        "decode qk=576 v=512 hq=16 q_len=2 page=64 mask=causal lse=1 q=bf16 "
        "kv=bf16 out=bf16 batch_invariant=0 tile_k=0 tile_q=16 arch=sm_90a");
  CHECK(sig.validate());
  sig.tileQ = 0;
  CHECK(sig.canonical().find("tile_q") == std::string::npos);
}

TEST_CASE("a decode text defaults what it leaves out", "[signature]") {
  Signature parsed;
  REQUIRE(parseSignature("decode arch=gfx942 page=1 q_len=2 hq=8 v=512 qk=576",
                         parsed));
  Signature expected = Signature::decode();
  expected.arch = Arch::GFX942;
  expected.pageSize = 1;
  expected.qLen = 2;
  expected.numQHeads = 8;
  CHECK(parsed == expected);
  CHECK(parsed.numKVHeads == 1);
  CHECK(parsed.kvLayout == KVLayout::Paged);
}

TEST_CASE("decode and prefill texts keep to their own fields", "[signature]") {
  const std::string decode = Signature::decode().canonical();
  CHECK(parseError(decode + " hkv=1") ==
        "signature field 'hkv' is not a decode field");
  CHECK(parseError(decode + " window=-1,-1") ==
        "signature field 'window' is not a decode field");
  CHECK(parseError(Signature().canonical() + " q_len=1") ==
        "signature field 'q_len' is not a prefill field");
  CHECK(parseError(Signature().canonical() + " page=64") ==
        "signature field 'page' is not a prefill field");
  CHECK(parseError("decode qk=576 v=512 hq=16 q_len=1 arch=sm_90a") ==
        "signature is missing field 'page'");
  CHECK(parseError("decode qk=576 v=512 hq=16 page=64 arch=sm_90a") ==
        "signature is missing field 'q_len'");
  CHECK_THAT(parseError(decode + " batch_invariant=2"),
             Catch::Contains("'batch_invariant'"));
}

TEST_CASE("validate names the decode field and its rule", "[signature]") {
  Signature sig = Signature::decode();
  sig.numQHeads = 129;
  CHECK(rejection(sig) ==
        "num_q_heads must be in [1, 128] for decode (got 129)");
  sig = Signature::decode();
  sig.qLen = 9;
  CHECK(rejection(sig) == "q_len must be in [1, 8] for decode (1, or the "
                          "tokens of speculative decoding) (got 9)");
  sig.qLen = 0;
  CHECK_THAT(rejection(sig), Catch::StartsWith("q_len must be in [1, 8]"));
  for (int page : {0, 3, 48, 512, -64}) {
    sig = Signature::decode();
    sig.pageSize = page;
    CHECK(rejection(sig) == "page_size must be a power of two in [1, 256] "
                            "(got " +
                                std::to_string(page) + ")");
  }
  sig = Signature::decode();
  sig.headDimV = 512;
  sig.headDimQK = 256;
  CHECK(rejection(sig) ==
        "head_dim_v must be <= head_dim_qk for decode: V is the first "
        "head_dim_v columns of the latent cache (got v=512, qk=256)");
  sig = Signature::decode();
  sig.headDimV = 528;
  CHECK_THAT(rejection(sig), Catch::StartsWith("head_dim_v must be a multiple "
                                               "of 16 in [16, 512]"));
  sig = Signature::decode();
  sig.numKVHeads = 16;
  CHECK_THAT(rejection(sig), Catch::StartsWith("num_kv_heads must be 1 for "
                                               "decode"));
  sig = Signature::decode();
  sig.mask = Mask::None;
  CHECK_THAT(rejection(sig), Catch::StartsWith("mask must be causal for "
                                               "decode"));
  sig = Signature::decode();
  sig.kvLayout = KVLayout::Varlen;
  CHECK(rejection(sig) == "kv_layout must be paged for decode (got varlen)");
  sig = Signature::decode();
  sig.softCap = 30.0f;
  CHECK_THAT(rejection(sig), Catch::StartsWith("window, soft_cap and alibi "
                                               "are prefill fields"));
  sig = Signature::decode();
  sig.alibi = true;
  CHECK_THAT(rejection(sig), Catch::StartsWith("window, soft_cap and alibi "
                                               "are prefill fields"));
  sig = Signature::decode();
  sig.tileQ = 48;
  CHECK(rejection(sig) == "tile_q must be 0 (chosen by the compiler), 16, 32 "
                          "or 64 q rows a block for decode (got 48)");
  sig = Signature::decode();
  sig.tileK = 24;
  CHECK_THAT(rejection(sig), Catch::StartsWith("tile_k must be 0 (chosen by "
                                               "the compiler) or a multiple "
                                               "of 16"));
  sig = Signature::decode();
  sig.qType = DType::FP8E4M3;
  CHECK(rejection(sig) == "q_type fp8e4m3 needs an fp8 cache (kv=fp8e4m3) "
                          "for decode (got kv=bf16)");
  sig = Signature::decode();
  sig.outType = DType::FP8E4M3;
  CHECK(rejection(sig) == "out_type must be bf16 or fp16 for decode (got "
                          "fp8e4m3)");
}

TEST_CASE("an fp8 cache is a valid decode variant", "[signature]") {
  // Whether a template implements it is the compiler's to say.
  Signature sig = Signature::decode();
  sig.kvType = DType::FP8E4M3;
  CHECK(sig.validate());
  // and fp8 q with it (its scale is a run-time argument).
  sig.qType = DType::FP8E4M3;
  CHECK(sig.validate());
  Signature parsed;
  REQUIRE(parseSignature(sig.canonical(), parsed));
  CHECK(parsed == sig);
}

TEST_CASE("a prefill signature leaves the decode fields alone", "[signature]") {
  Signature sig;
  sig.qLen = 1;
  CHECK(rejection(sig) == "q_len, page_size, batch_invariant and tile_k are "
                          "decode fields: a prefill signature leaves them 0");
  sig = Signature();
  sig.batchInvariant = true;
  CHECK_THAT(rejection(sig), Catch::StartsWith("q_len, page_size"));
  sig = Signature();
  sig.kvLayout = KVLayout::Paged;
  CHECK(rejection(sig, StatusCode::Unsupported) ==
        "paged prefill is not supported yet (kv_layout=paged)");
  Signature parsed;
  REQUIRE(parseSignature("prefill qk=192 v=128 hq=16 hkv=16 mask=causal "
                         "layout=paged arch=sm_90a",
                         parsed));
  CHECK(parsed == sig);
}

TEST_CASE("decode signatures differ by each decode field", "[signature]") {
  const Signature base = Signature::decode();
  Signature other = base;
  other.qLen = 2;
  CHECK_FALSE(other == base);
  CHECK(other.canonical() != base.canonical());
  other = base;
  other.batchInvariant = true;
  CHECK(other.canonical() != base.canonical());
  other = base;
  other.pageSize = 1;
  CHECK(other.canonical() != base.canonical());
  other = base;
  other.tileK = 32;
  CHECK(other.canonical() != base.canonical());
}
