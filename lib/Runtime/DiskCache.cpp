//===- DiskCache.cpp - code objects on disk, shared by processes ----------===//

#include "DiskCache.h"
#include "CacheEntry.h"
#include "Hash.h"
#include "Log.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace mlagen {
namespace {

std::string errorText(int error) { return std::strerror(error); }

// Reads a whole file; returns 0 or the errno that stopped it.
int readWhole(const std::string &path, std::string &bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  bytes.clear();
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      bytes.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      int error = errno;
      close(fd);
      return error;
    }
  }
  close(fd);
  return 0;
}

// Writes all of `bytes` to a new file; returns 0 or the errno.
int writeNew(const std::string &path, const std::string &bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int error = n < 0 ? errno : ENOSPC;
      close(fd);
      return error;
    }
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0 ? 0 : errno;
}

bool isCacheKey(const std::string &text) {
  return text.size() == 32 &&
         text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string homeDirectory() {
  if (const char *home = std::getenv("HOME"); home && *home)
    return home;
  struct passwd entry, *found = nullptr;
  char buffer[4096];
  if (getpwuid_r(getuid(), &entry, buffer, sizeof(buffer), &found) == 0 &&
      found && found->pw_dir)
    return found->pw_dir;
  return "";
}

} // namespace

DiskCache::DiskCache(std::string root, WarningSink warn)
    : warn_(std::move(warn)) {
  if (!root.empty())
    directory_ = root + "/v" + std::to_string(kCacheFormatVersion);
}

std::string DiskCache::resolveRoot(const std::string &override) {
  if (!override.empty())
    return override;
  if (const char *dir = std::getenv("MLAGEN_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/mlagen";
  std::string home = homeDirectory();
  return home.empty() ? "" : home + "/.cache/mlagen";
}

std::string DiskCache::entryPath(const std::string &key) const {
  return directory_ + "/" + key + ".entry";
}

bool DiskCache::load(const std::string &key, const Signature &sig,
                     CodeObject &out) {
  if (directory_.empty())
    return false;
  std::string path = entryPath(key), bytes, why, signature;
  if (int error = readWhole(path, bytes)) {
    if (error != ENOENT && error != ENOTDIR) // absent, not damaged
      warnCorrupt(path, errorText(error));
    return false;
  }
  if (!decodeCacheEntry(bytes, out, signature, why)) {
    warnCorrupt(path, why);
    return false;
  }
  // The key hashes the signature, so another one here means a damaged or
  // misplaced file, not a collision.
  if (signature != sig.canonical() || out.arch != sig.arch) {
    warnCorrupt(path, "built for '" + signature + "'");
    return false;
  }
  out.cacheKey = key;
  // mtime records the last use, for `mlagen cache prune`; best effort (a
  // read-only cache keeps its times).
  const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  utimensat(AT_FDCWD, path.c_str(), times, 0);
  return true;
}

bool DiskCache::loadBySignature(const Signature &sig, CodeObject &out) {
  if (directory_.empty())
    return false;
  std::string path =
      directory_ + "/index/" + computeSignatureKey(sig) + ".json", text;
  if (readWhole(path, text) != 0)
    return false;
  // No exceptions: a damaged index is a miss, not a failure.
  nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
  if (!index.is_object() || !index.contains("key") ||
      !index.contains("signature") || !index["key"].is_string() ||
      index["signature"] != sig.canonical())
    return false;
  std::string key = index["key"].get<std::string>();
  return isCacheKey(key) && load(key, sig, out);
}

void DiskCache::store(const std::string &key, const Signature &sig,
                      const CodeObject &code) {
  if (!writable())
    return;
  if (!ensureDirectory(directory_ + "/index") ||
      !publish(entryPath(key), encodeCacheEntry(code, sig.canonical())))
    return;
  nlohmann::json index = {{"signature", sig.canonical()},
                          {"key", key},
                          {"generator", code.generatorIdentity},
                          {"compiler", code.compilerIdentity},
                          {"flags", code.compilerFlags}};
  publish(directory_ + "/index/" + computeSignatureKey(sig) + ".json",
          index.dump(2, ' ', false,
                     nlohmann::json::error_handler_t::replace) +
              "\n");
}

DiskCache::KeyLock DiskCache::lockKey(const std::string &key) {
  if (!writable() || !ensureDirectory(directory_))
    return KeyLock();
  std::string path = directory_ + "/" + key + ".lock";
  for (;;) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      disableWrites("cannot create " + path + ": " + errorText(errno));
      return KeyLock();
    }
    // flock, not fcntl locks: they belong to the open file, so two Runtimes
    // in one process exclude each other too, and the kernel drops them when
    // the holder exits or crashes. If the file system refuses locks, build
    // unlocked: the atomic publish keeps the entry whole either way.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      MLAGEN_LOG(Debug, "waiting for another build of cache key " + key);
      while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
          close(fd);
          return KeyLock();
        }
      }
    }
    // A pruner may have removed the file while this process waited (it
    // unlinks only under the lock): then the lock guards nothing, and the
    // next build would lock a new file. Lock that one instead.
    struct stat locked, current;
    if (fstat(fd, &locked) == 0 && stat(path.c_str(), &current) == 0 &&
        locked.st_ino == current.st_ino && locked.st_dev == current.st_dev)
      return KeyLock(fd);
    close(fd);
  }
}

DiskCache::KeyLock::~KeyLock() {
  if (fd_ >= 0)
    close(fd_); // releases the flock
}

bool DiskCache::ensureDirectory(const std::string &path) {
  if (directory_.empty()) {
    disableWrites("no cache directory: set MLAGEN_CACHE_DIR, "
                  "XDG_CACHE_HOME or HOME");
    return false;
  }
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error && !std::filesystem::is_directory(path)) {
    disableWrites("cannot create " + path + ": " + error.message());
    return false;
  }
  return true;
}

bool DiskCache::publish(const std::string &path, const std::string &bytes) {
  // Readers see the old file or the new one, never a partial write: the
  // temp file is in the same directory, so rename is atomic. No fsync: a
  // power cut can leave a short file, which the checksum catches.
  static std::atomic<unsigned> counter{0};
  std::string temp = path + ".tmp." + std::to_string(getpid()) + "." +
                     std::to_string(counter.fetch_add(1));
  int error = writeNew(temp, bytes);
  if (error == 0 && std::rename(temp.c_str(), path.c_str()) != 0)
    error = errno;
  if (error != 0) {
    unlink(temp.c_str());
    disableWrites("cannot write " + path + ": " + errorText(error));
    return false;
  }
  return true;
}

void DiskCache::disableWrites(const std::string &reason) {
  writable_.store(false, std::memory_order_relaxed);
  if (!warnedUnwritable_.exchange(true))
    warn_("disk cache unusable (" + reason +
          "); compiled kernels are kept in memory only");
}

void DiskCache::warnCorrupt(const std::string &path,
                            const std::string &reason) {
  {
    std::lock_guard<std::mutex> lock(corruptMutex_);
    if (!warnedCorrupt_.insert(path).second)
      return;
  }
  warn_("corrupt cache entry " + path + " (" + reason + "); rebuilding it");
}

} // namespace mlagen
