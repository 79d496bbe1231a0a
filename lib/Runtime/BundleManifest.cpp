//===- BundleManifest.cpp - manifest.json of an AOT bundle ----------------===//

#include "BundleManifest.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <limits>

namespace mlagen {
namespace {

using nlohmann::json;

bool isHex128(const std::string &text) {
  return text.size() == 32 &&
         text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return true;
}

// A file name that stays inside the bundle directory.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name[0] != '.' &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

// Reads the fields of one JSON object, remembering the first fault.
class FieldReader {
public:
  FieldReader(const json &object, std::string where)
      : object_(object), where_(std::move(where)) {}

  bool string(const char *name, std::string &out) {
    const json *value = field(name);
    if (!value)
      return false;
    if (!value->is_string())
      return fail(name, "must be a string");
    out = value->get<std::string>();
    return true;
  }

  bool integer(const char *name, int64_t lo, int64_t hi, int64_t &out) {
    const json *value = field(name);
    if (!value)
      return false;
    if (!value->is_number_integer())
      return fail(name, "must be an integer");
    // Unsigned values above INT64_MAX are out of every range here.
    if (value->is_number_unsigned() &&
        value->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail(name, "is out of range");
    out = value->get<int64_t>();
    if (out < lo || out > hi)
      return fail(name, "must be in [" + std::to_string(lo) + ", " +
                            std::to_string(hi) + "] (got " +
                            std::to_string(out) + ")");
    return true;
  }

  // As integer(), but an absent field reads as `fallback` (a key newer than
  // the format, which older bundles lack).
  bool optionalInteger(const char *name, int64_t lo, int64_t hi,
                       int64_t fallback, int64_t &out) {
    if (!object_.contains(name)) {
      out = fallback;
      return true;
    }
    return integer(name, lo, hi, out);
  }

  bool fail(const std::string &name, const std::string &what) {
    if (error_.empty())
      error_ = where_ + name + " " + what;
    return false;
  }
  const std::string &error() const { return error_; }

private:
  const json *field(const char *name) {
    auto it = object_.find(name);
    if (it == object_.end()) {
      fail(name, "is missing");
      return nullptr;
    }
    return &*it;
  }

  const json &object_;
  std::string where_;
  std::string error_;
};

Status malformed(const std::string &what) {
  return Status(StatusCode::InvalidArgument, what);
}

Status decodeKernel(const json &entry, size_t index, BundleKernelRecord &out) {
  std::string where = "kernels[" + std::to_string(index) + "].";
  if (!entry.is_object())
    return malformed(where.substr(0, where.size() - 1) + " must be an object");
  FieldReader read(entry, where);
  std::string signature, arch;
  int64_t size = 0, threads = 0, shared = 0, tileQ = 0, tileK = 0,
          paddedHeads = 0, clusterParts = 1, blocksPerSM = 0;
  CodeObject &code = out.code;
  bool ok = read.string("signature", signature) &&
            read.string("arch", arch) && read.string("file", out.file) &&
            read.integer("size", 0, std::numeric_limits<int64_t>::max(),
                         size) &&
            read.string("xxh3_128", out.checksum) &&
            read.string("entry", code.entryName) &&
            read.integer("threads_per_block", 1, 1024, threads) &&
            read.integer("shared_bytes", 0, std::numeric_limits<int>::max(),
                         shared) &&
            read.integer("tile_q", 1, 1024, tileQ) &&
            read.integer("tile_k", 0, 1024, tileK) &&
            read.integer("padded_heads", 0, 65535, paddedHeads) &&
            read.integer("cluster_parts", 1, 8, clusterParts) &&
            read.optionalInteger("blocks_per_sm", 0, 32, 0, blocksPerSM) &&
            read.string("cache_key", code.cacheKey) &&
            read.string("generator", code.generatorIdentity) &&
            read.string("compiler", code.compilerIdentity) &&
            read.string("compiler_flags", code.compilerFlags);
  if (!ok)
    return malformed(read.error());
  auto extras = entry.find("extra_entries");
  if (extras == entry.end() || !extras->is_array())
    return malformed(where + "extra_entries must be an array");
  for (size_t e = 0; e < extras->size(); ++e) {
    std::string at = where + "extra_entries[" + std::to_string(e) + "].";
    const json &extra = (*extras)[e];
    if (!extra.is_object())
      return malformed(at.substr(0, at.size() - 1) + " must be an object");
    FieldReader readExtra(extra, at);
    KernelEntry kernelEntry;
    int64_t extraThreads = 0, extraShared = 0, rows = 0;
    if (!readExtra.string("name", kernelEntry.name) ||
        !readExtra.integer("threads_per_block", 1, 1024, extraThreads) ||
        !readExtra.integer("shared_bytes", 0, std::numeric_limits<int>::max(),
                           extraShared) ||
        !readExtra.integer("rows_per_block", 0, 65535, rows))
      return malformed(readExtra.error());
    if (!isIdentifier(kernelEntry.name))
      return malformed(at + "name '" + kernelEntry.name +
                       "' is not an identifier");
    kernelEntry.threadsPerBlock = static_cast<int>(extraThreads);
    kernelEntry.sharedBytes = static_cast<int>(extraShared);
    kernelEntry.rowsPerBlock = static_cast<int>(rows);
    code.extraEntries.push_back(std::move(kernelEntry));
  }
  if (Status status = parseSignature(signature, out.signature); !status)
    return malformed(where + "signature: " + status.message());
  if (Status status = out.signature.validate(); !status)
    return malformed(where + "signature: " + status.message());
  if (!parseArch(arch, code.arch))
    return malformed(where + "arch '" + arch + "' is not a known arch");
  if (code.arch != out.signature.arch)
    return malformed(where + "arch " + arch + " is not the signature's " +
                     archName(out.signature.arch));
  if (!isPlainFileName(out.file))
    return malformed(where + "file '" + out.file +
                     "' must name a file in the bundle directory");
  if (!isHex128(out.checksum))
    return malformed(where + "xxh3_128 must be 32 lowercase hex digits");
  if (!isHex128(code.cacheKey))
    return malformed(where + "cache_key must be 32 lowercase hex digits");
  if (!isIdentifier(code.entryName))
    return malformed(where + "entry '" + code.entryName +
                     "' is not an identifier");
  if (out.signature.tileQ != 0 && tileQ != out.signature.tileQ)
    return malformed(where + "tile_q " + std::to_string(tileQ) +
                     " differs from the signature's pinned tile_q");
  out.size = static_cast<uint64_t>(size);
  code.threadsPerBlock = static_cast<int>(threads);
  code.sharedBytes = static_cast<int>(shared);
  code.tileQ = static_cast<int>(tileQ);
  code.tileK = static_cast<int>(tileK);
  code.paddedHeads = static_cast<int>(paddedHeads);
  code.clusterParts = static_cast<int>(clusterParts);
  code.blocksPerSM = static_cast<int>(blocksPerSM);
  return Status::ok();
}

} // namespace

std::string bundleProducer() { return "mlagen " MLAGEN_VERSION; }

std::string encodeBundleManifest(const BundleManifest &manifest) {
  json kernels = json::array();
  for (const BundleKernelRecord &kernel : manifest.kernels) {
    const CodeObject &code = kernel.code;
    json extras = json::array();
    for (const KernelEntry &entry : code.extraEntries)
      extras.push_back({{"name", entry.name},
                        {"threads_per_block", entry.threadsPerBlock},
                        {"shared_bytes", entry.sharedBytes},
                        {"rows_per_block", entry.rowsPerBlock}});
    kernels.push_back({{"signature", kernel.signature.canonical()},
                       {"arch", archName(code.arch)},
                       {"file", kernel.file},
                       {"size", kernel.size},
                       {"xxh3_128", kernel.checksum},
                       {"entry", code.entryName},
                       {"threads_per_block", code.threadsPerBlock},
                       {"shared_bytes", code.sharedBytes},
                       {"tile_q", code.tileQ},
                       {"tile_k", code.tileK},
                       {"padded_heads", code.paddedHeads},
                       {"cluster_parts", code.clusterParts},
                       {"blocks_per_sm", code.blocksPerSM},
                       {"extra_entries", extras},
                       {"cache_key", code.cacheKey},
                       {"generator", code.generatorIdentity},
                       {"compiler", code.compilerIdentity},
                       {"compiler_flags", code.compilerFlags}});
  }
  json root = {{"format", manifest.format},
               {"producer", manifest.producer},
               {"kernels", kernels}};
  // Identities come from compilers: replace, never throw, on bad UTF-8.
  return root.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Status decodeBundleManifest(std::string_view text, BundleManifest &out) {
  json root = json::parse(text.begin(), text.end(), nullptr,
                          /*allow_exceptions=*/false);
  if (root.is_discarded())
    return malformed("not valid JSON");
  if (!root.is_object())
    return malformed("the top level must be an object");
  FieldReader read(root, "");
  int64_t format = 0;
  if (!read.integer("format", 0, std::numeric_limits<int>::max(), format))
    return malformed(read.error());
  if (format != kBundleFormatVersion)
    return Status(StatusCode::Unsupported,
                  "manifest format " + std::to_string(format) +
                      ", this runtime reads format " +
                      std::to_string(kBundleFormatVersion) +
                      " (rebuild the bundle with this mlagen)");
  BundleManifest manifest;
  manifest.format = static_cast<int>(format);
  if (!read.string("producer", manifest.producer))
    return malformed(read.error());
  auto kernels = root.find("kernels");
  if (kernels == root.end() || !kernels->is_array())
    return malformed("kernels must be an array");
  for (size_t i = 0; i < kernels->size(); ++i) {
    BundleKernelRecord record;
    if (Status status = decodeKernel((*kernels)[i], i, record); !status)
      return status;
    manifest.kernels.push_back(std::move(record));
  }
  out = std::move(manifest);
  return Status::ok();
}

} // namespace mlagen
