//===- CacheEntry.cpp - the bytes of one disk cache entry -----------------===//

#include "CacheEntry.h"
#include "Hash.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace mlagen {

static_assert(std::endian::native == std::endian::little,
              "the cache entry format is little-endian");

namespace {

constexpr char kMagic[8] = {'M', 'L', 'A', 'G', 'E', 'N', 'C', 'O'};
constexpr size_t kChecksumOffset = 24, kChecksumSize = 16;

template <typename T> void put(std::string &bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

template <typename T> T get(const std::string &bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T> void append(std::string &bytes, T value) {
  bytes.append(reinterpret_cast<const char *>(&value), sizeof(T));
}

void appendString(std::string &bytes, const std::string &text) {
  append<uint32_t>(bytes, static_cast<uint32_t>(text.size()));
  bytes += text;
}

// Reads the metadata block front to back; any read past its end fails.
class MetadataReader {
public:
  explicit MetadataReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T> bool take(T &out) {
    if (bytes_.size() - offset_ < sizeof(T))
      return false;
    std::memcpy(&out, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }
  bool takeString(std::string &out) {
    uint32_t size;
    if (!take(size) || bytes_.size() - offset_ < size)
      return false;
    out.assign(bytes_.data() + offset_, size);
    offset_ += size;
    return true;
  }
  bool atEnd() const { return offset_ == bytes_.size(); }

private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

// Covers the whole file but the checksum itself: a flipped bit in the
// launch geometry is as harmful as one in the code.
Hash128 checksum(const std::string &bytes) {
  Hasher hasher;
  hasher.update(bytes.data(), kChecksumOffset);
  hasher.update(bytes.data() + kChecksumOffset + kChecksumSize,
                bytes.size() - kChecksumOffset - kChecksumSize);
  return hasher.digest();
}

} // namespace

std::string encodeCacheEntry(const CodeObject &code,
                             const std::string &signature) {
  std::string metadata;
  for (const std::string *field : {&signature, &code.generatorIdentity,
                                   &code.compilerIdentity, &code.compilerFlags})
    appendString(metadata, *field);
  append<int32_t>(metadata, code.tileK);
  append<int32_t>(metadata, code.paddedHeads);
  append<int32_t>(metadata, code.clusterParts);
  append<int32_t>(metadata, code.blocksPerSM);
  append<uint32_t>(metadata, static_cast<uint32_t>(code.extraEntries.size()));
  for (const KernelEntry &entry : code.extraEntries) {
    appendString(metadata, entry.name);
    append<int32_t>(metadata, entry.threadsPerBlock);
    append<int32_t>(metadata, entry.sharedBytes);
    append<int32_t>(metadata, entry.rowsPerBlock);
  }
  std::string bytes(kCacheEntryHeaderSize, '\0');
  std::memcpy(bytes.data(), kMagic, sizeof(kMagic));
  put<uint32_t>(bytes, 8, kCacheFormatVersion);
  put<uint32_t>(bytes, 12, static_cast<uint32_t>(code.arch));
  put<uint64_t>(bytes, 16, code.binary.size());
  put<uint32_t>(bytes, 40, static_cast<uint32_t>(code.entryName.size()));
  put<int32_t>(bytes, 44, code.threadsPerBlock);
  put<int32_t>(bytes, 48, code.sharedBytes);
  put<int32_t>(bytes, 52, code.tileQ);
  put<uint32_t>(bytes, 56, static_cast<uint32_t>(metadata.size()));
  bytes += code.entryName;
  bytes += metadata;
  bytes += code.binary;
  Hash128 sum = checksum(bytes);
  put<uint64_t>(bytes, kChecksumOffset, sum.low);
  put<uint64_t>(bytes, kChecksumOffset + 8, sum.high);
  return bytes;
}

bool decodeCacheEntry(const std::string &bytes, CodeObject &out,
                      std::string &signature, std::string &why) {
  if (bytes.size() < kCacheEntryHeaderSize) {
    why = "truncated header (" + std::to_string(bytes.size()) + " bytes)";
    return false;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    why = "bad magic";
    return false;
  }
  if (uint32_t version = get<uint32_t>(bytes, 8);
      version != kCacheFormatVersion) {
    why = "format version " + std::to_string(version);
    return false;
  }
  uint64_t payloadSize = get<uint64_t>(bytes, 16);
  uint32_t nameSize = get<uint32_t>(bytes, 40);
  uint32_t metadataSize = get<uint32_t>(bytes, 56);
  // Each size is checked alone first, so the sum cannot wrap.
  if (payloadSize > bytes.size() || nameSize > bytes.size() ||
      metadataSize > bytes.size() ||
      kCacheEntryHeaderSize + nameSize + metadataSize + payloadSize !=
          bytes.size()) {
    why = "size mismatch (file has " + std::to_string(bytes.size()) +
          " bytes, header says " +
          std::to_string(kCacheEntryHeaderSize + nameSize + metadataSize +
                         payloadSize) +
          ")";
    return false;
  }
  Hash128 sum = checksum(bytes);
  if (sum.low != get<uint64_t>(bytes, kChecksumOffset) ||
      sum.high != get<uint64_t>(bytes, kChecksumOffset + 8)) {
    why = "bad checksum";
    return false;
  }
  uint32_t arch = get<uint32_t>(bytes, 12);
  if (arch > static_cast<uint32_t>(Arch::SM90A)) {
    why = "unknown arch " + std::to_string(arch);
    return false;
  }
  // The checksum matched, so a malformed block was written so: a bug, or
  // another build of the same format version.
  MetadataReader metadata(std::string_view(
      bytes.data() + kCacheEntryHeaderSize + nameSize, metadataSize));
  std::string fields[4];
  int32_t tileK = 0, paddedHeads = 0, clusterParts = 0, blocksPerSM = 0;
  uint32_t extraCount = 0;
  bool ok = metadata.takeString(fields[0]) && metadata.takeString(fields[1]) &&
            metadata.takeString(fields[2]) && metadata.takeString(fields[3]) &&
            metadata.take(tileK) && metadata.take(paddedHeads) &&
            metadata.take(clusterParts) && metadata.take(blocksPerSM) &&
            metadata.take(extraCount);
  std::vector<KernelEntry> extraEntries;
  // Each entry takes at least 16 bytes: no count can make this loop long.
  for (uint32_t i = 0; ok && i < extraCount; ++i) {
    KernelEntry entry;
    ok = metadata.takeString(entry.name) && metadata.take(entry.threadsPerBlock) &&
         metadata.take(entry.sharedBytes) && metadata.take(entry.rowsPerBlock);
    extraEntries.push_back(std::move(entry));
  }
  if (!ok || !metadata.atEnd()) {
    why = "malformed metadata";
    return false;
  }
  if (clusterParts < 1 || clusterParts > 8) {
    why = "cluster parts " + std::to_string(clusterParts) + " not in [1, 8]";
    return false;
  }
  if (blocksPerSM < 0 || blocksPerSM > 32) {
    why = "blocks per SM " + std::to_string(blocksPerSM) + " not in [0, 32]";
    return false;
  }
  out.arch = static_cast<Arch>(arch);
  out.threadsPerBlock = get<int32_t>(bytes, 44);
  out.sharedBytes = get<int32_t>(bytes, 48);
  out.tileQ = get<int32_t>(bytes, 52);
  out.entryName = bytes.substr(kCacheEntryHeaderSize, nameSize);
  out.binary = bytes.substr(kCacheEntryHeaderSize + nameSize + metadataSize);
  out.tileK = tileK;
  out.paddedHeads = paddedHeads;
  out.clusterParts = clusterParts;
  out.blocksPerSM = blocksPerSM;
  out.extraEntries = std::move(extraEntries);
  signature = std::move(fields[0]);
  out.generatorIdentity = std::move(fields[1]);
  out.compilerIdentity = std::move(fields[2]);
  out.compilerFlags = std::move(fields[3]);
  return true;
}

} // namespace mlagen
