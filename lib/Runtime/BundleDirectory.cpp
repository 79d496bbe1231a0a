//===- BundleDirectory.cpp - PrebuiltKernels over a bundle directory ------===//

#include "BundleManifest.h"
#include "Hash.h"
#include "Log.h"
#include "mlagen/Runtime/PrebuiltKernels.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace mlagen {
namespace {

using WarningSink = std::function<void(const std::string &)>;

// Reads a regular file of at most `limit` bytes; "" or why not.
std::string readRegularFile(const std::string &path, uint64_t limit,
                            std::string &bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::strerror(errno);
  struct stat info;
  std::string why;
  if (fstat(fd, &info) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    why = "not a regular file";
  } else if (static_cast<uint64_t>(info.st_size) > limit) {
    why = std::to_string(info.st_size) + " bytes, more than " +
          std::to_string(limit);
  } else {
    bytes.resize(static_cast<size_t>(info.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        why = n < 0 ? std::strerror(errno) : "shorter than its size";
        break;
      }
      done += static_cast<size_t>(n);
    }
  }
  close(fd);
  return why;
}

class BundleDirectory final : public PrebuiltKernels {
public:
  BundleDirectory(std::string dir, BundleManifest manifest, WarningSink warn)
      : dir_(std::move(dir)), manifest_(std::move(manifest)),
        warn_(std::move(warn)) {}

  // Indexes the kernels by canonical signature; a second kernel for one
  // signature is an error (which would the runtime take?).
  Status index() {
    for (size_t i = 0; i < manifest_.kernels.size(); ++i) {
      const BundleKernelRecord &kernel = manifest_.kernels[i];
      if (!byKey_.emplace(kernel.signature.canonical(), i).second)
        return Status(StatusCode::InvalidArgument,
                      "kernels[" + std::to_string(i) + "]: a second kernel "
                      "for '" + kernel.signature.canonical() + "'");
      if (std::find(archs_.begin(), archs_.end(), kernel.code.arch) ==
          archs_.end())
        archs_.push_back(kernel.code.arch);
    }
    return Status::ok();
  }

  bool find(const Signature &sig, CodeObject &out) const override {
    auto it = byKey_.find(sig.canonical());
    if (it == byKey_.end()) {
      MLAGEN_LOG(Debug, description() + " has no '" + sig.canonical() + "'");
      return false;
    }
    const BundleKernelRecord &kernel = manifest_.kernels[it->second];
    std::string path = dir_ + "/" + kernel.file, bytes;
    std::string why = readRegularFile(path, kernel.size, bytes);
    if (why.empty() && bytes.size() != kernel.size)
      why = "size " + std::to_string(bytes.size()) + ", manifest says " +
            std::to_string(kernel.size);
    if (why.empty() && hash128(bytes).hex() != kernel.checksum)
      why = "checksum differs from the manifest's";
    if (!why.empty()) {
      warnOnce(path, description() + ": " + path + " is damaged (" + why +
                         "); not using it");
      return false;
    }
    out = kernel.code;
    out.binary = std::move(bytes);
    return true;
  }

  std::string description() const override { return "bundle " + dir_; }
  std::vector<Arch> archs() const override { return archs_; }

private:
  void warnOnce(const std::string &key, const std::string &message) const {
    {
      std::lock_guard<std::mutex> lock(warnedMutex_);
      if (!warned_.insert(key).second)
        return;
    }
    warn_(message);
  }

  std::string dir_;
  BundleManifest manifest_;
  WarningSink warn_;
  std::unordered_map<std::string, size_t> byKey_;
  std::vector<Arch> archs_;
  mutable std::mutex warnedMutex_;
  mutable std::set<std::string> warned_;
};

} // namespace

Status openBundle(const std::string &dir, WarningSink onWarning,
                  std::shared_ptr<const PrebuiltKernels> &out) {
  if (!onWarning)
    onWarning = [](const std::string &message) {
      if (logEnabled(LogLevel::Warn))
        logMessage(LogLevel::Warn, message);
    };
  std::string path = dir + "/manifest.json", text;
  // A manifest of thousands of kernels is well under this.
  if (std::string why = readRegularFile(path, 64u << 20, text); !why.empty())
    return Status(StatusCode::InvalidArgument,
                  "bundle " + dir + ": cannot read " + path + ": " + why);
  BundleManifest manifest;
  if (Status status = decodeBundleManifest(text, manifest); !status)
    return Status(status.code(), "bundle " + dir + ": " + path + ": " +
                                     status.message());
  auto bundle = std::make_shared<BundleDirectory>(dir, std::move(manifest),
                                                  std::move(onWarning));
  if (Status status = bundle->index(); !status)
    return Status(status.code(), "bundle " + dir + ": " + path + ": " +
                                     status.message());
  out = std::move(bundle);
  return Status::ok();
}

} // namespace mlagen
