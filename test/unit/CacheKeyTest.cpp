//===- CacheKeyTest.cpp - cache keys and the entry file format ------------===//

#include "CacheEntry.h"
#include "CatchStatus.h"
#include "Hash.h"

using namespace mlagen;

TEST_CASE("a cache key is a stable function of its inputs", "[cache-key]") {
  Signature sig; // prefill qk=192 v=128 ... arch=sm_90a
  const std::string key =
      computeCacheKey(sig, "mlir-generator/templates=abc123", "nvrtc 13.0",
                      "--gpu-architecture=sm_90a -std=c++17 -default-device");
  // A change here invalidates every cache on disk: bump kCacheFormatVersion.
  CHECK(key == "28202f11c142c4dc61d4abb2b5d40d66");
  CHECK(computeSignatureKey(sig) == "50687aa0aa0d40fe54ca0b9176f8edbd");
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
  std::string bytes = encodeCacheEntry(code);
  CHECK(bytes.size() == kCacheEntryHeaderSize + 14 + 7);

  CodeObject decoded;
  std::string why;
  REQUIRE(decodeCacheEntry(bytes, decoded, why));
  CHECK(decoded.arch == code.arch);
  CHECK(decoded.binary == code.binary);
  CHECK(decoded.entryName == code.entryName);
  CHECK(decoded.threadsPerBlock == 256);
  CHECK(decoded.sharedBytes == 99328);
  CHECK(decoded.tileQ == 128);
}

TEST_CASE("a damaged cache entry is detected", "[cache-key]") {
  CodeObject code;
  code.binary = std::string(1000, 'x');
  code.entryName = std::string("k");
  code.threadsPerBlock = 128;
  code.tileQ = 64;
  const std::string good = encodeCacheEntry(code);
  CodeObject decoded;
  std::string why;

  std::string truncated = good.substr(0, good.size() - 1);
  CHECK_FALSE(decodeCacheEntry(truncated, decoded, why));
  CHECK_THAT(why, Catch::StartsWith("size mismatch"));
  CHECK_FALSE(decodeCacheEntry(good.substr(0, 10), decoded, why));
  CHECK_THAT(why, Catch::StartsWith("truncated header"));

  std::string badMagic = good;
  badMagic[0] = 'X';
  CHECK_FALSE(decodeCacheEntry(badMagic, decoded, why));
  CHECK(why == "bad magic");

  for (size_t offset : {size_t(44), size_t(70), good.size() - 1}) {
    std::string flipped = good;
    flipped[offset] ^= 0x10;
    CHECK_FALSE(decodeCacheEntry(flipped, decoded, why));
    CHECK(why == "bad checksum");
  }
}
