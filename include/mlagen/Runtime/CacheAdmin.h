//===- CacheAdmin.h - inspect and maintain the disk cache ------*- C++ -*-===//
//
// What `mlagen cache list|verify|prune` does, for tools and servers: list
// the entries of a kernel cache directory with what built them, check each
// against its checksum and key, and evict the least recently used down to
// a size. Safe while Runtimes use the same directory: an entry removed under
// a Runtime is rebuilt, never read half-written, and a build lock is removed
// only while this process holds it.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_RUNTIME_CACHEADMIN_H
#define MLAGEN_RUNTIME_CACHEADMIN_H

#include "mlagen/Runtime/Signature.h"
#include "mlagen/Runtime/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlagen {

// The cache root a Runtime with RuntimeOptions::cacheDir = `override` uses:
// `override`, else $MLAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mlagen, else
// ~/.cache/mlagen. Entries live in its versioned subdirectory.
std::string resolveCacheRoot(const std::string &override = "");

struct CachedKernelInfo {
  std::string key;  // 32 hex digits; the file is <key>.entry
  std::string path;
  uint64_t sizeBytes = 0;
  int64_t lastUse = 0; // seconds since the epoch (a read sets the mtime)
  // Intact: the format, size and checksum are right, and the key is the
  // hash of what the entry says built it. Else `problem` says why not.
  bool intact = false;
  std::string problem;
  // What the entry records (when its bytes could be decoded).
  std::string signature; // canonical text
  Arch arch = Arch::SM90A;
  std::string generator, compiler, compilerFlags;
};

struct CacheScan {
  std::string directory; // <root>/v<format>
  std::vector<CachedKernelInfo> entries; // least recently used first
  uint64_t entryBytes = 0;               // all entries, intact or not
  // Files nobody needs: temp files of writers that died, lock files nobody
  // holds, index files naming an entry that is gone or unreadable.
  std::vector<std::string> staleFiles;
};

// Reads and checks every entry under `root` (see resolveCacheRoot); changes
// nothing, not even a last-use time. A root with no cache yet scans empty.
Status scanCache(const std::string &root, CacheScan &out);

struct CacheCleanOptions {
  bool removeCorrupt = true;
  bool removeStale = true;
  // Then evict intact entries, least recently used first, until the entries
  // take at most this many bytes.
  std::optional<uint64_t> maxBytes;
};

struct CacheCleanReport {
  std::vector<std::string> removedEntries; // corrupt first, then evicted
  std::vector<std::string> removedFiles;   // stale files
  uint64_t bytesFreed = 0;                 // by removed entries
  uint64_t entryBytesLeft = 0;
};

// verify --remove and prune. CacheError names a file that could not be
// removed (after removing what could be).
Status cleanCache(const std::string &root, const CacheCleanOptions &options,
                  CacheCleanReport &out);

} // namespace mlagen

#endif // MLAGEN_RUNTIME_CACHEADMIN_H
