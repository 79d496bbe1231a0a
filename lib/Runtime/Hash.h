//===- Hash.h - XXH3-128 for cache keys and entry checksums ----*- C++ -*-===//
//
// XXH3-128 is fast enough to checksum every code object read from disk and
// wide enough that a key collision is not a practical concern.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_HASH_H
#define MLAGEN_LIB_RUNTIME_HASH_H

#include "mlagen/Runtime/Signature.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace mlagen {

// Bumped whenever the key inputs, the entry file layout or
// Signature::canonical() change; it names the cache subdirectory (v2/).
// v2: entries record their signature, generator, compiler and flags.
// v3: prefill signatures gain alibi=0|1 (and its params alibi_slopes).
// v4: paged_decode signatures gain alibi=0|1 (and its params alibi_slopes).
// v5: entries record clusterParts (decode's in-cluster merging).
// v6: entries record blocksPerSM (the decode planner's blocks an SM).
inline constexpr unsigned kCacheFormatVersion = 6;

struct Hash128 {
  uint64_t low = 0, high = 0;
  bool operator==(const Hash128 &) const = default;
  std::string hex() const; // 32 lowercase hex digits, high word first
};

// Incremental XXH3-128 over a sequence of byte ranges.
class Hasher {
public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher &) = delete;
  Hasher &operator=(const Hasher &) = delete;
  void update(const void *data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  Hash128 digest() const;

private:
  void *state_;
};

Hash128 hash128(std::string_view bytes);

// The key of a compiled kernel: the cache format, the signature, what
// generated the source (templates included) and what compiled it, how.
// (formatVersion is a parameter for tests only.)
std::string computeCacheKey(const Signature &sig,
                            std::string_view generatorIdentity,
                            std::string_view compilerIdentity,
                            std::string_view compilerFlags,
                            unsigned formatVersion = kCacheFormatVersion);

// The key of a signature alone, for lookups without a generator.
std::string computeSignatureKey(const Signature &sig,
                                unsigned formatVersion = kCacheFormatVersion);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_HASH_H
