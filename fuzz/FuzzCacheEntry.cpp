//===- FuzzCacheEntry.cpp - disk cache entries: decode, re-encode ---------===//
//
// A cache directory is shared by processes and survives crashes and other
// versions: decodeCacheEntry sees arbitrary bytes. Whatever it accepts must
// re-encode to the same bytes (the checksum covers all of them).
//
//===----------------------------------------------------------------------===//

#include "CacheEntry.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlagen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  CodeObject code;
  std::string signature, why;
  if (!decodeCacheEntry(bytes, code, signature, why))
    return 0;
  if (encodeCacheEntry(code, signature) != bytes)
    std::abort();
  return 0;
}
