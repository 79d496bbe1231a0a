//===- TensorMapCache.h - encoded tensor maps by request --------*- C++ -*-===//
//
// A decode step of the 64-row sm_90a kernel passes a tensor map of the
// cache in its parameter block, the sm_90a prefill maps of k and v.
// Encoding one (cuTensorMapEncodeTiled) is host work repeated on every
// launch for the same few tensors (an engine has one cache per layer), so
// the runtime keeps the maps it encoded, by request.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H
#define MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H

#include "DecodeParams.h"
#include "PrefillParams.h"
#include "DeviceBackend.h"

#include <array>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace mlagen {

class TensorMapCache {
public:
  // A map fills a parameter block's kv_map, k_map or v_map (a CUtensorMap).
  static constexpr size_t kMapBytes = sizeof(DecodeParams::kv_map);
  static_assert(sizeof(PrefillParams::k_map) == kMapBytes &&
                    sizeof(PrefillParams::v_map) == kMapBytes,
                "every tensor map field is one CUtensorMap");
  // Beyond this many distinct requests (caches reallocated again and again)
  // the cache starts over rather than grow without bound.
  static constexpr size_t kMaxEntries = 1024;

  // Copies the map for `request` into `map` (kMapBytes), encoding it with
  // `encode` on a miss; a failed encode is returned and not remembered.
  template <class Encode>
  Status get(const TensorMapRequest &request, void *map, Encode &&encode) {
    const Key key = keyOf(request);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = maps_.find(key);
      if (it != maps_.end()) {
        std::memcpy(map, it->second.data(), kMapBytes);
        return Status::ok();
      }
    }
    if (Status status = encode(request, map); !status)
      return status;
    std::lock_guard<std::mutex> lock(mutex_);
    if (maps_.size() >= kMaxEntries)
      maps_.clear();
    std::memcpy(maps_[key].data(), map, kMapBytes);
    return Status::ok();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return maps_.size();
  }

private:
  // Every field of the request, as words: equal keys, equal maps.
  using Key = std::array<unsigned long long, 9>;
  struct KeyHash {
    size_t operator()(const Key &key) const {
      size_t h = 0;
      for (unsigned long long word : key)
        h = h * 1000003u ^ std::hash<unsigned long long>()(word);
      return h;
    }
  };
  static Key keyOf(const TensorMapRequest &r) {
    return {reinterpret_cast<unsigned long long>(r.base),
            r.sizes[0],
            r.sizes[1],
            r.sizes[2],
            r.strides[0],
            r.strides[1],
            r.box[0],
            r.box[1],
            r.box[2]};
  }

  mutable std::mutex mutex_;
  std::unordered_map<Key, std::array<unsigned char, kMapBytes>, KeyHash> maps_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_TENSORMAPCACHE_H
