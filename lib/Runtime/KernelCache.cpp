//===- KernelCache.cpp - the in-memory cache, one slot per signature ------===//

#include "KernelCache.h"

#include <bit>
#include <cstdint>

namespace mlagen {

size_t SignatureHash::operator()(const Signature &sig) const {
  // -0 equals 0 (Signature::operator==), so both must hash alike.
  float softCap = sig.softCap == 0.0f ? 0.0f : sig.softCap;
  const uint64_t fields[] = {
      static_cast<uint64_t>(sig.op),         static_cast<uint64_t>(sig.headDimQK),
      static_cast<uint64_t>(sig.headDimV),   static_cast<uint64_t>(sig.numQHeads),
      static_cast<uint64_t>(sig.numKVHeads), static_cast<uint64_t>(sig.mask),
      static_cast<uint64_t>(sig.windowLeft), static_cast<uint64_t>(sig.windowRight),
      std::bit_cast<uint32_t>(softCap),      static_cast<uint64_t>(sig.returnLSE),
      static_cast<uint64_t>(sig.qType),      static_cast<uint64_t>(sig.kvType),
      static_cast<uint64_t>(sig.outType),    static_cast<uint64_t>(sig.kvLayout),
      static_cast<uint64_t>(sig.tileQ),      static_cast<uint64_t>(sig.arch),
      static_cast<uint64_t>(sig.qLen),
      static_cast<uint64_t>(sig.pageSize),
      static_cast<uint64_t>(sig.batchInvariant),
      static_cast<uint64_t>(sig.tileK),
      static_cast<uint64_t>(sig.alibi)};
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a over the fields
  for (uint64_t field : fields)
    hash = (hash ^ field) * 0x100000001b3ull;
  return static_cast<size_t>(hash ^ (hash >> 29));
}

KernelCache::Slot *KernelCache::find(const Signature &sig) const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  auto it = slots_.find(sig);
  return it == slots_.end() ? nullptr : it->second.get();
}

KernelCache::Slot &KernelCache::findOrCreate(const Signature &sig) {
  std::unique_lock<std::shared_mutex> lock(mutex_);
  std::unique_ptr<Slot> &slot = slots_[sig];
  if (!slot)
    slot = std::make_unique<Slot>();
  return *slot;
}

} // namespace mlagen
