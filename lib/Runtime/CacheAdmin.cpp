//===- CacheAdmin.cpp - inspect and maintain the disk cache ---------------===//

#include "mlagen/Runtime/CacheAdmin.h"
#include "CacheEntry.h"
#include "DiskCache.h"
#include "Hash.h"
#include "Process.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace fs = std::filesystem;

namespace mlagen {
namespace {

// A temp file this old is abandoned even if a process with its writer's pid
// exists (pids are reused; another host may share the directory).
constexpr int64_t kTempFileLifetimeSeconds = 3600;

bool isCacheKey(const std::string &text) {
  return text.size() == 32 &&
         text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

int64_t modificationTime(const struct stat &info) {
  return static_cast<int64_t>(info.st_mtim.tv_sec);
}

// "<name>.tmp.<pid>.<n>", as DiskCache::publish names its temp files: stale
// when the writer is gone (or the file is old). Publishing takes
// milliseconds, so a live writer's file is never old.
bool isStaleTempFile(const std::string &name, const struct stat &info) {
  size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string::npos)
    return false;
  if (std::time(nullptr) - modificationTime(info) > kTempFileLifetimeSeconds)
    return true;
  long pid = std::strtol(name.c_str() + tmp + 5, nullptr, 10);
  return pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// True when no process holds the flock of `path`. Holding it while the
// file is unlinked is what makes removal safe (DiskCache::lockKey).
bool removeLockIfFree(const std::string &path, bool remove) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool free = flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (free && remove)
    unlink(path.c_str());
  close(fd);
  return free;
}

void checkEntry(CachedKernelInfo &entry) {
  std::string bytes, why;
  if (Status status = readFile(entry.path, bytes); !status) {
    entry.problem = status.message();
    return;
  }
  CodeObject code;
  if (!decodeCacheEntry(bytes, code, entry.signature, why)) {
    entry.problem = why;
    return;
  }
  entry.arch = code.arch;
  entry.generator = code.generatorIdentity;
  entry.compiler = code.compilerIdentity;
  entry.compilerFlags = code.compilerFlags;
  Signature sig;
  if (Status status = parseSignature(entry.signature, sig); !status) {
    entry.problem = "unreadable signature: " + status.message();
    return;
  }
  if (sig.arch != code.arch) {
    entry.problem = std::string("arch ") + archName(code.arch) +
                    " is not its signature's";
    return;
  }
  if (computeCacheKey(sig, code.generatorIdentity, code.compilerIdentity,
                      code.compilerFlags) != entry.key) {
    entry.problem = "its key is not the hash of what built it";
    return;
  }
  entry.intact = true;
}

// The entry key an index file names, or "" when it names none.
std::string indexedKey(const std::string &path) {
  std::string text;
  if (!readFile(path, text))
    return "";
  nlohmann::json index = nlohmann::json::parse(text, nullptr, false);
  if (!index.is_object() || !index.contains("key") ||
      !index["key"].is_string())
    return "";
  std::string key = index["key"].get<std::string>();
  return isCacheKey(key) ? key : "";
}

// Index files whose entry is not among `intact` keys.
void findStaleIndexFiles(const std::string &directory,
                         const std::vector<std::string> &intactKeys,
                         std::vector<std::string> &stale) {
  std::error_code error;
  for (const auto &file : fs::directory_iterator(directory + "/index", error)) {
    std::string path = file.path().string();
    if (file.path().extension() != ".json")
      continue;
    std::string key = indexedKey(path);
    if (!std::binary_search(intactKeys.begin(), intactKeys.end(), key))
      stale.push_back(path);
  }
}

Status removeFile(const std::string &path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT)
    return Status(StatusCode::CacheError, "cannot remove " + path + ": " +
                                              std::strerror(errno));
  return Status::ok();
}

} // namespace

std::string resolveCacheRoot(const std::string &override) {
  return DiskCache::resolveRoot(override);
}

Status scanCache(const std::string &root, CacheScan &out) {
  out = CacheScan();
  if (root.empty())
    return Status(StatusCode::CacheError,
                  "no cache directory: set MLAGEN_CACHE_DIR, XDG_CACHE_HOME "
                  "or HOME, or name one");
  out.directory = DiskCache(root, nullptr).directory();
  std::error_code error;
  if (!fs::exists(out.directory, error))
    return Status::ok(); // nothing cached yet
  fs::directory_iterator files(out.directory, error);
  if (error)
    return Status(StatusCode::CacheError,
                  "cannot read " + out.directory + ": " + error.message());

  std::vector<std::string> intactKeys;
  for (const auto &file : files) {
    std::string path = file.path().string(), name = file.path().filename();
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
      continue;
    if (isStaleTempFile(name, info)) {
      out.staleFiles.push_back(path);
    } else if (file.path().extension() == ".lock") {
      if (removeLockIfFree(path, /*remove=*/false))
        out.staleFiles.push_back(path);
    } else if (file.path().extension() == ".entry" &&
               isCacheKey(file.path().stem())) {
      CachedKernelInfo entry;
      entry.key = file.path().stem();
      entry.path = path;
      entry.sizeBytes = static_cast<uint64_t>(info.st_size);
      entry.lastUse = modificationTime(info);
      checkEntry(entry);
      // Removed by a concurrent prune since it was listed: gone, not corrupt.
      if (!entry.intact && !fs::exists(path, error))
        continue;
      if (entry.intact)
        intactKeys.push_back(entry.key);
      out.entryBytes += entry.sizeBytes;
      out.entries.push_back(std::move(entry));
    }
  }
  // The index has temp files of its own.
  for (const auto &file :
       fs::directory_iterator(out.directory + "/index", error)) {
    struct stat info;
    std::string path = file.path().string();
    if (lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        isStaleTempFile(file.path().filename(), info))
      out.staleFiles.push_back(path);
  }
  std::sort(intactKeys.begin(), intactKeys.end());
  findStaleIndexFiles(out.directory, intactKeys, out.staleFiles);
  std::sort(out.entries.begin(), out.entries.end(),
            [](const CachedKernelInfo &a, const CachedKernelInfo &b) {
              return std::tie(a.lastUse, a.key) < std::tie(b.lastUse, b.key);
            });
  std::sort(out.staleFiles.begin(), out.staleFiles.end());
  return Status::ok();
}

Status cleanCache(const std::string &root, const CacheCleanOptions &options,
                  CacheCleanReport &out) {
  out = CacheCleanReport();
  CacheScan scan;
  if (Status status = scanCache(root, scan); !status)
    return status;
  Status firstError;
  auto remember = [&](Status status) {
    if (!status && firstError.isOk())
      firstError = std::move(status);
    return status.isOk();
  };

  uint64_t left = scan.entryBytes;
  auto removeEntry = [&](const CachedKernelInfo &entry) {
    if (remember(removeFile(entry.path))) {
      out.removedEntries.push_back(entry.path);
      out.bytesFreed += entry.sizeBytes;
      left -= entry.sizeBytes;
    }
  };
  if (options.removeCorrupt)
    for (const CachedKernelInfo &entry : scan.entries)
      if (!entry.intact)
        removeEntry(entry);
  if (options.maxBytes)
    for (const CachedKernelInfo &entry : scan.entries) // oldest first
      if (entry.intact && left > *options.maxBytes)
        removeEntry(entry);

  if (options.removeStale) {
    for (const std::string &path : scan.staleFiles) {
      bool removed = fs::path(path).extension() == ".lock"
                         ? removeLockIfFree(path, /*remove=*/true)
                         : remember(removeFile(path));
      if (removed)
        out.removedFiles.push_back(path);
    }
    // Index files of the entries just removed.
    if (!out.removedEntries.empty()) {
      std::vector<std::string> intactKeys, staleIndex;
      for (const CachedKernelInfo &entry : scan.entries)
        if (entry.intact && std::find(out.removedEntries.begin(),
                                      out.removedEntries.end(),
                                      entry.path) == out.removedEntries.end())
          intactKeys.push_back(entry.key);
      std::sort(intactKeys.begin(), intactKeys.end());
      findStaleIndexFiles(scan.directory, intactKeys, staleIndex);
      for (const std::string &path : staleIndex)
        if (std::find(out.removedFiles.begin(), out.removedFiles.end(),
                      path) == out.removedFiles.end() &&
            remember(removeFile(path)))
          out.removedFiles.push_back(path);
    }
  }
  out.entryBytesLeft = left;
  return firstError;
}

} // namespace mlagen
