//===- DiskCache.h - code objects on disk, shared by processes -*- C++ -*-===//
//
// One file per cache key under <root>/v2/: a small checksummed header, the
// entry name, what built it, then the code object (CacheEntry.h). Entries
// are published atomically (temp file in the same directory + rename),
// built once across processes (flock on <key>.lock, released by the kernel
// if the holder dies) and verified on every read: a corrupt entry is
// reported once and rebuilt. A directory that cannot be written (read-only,
// full) degrades to memory-only with one warning; entries already there are
// still read. index/<signature key>.json maps a signature to its newest
// entry, for lookups without a generator. A read sets the entry's mtime, so
// mtime is its last use: `mlagen cache prune` (CacheAdmin.h) evicts by it,
// and removes a lock file only while holding its lock; a locker checks
// after locking that its file is still the one at the path.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_DISKCACHE_H
#define MLAGEN_LIB_RUNTIME_DISKCACHE_H

#include "mlagen/Runtime/Runtime.h"

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>

namespace mlagen {

using WarningSink = std::function<void(const std::string &)>;

class DiskCache {
public:
  // `root` is the directory without its version; see resolveRoot().
  DiskCache(std::string root, WarningSink warn);

  // `override`, else $MLAGEN_CACHE_DIR, else $XDG_CACHE_HOME/mlagen, else
  // $HOME/.cache/mlagen; empty when none can be named.
  static std::string resolveRoot(const std::string &override);

  // <root>/v2
  const std::string &directory() const { return directory_; }

  // Reads entry `key`, built for `sig`. False if absent or corrupt (warned
  // about once).
  bool load(const std::string &key, const Signature &sig, CodeObject &out);
  // Reads the newest entry built for `sig` by any generator and compiler.
  bool loadBySignature(const Signature &sig, CodeObject &out);
  // Publishes `code` as entry `key` and indexes it under its signature. On
  // failure, warns once and stops writing.
  void store(const std::string &key, const Signature &sig,
             const CodeObject &code);

  // Holds the cross-process build lock of one key until destroyed. Holds
  // nothing when the directory is not writable (then only this process's
  // own once-per-key applies).
  class KeyLock {
  public:
    KeyLock() = default;
    explicit KeyLock(int fd) : fd_(fd) {}
    KeyLock(KeyLock &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    KeyLock &operator=(KeyLock &&) = delete;
    ~KeyLock();

  private:
    int fd_ = -1;
  };
  KeyLock lockKey(const std::string &key);

  bool writable() const { return writable_.load(std::memory_order_relaxed); }

private:
  std::string entryPath(const std::string &key) const;
  bool ensureDirectory(const std::string &path);
  bool publish(const std::string &path, const std::string &bytes);
  void disableWrites(const std::string &reason);
  void warnCorrupt(const std::string &path, const std::string &reason);

  std::string directory_;
  WarningSink warn_;
  std::atomic<bool> writable_{true};
  std::atomic<bool> warnedUnwritable_{false};
  std::mutex corruptMutex_;
  std::set<std::string> warnedCorrupt_;
};

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_DISKCACHE_H
