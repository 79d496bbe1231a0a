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
//       56     4  metadata size
//       60     4  reserved, 0
//       64        entry name, metadata, then the payload (code object)
//
// Metadata, strings as (uint32 size, bytes): the signature's canonical
// text, the generator's identity, the compiler's identity and its flags
// (with them an entry says what it is, `mlagen cache list`, and its key can
// be recomputed, `mlagen cache verify`); then int32 tileK, int32
// paddedHeads, int32 clusterParts (1 to 8), int32 blocksPerSM (0 to 32),
// uint32 count of extra entries
// and each one's name and int32 threadsPerBlock, sharedBytes, rowsPerBlock.
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

// `signature` is the canonical text of the signature `code` was built for;
// code's generator, compiler and flags identities are recorded with it.
std::string encodeCacheEntry(const CodeObject &code,
                             const std::string &signature);

// False with `why` ("bad magic", "size mismatch", "bad checksum", ...) when
// `bytes` is not an intact entry of this format version. Fills every field
// of `out` but cacheKey, and the recorded signature text.
bool decodeCacheEntry(const std::string &bytes, CodeObject &out,
                      std::string &signature, std::string &why);

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_CACHEENTRY_H
