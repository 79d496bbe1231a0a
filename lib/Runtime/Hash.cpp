//===- Hash.cpp - XXH3-128 for cache keys and entry checksums -------------===//

#include "Hash.h"

// Header-only xxHash: the runtime needs no libxxhash.so where it runs.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace mlagen {

std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    uint64_t word = i < 8 ? high : low;
    unsigned byte = (word >> (8 * (7 - i % 8))) & 0xff;
    out[2 * i] = digits[byte >> 4];
    out[2 * i + 1] = digits[byte & 15];
  }
  return out;
}

Hasher::Hasher() : state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t *>(state_));
}

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t *>(state_)); }

void Hasher::update(const void *data, size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t *>(state_), data, size);
}

Hash128 Hasher::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t *>(state_));
  return {h.low64, h.high64};
}

Hash128 hash128(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.low64, h.high64};
}

namespace {

// Length-prefixed fields: no choice of identity strings can make two
// different inputs hash the same byte sequence.
void addField(Hasher &hasher, std::string_view field) {
  std::string prefix = std::to_string(field.size()) + ":";
  hasher.update(prefix);
  hasher.update(field);
}

} // namespace

std::string computeCacheKey(const Signature &sig,
                            std::string_view generatorIdentity,
                            std::string_view compilerIdentity,
                            std::string_view compilerFlags,
                            unsigned formatVersion) {
  Hasher hasher;
  addField(hasher, "mlagen-kernel v" + std::to_string(formatVersion));
  addField(hasher, sig.canonical());
  addField(hasher, generatorIdentity);
  addField(hasher, compilerIdentity);
  addField(hasher, compilerFlags);
  return hasher.digest().hex();
}

std::string computeSignatureKey(const Signature &sig, unsigned formatVersion) {
  Hasher hasher;
  addField(hasher, "mlagen-signature v" + std::to_string(formatVersion));
  addField(hasher, sig.canonical());
  return hasher.digest().hex();
}

} // namespace mlagen
