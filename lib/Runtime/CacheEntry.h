//===- CacheEntry.h - the bytes of one disk cache entry --------*- C++ -*-===//
//
//   offset  size  field
//        0     8  magic "MLAGENCO"
//        8     4  format version (kCacheFormatVersion)
//       12     4  arch (Arch enumerator)
//       16     8  payload size
//       24    16  XXH3-128 of every other byte of the file (low, high)
//       40     4  entry name size
//       44    12  threadsPerBlock, sharedBytes, tileQ (int32)
//       56     8  reserved, 0
//       64        entry name, then the payload (the code object)
//
// Little-endian, as every host mlagen runs on.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_CACHEENTRY_H
#define MLAGEN_LIB_RUNTIME_CACHEENTRY_H

#include "mlagen/Runtime/Runtime.h"

#include <string>

namespace mlagen {

inline constexpr size_t kCacheEntryHeaderSize = 64;

std::string encodeCacheEntry(const CodeObject &code);

// False with `why` ("bad magic", "size mismatch", "bad checksum", ...) when
// `bytes` is not an intact entry of this format version.
bool decodeCacheEntry(const std::string &bytes, CodeObject &out,
                      std::string &why);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_CACHEENTRY_H
