//===- TensorMapCacheTest.cpp - encoded tensor maps by request ------------===//
//
// runDecode encodes a cache's tensor map once per distinct request: the
// second launch over the same cache copies the map it kept.
//
//===----------------------------------------------------------------------===//

#include "CatchStatus.h"
#include "TensorMapCache.h"
#include "TestSupport.h"


#include <cstring>

using namespace mlagen;

namespace {

TensorMapRequest requestAt(unsigned long long address) {
  TensorMapRequest r;
  r.base = reinterpret_cast<const void *>(address);
  r.sizes[0] = 576;
  r.sizes[1] = 64;
  r.sizes[2] = 1ull << 31;
  r.strides[0] = 576 * 2;
  r.strides[1] = 64 * 576 * 2;
  r.box[0] = r.box[1] = 64;
  r.box[2] = 1;
  return r;
}

// Writes the request's base address and a call count into the map.
struct CountingEncoder {
  int calls = 0;
  bool fail = false;
  Status operator()(const TensorMapRequest &request, void *map) {
    ++calls;
    if (fail)
      return Status(StatusCode::DriverError, "encode failed");
    std::memset(map, 0, TensorMapCache::kMapBytes);
    std::memcpy(map, &request.base, sizeof(request.base));
    std::memcpy(static_cast<char *>(map) + 8, &calls, sizeof(calls));
    return Status::ok();
  }
};

const void *baseIn(const unsigned char *map) {
  const void *base;
  std::memcpy(&base, map, sizeof(base));
  return base;
}

} // namespace

TEST_CASE("a tensor map is encoded once per request", "[tensor-map]") {
  TensorMapCache cache;
  CountingEncoder encode;
  auto get = [&](const TensorMapRequest &r, unsigned char *map) {
    return cache.get(r, map, [&](const TensorMapRequest &q, void *m) { return encode(q, m); });
  };
  unsigned char first[128], again[128], other[128];
  const TensorMapRequest a = requestAt(0x10000), b = requestAt(0x20000);
  REQUIRE(get(a, first));
  REQUIRE(get(a, again));
  CHECK(encode.calls == 1);
  CHECK(std::memcmp(first, again, sizeof(first)) == 0);
  REQUIRE(get(b, other));
  CHECK(encode.calls == 2);
  CHECK(baseIn(other) == b.base);
  CHECK(cache.size() == 2);

  SECTION("any field makes another map") {
    TensorMapRequest checked = a;
    checked.sizes[2] = 1000; // a checked launch knows the cache's pages
    REQUIRE(get(checked, other));
    TensorMapRequest padded = a;
    padded.strides[0] = 640 * 2;
    REQUIRE(get(padded, other));
    CHECK(encode.calls == 4);
    REQUIRE(get(a, again));
    CHECK(encode.calls == 4);
    CHECK(std::memcmp(first, again, sizeof(first)) == 0);
  }
  SECTION("a failed encode is not kept") {
    encode.fail = true;
    const TensorMapRequest c = requestAt(0x30000);
    CHECK_FALSE(get(c, other));
    encode.fail = false;
    REQUIRE(get(c, other));
    CHECK(encode.calls == 4);
    CHECK(baseIn(other) == c.base);
  }
  SECTION("it starts over past kMaxEntries") {
    for (size_t i = 0; i < TensorMapCache::kMaxEntries; ++i)
      REQUIRE(get(requestAt(0x100000 + 0x1000 * i), other));
    CHECK(cache.size() <= TensorMapCache::kMaxEntries);
    REQUIRE(get(a, again)); // still right after the reset
    CHECK(baseIn(again) == a.base);
  }
}
