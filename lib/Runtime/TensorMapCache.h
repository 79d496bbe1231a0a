//===- TensorMapCache.h - encoded tensor maps by request -------*- C++ -*-===//
//
// Encoding a CUtensorMap costs the host 1.5-2.5 us (H200 host, runDecode
// at 128 heads: 7.1 us a launch against 4.7 without one), a third of the
// 5 us a launch may take. A map is a pure function of its request (an
// address and a layout), so a remembered one is always right, even after
// the memory behind the address is freed and reused. Engines keep one cache
// tensor per layer, so the table holds many; it forgets everything when
// full. Thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H
#define MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H

#include "DeviceBackend.h"

#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace mlagen {

class TensorMapCache {
public:
  static constexpr size_t kMapBytes = 128;
  static constexpr size_t kCapacity = 1024;

  // Writes the map of `request` (kMapBytes at `map`), encoding it through
  // `backend` only the first time; a failed encoding is not remembered.
  Status get(const DeviceBackend &backend, const TensorMapRequest &request,
             void *map);
  size_t size() const;

private:
  struct Key {
    TensorMapRequest request;
    bool operator==(const Key &other) const;
  };
  struct KeyHash {
    size_t operator()(const Key &key) const;
  };
  struct alignas(64) Map { // CUtensorMap's alignment
    unsigned char bytes[kMapBytes];
  };
  mutable std::mutex mutex_;
  std::unordered_map<Key, Map, KeyHash> maps_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H
