//===- CacheKeyTest.cpp - cache keys and the entry file format ------------===//

#include "CacheEntry.h"
#include "CatchStatus.h"
#include "Hash.h"

#include <cstring>

using namespace mlagen;

TEST_CASE("a cache key is a stable function of its inputs", "[cache-key]") {
  Signature sig; // prefill qk=192 v=128 ... arch=sm_90a
  const std::string key =
      computeCacheKey(sig, "mlir-generator/templates=abc123", "nvrtc 13.0",
                      "--gpu-architecture=sm_90a -std=c++17 -default-device");
  // A change here invalidates every cache on disk: bump kCacheFormatVersion.
  CHECK(key == "ca3c2b13e7fa41706516caa614b2424d");
  CHECK(computeSignatureKey(sig) == "2a16a992577fa32a2558a0be1b897154");
  // v3 added alibi= to prefill's canonical text, v4 to paged_decode's, v5
  // clusterParts to the entry, v6 blocksPerSM; the version is keyed too.
  CHECK(computeSignatureKey(sig, 3) != computeSignatureKey(sig));
  CHECK(hash128("").hex() == "99aa06d3014798d86001c324468d497f");
}

TEST_CASE("every key input changes the key", "[cache-key]") {
  Signature sig;
  const std::string base = computeCacheKey(sig, "gen", "compiler", "flags");
  CHECK(base.size() == 32);
  Signature other = sig;
  other.tileQ = 64;
  CHECK(computeCacheKey(other, "gen", "compiler", "flags") != base);
  CHECK(computeCacheKey(sig, "gen2", "compiler", "flags") != base);
  CHECK(computeCacheKey(sig, "gen", "compiler2", "flags") != base);
  CHECK(computeCacheKey(sig, "gen", "compiler", "flags2") != base);
  // Length prefixes keep field boundaries: moving a character between
  // fields is a different key.
  CHECK(computeCacheKey(sig, "genc", "ompiler", "flags") != base);
}

TEST_CASE("a cache entry round-trips", "[cache-key]") {
  CodeObject code;
  code.arch = Arch::GFX942;
  code.binary = std::string("\x7f" "ELF\0\1\2", 7);
  code.entryName = "mlagen_prefill";
  code.threadsPerBlock = 256;
  code.sharedBytes = 99328;
  code.tileQ = 128;
  code.tileK = 64;
  code.paddedHeads = 16;
  code.clusterParts = 2;
  code.blocksPerSM = 4;
  code.extraEntries = {{"mlagen_decode_reduce", 256, 1024, 16}};
  code.generatorIdentity = "gen/1";
  code.compilerIdentity = "clang 22";
  code.compilerFlags = "-O3";
  const std::string signature = "prefill qk=192 v=128 ... arch=gfx942";
  std::string bytes = encodeCacheEntry(code, signature);
  CHECK_THAT(bytes, Catch::Contains(signature) && Catch::Contains("gen/1") &&
                        Catch::Contains("clang 22"));

  CodeObject decoded;
  std::string why, decodedSignature;
  REQUIRE(decodeCacheEntry(bytes, decoded, decodedSignature, why));
  CHECK(decoded.arch == code.arch);
  CHECK(decoded.binary == code.binary);
  CHECK(decoded.entryName == code.entryName);
  CHECK(decoded.threadsPerBlock == 256);
  CHECK(decoded.sharedBytes == 99328);
  CHECK(decoded.tileQ == 128);
  CHECK(decoded.tileK == 64);
  CHECK(decoded.paddedHeads == 16);
  CHECK(decoded.clusterParts == 2);
  CHECK(decoded.blocksPerSM == 4);
  CHECK(decoded.extraEntries == code.extraEntries);
  CHECK(decoded.generatorIdentity == "gen/1");
  CHECK(decoded.compilerIdentity == "clang 22");
  CHECK(decoded.compilerFlags == "-O3");
  CHECK(decodedSignature == signature);
  CHECK(encodeCacheEntry(decoded, decodedSignature) == bytes);
}

TEST_CASE("the format version is in every key and every entry",
          "[cache-key]") {
  Signature sig;
  CHECK(computeCacheKey(sig, "gen", "compiler", "flags") !=
        computeCacheKey(sig, "gen", "compiler", "flags",
                        kCacheFormatVersion + 1));
  CHECK(computeSignatureKey(sig) !=
        computeSignatureKey(sig, kCacheFormatVersion + 1));

  // An entry of another version is refused before its checksum is read.
  CodeObject code;
  code.binary = "code";
  code.entryName = "k";
  std::string bytes = encodeCacheEntry(code, sig.canonical());
  uint32_t version;
  std::memcpy(&version, bytes.data() + 8, sizeof(version));
  CHECK(version == kCacheFormatVersion);
  version += 1;
  std::memcpy(bytes.data() + 8, &version, sizeof(version));
  CodeObject decoded;
  std::string why, signature;
  CHECK_FALSE(decodeCacheEntry(bytes, decoded, signature, why));
  CHECK(why == "format version " + std::to_string(kCacheFormatVersion + 1));
}

TEST_CASE("a damaged cache entry is detected", "[cache-key]") {
  CodeObject code;
  code.binary = std::string(1000, 'x');
  code.entryName = std::string("k");
  code.threadsPerBlock = 128;
  code.tileQ = 64;
  const std::string good = encodeCacheEntry(code, "sig");
  CodeObject decoded;
  std::string why, signature;

  std::string truncated = good.substr(0, good.size() - 1);
  CHECK_FALSE(decodeCacheEntry(truncated, decoded, signature, why));
  CHECK_THAT(why, Catch::StartsWith("size mismatch"));
  CHECK_FALSE(decodeCacheEntry(good.substr(0, 10), decoded, signature, why));
  CHECK_THAT(why, Catch::StartsWith("truncated header"));

  std::string badMagic = good;
  badMagic[0] = 'X';
  CHECK_FALSE(decodeCacheEntry(badMagic, decoded, signature, why));
  CHECK(why == "bad magic");

  for (size_t offset : {size_t(44), size_t(70), good.size() - 1}) {
    std::string flipped = good;
    flipped[offset] ^= 0x10;
    CHECK_FALSE(decodeCacheEntry(flipped, decoded, signature, why));
    CHECK(why == "bad checksum");
  }

  // Intact bytes of an impossible value, as another build might write.
  struct Odd {
    int CodeObject::*field;
    int value;
    const char *why;
  };
  for (const Odd &odd :
       {Odd{&CodeObject::clusterParts, 0, "cluster parts 0 not in [1, 8]"},
        Odd{&CodeObject::clusterParts, 9, "cluster parts 9 not in [1, 8]"},
        Odd{&CodeObject::blocksPerSM, -1, "blocks per SM -1 not in [0, 32]"},
        Odd{&CodeObject::blocksPerSM, 33, "blocks per SM 33 not in [0, 32]"}}) {
    CodeObject bad = code;
    bad.*odd.field = odd.value;
    CHECK_FALSE(decodeCacheEntry(encodeCacheEntry(bad, "sig"), decoded,
                                 signature, why));
    CHECK(why == odd.why);
  }
}
