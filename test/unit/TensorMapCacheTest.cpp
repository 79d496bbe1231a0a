//===- TensorMapCacheTest.cpp - encoded tensor maps by request -----------===//

#include "CatchStatus.h"
#include "MemorylessBackend.h"
#include "TensorMapCache.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

using namespace mlagen;

namespace {

// Encodes a map as its request's base address and first size, repeated,
// and counts the encodings; a null base fails as a driver would.
class EncodingBackend final : public test::MemorylessBackend {
public:
  BackendKind kind() const override { return BackendKind::CUDA; }
  Arch arch() const override { return Arch::SM90A; }
  std::string description() const override { return "fake tensor maps"; }
  Status load(const CodeObject &, DeviceFunction &) override {
    return Status(StatusCode::Unsupported, "no loads");
  }
  void unload(DeviceFunction &) override {}
  Status launch(const DeviceFunction &, const LaunchGeometry &, void *,
                void **) override {
    return Status(StatusCode::Unsupported, "no launches");
  }
  Status encodeTensorMap(const TensorMapRequest &request,
                         void *map) const override {
    ++encodings;
    if (!request.base)
      return Status(StatusCode::DriverError, "null base");
    unsigned long long words[16];
    for (int i = 0; i < 16; ++i)
      words[i] = i % 2 ? request.sizes[0]
                       : reinterpret_cast<unsigned long long>(request.base);
    std::memcpy(map, words, sizeof(words));
    return Status::ok();
  }
  mutable std::atomic<int> encodings{0};
};

TensorMapRequest requestAt(unsigned long long base) {
  TensorMapRequest r;
  r.base = reinterpret_cast<const void *>(base);
  r.sizes[0] = 576;
  r.sizes[1] = 64;
  r.sizes[2] = 1000;
  r.strides[0] = 1152;
  r.strides[1] = 64 * 1152;
  r.box[0] = r.box[1] = 64;
  r.box[2] = 1;
  return r;
}

unsigned long long firstWord(const unsigned char *map) {
  unsigned long long word;
  std::memcpy(&word, map, sizeof(word));
  return word;
}

} // namespace

TEST_CASE("a tensor map is encoded once per request", "[tensor-map]") {
  EncodingBackend backend;
  TensorMapCache cache;
  alignas(64) unsigned char map[128] = {};
  REQUIRE(cache.get(backend, requestAt(0x1000), map));
  CHECK(firstWord(map) == 0x1000);
  std::memset(map, 0, sizeof(map));
  REQUIRE(cache.get(backend, requestAt(0x1000), map));
  CHECK(firstWord(map) == 0x1000); // the remembered bytes
  CHECK(backend.encodings == 1);

  // Any field of the request makes another map.
  TensorMapRequest morePages = requestAt(0x1000);
  morePages.sizes[2] = 2000;
  TensorMapRequest otherStride = requestAt(0x1000);
  otherStride.strides[0] = 1280;
  TensorMapRequest otherBox = requestAt(0x1000);
  otherBox.box[1] = 32;
  for (const TensorMapRequest &r :
       {requestAt(0x2000), morePages, otherStride, otherBox})
    REQUIRE(cache.get(backend, r, map));
  CHECK(backend.encodings == 5);
  CHECK(cache.size() == 5);
  CHECK(firstWord(map) == 0x1000);
}

TEST_CASE("a failed encoding is reported and not remembered",
          "[tensor-map]") {
  EncodingBackend backend;
  TensorMapCache cache;
  alignas(64) unsigned char map[128] = {};
  Status status = cache.get(backend, requestAt(0), map);
  CHECK(status.code() == StatusCode::DriverError);
  CHECK(cache.get(backend, requestAt(0), map).code() ==
        StatusCode::DriverError);
  CHECK(backend.encodings == 2);
  CHECK(cache.size() == 0);
}

TEST_CASE("the tensor map table forgets everything when full",
          "[tensor-map]") {
  EncodingBackend backend;
  TensorMapCache cache;
  alignas(64) unsigned char map[128];
  for (size_t i = 0; i < TensorMapCache::kCapacity; ++i)
    REQUIRE(cache.get(backend, requestAt(0x1000 + 0x100 * i), map));
  CHECK(cache.size() == TensorMapCache::kCapacity);
  REQUIRE(cache.get(backend, requestAt(0x10), map));
  CHECK(cache.size() == 1);
  REQUIRE(cache.get(backend, requestAt(0x1000), map)); // encoded again
  CHECK(firstWord(map) == 0x1000);
  CHECK(backend.encodings == int(TensorMapCache::kCapacity) + 2);
}

TEST_CASE("threads share the tensor map table", "[tensor-map]") {
  EncodingBackend backend;
  TensorMapCache cache;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      alignas(64) unsigned char map[128];
      for (int i = 0; i < 2000; ++i) {
        const unsigned long long base = 0x1000 + 0x100 * ((i + t) % 8);
        if (!cache.get(backend, requestAt(base), map) ||
            firstWord(map) != base)
          ++wrong;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  CHECK(wrong == 0);
  CHECK(cache.size() == 8);
  CHECK(backend.encodings <= 8 * 4); // at most one per thread per request
}
