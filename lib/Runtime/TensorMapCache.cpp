//===- TensorMapCache.cpp - encoded tensor maps by request ---------------===//

#include "TensorMapCache.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace mlagen {

bool TensorMapCache::Key::operator==(const Key &other) const {
  const TensorMapRequest &a = request, &b = other.request;
  return a.base == b.base && std::equal(a.sizes, a.sizes + 3, b.sizes) &&
         std::equal(a.strides, a.strides + 2, b.strides) &&
         std::equal(a.box, a.box + 3, b.box);
}

size_t TensorMapCache::KeyHash::operator()(const Key &key) const {
  const TensorMapRequest &r = key.request;
  size_t h = std::hash<const void *>()(r.base);
  auto mix = [&h](unsigned long long v) {
    h ^= std::hash<unsigned long long>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) +
         (h >> 2);
  };
  for (unsigned long long v : r.sizes)
    mix(v);
  for (unsigned long long v : r.strides)
    mix(v);
  for (unsigned v : r.box)
    mix(v);
  return h;
}

Status TensorMapCache::get(const DeviceBackend &backend,
                           const TensorMapRequest &request, void *map) {
  const Key key{request};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = maps_.find(key);
    if (it != maps_.end()) {
      std::memcpy(map, it->second.bytes, kMapBytes);
      return Status::ok();
    }
  }
  // Encoded outside the lock: two threads may both encode the same map,
  // and both results are the same bytes.
  Map encoded;
  if (Status status = backend.encodeTensorMap(request, encoded.bytes); !status)
    return status;
  std::memcpy(map, encoded.bytes, kMapBytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (maps_.size() >= kCapacity)
    maps_.clear();
  maps_.emplace(key, encoded);
  return Status::ok();
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return maps_.size();
}

} // namespace mlagen
