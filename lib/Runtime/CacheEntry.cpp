//===- CacheEntry.cpp - the bytes of one disk cache entry -----------------===//

#include "CacheEntry.h"
#include "Hash.h"

#include <bit>
#include <cstdint>
#include <cstring>

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

std::string encodeCacheEntry(const CodeObject &code) {
  std::string bytes(kCacheEntryHeaderSize, '\0');
  std::memcpy(bytes.data(), kMagic, sizeof(kMagic));
  put<uint32_t>(bytes, 8, kCacheFormatVersion);
  put<uint32_t>(bytes, 12, static_cast<uint32_t>(code.arch));
  put<uint64_t>(bytes, 16, code.binary.size());
  put<uint32_t>(bytes, 40, static_cast<uint32_t>(code.entryName.size()));
  put<int32_t>(bytes, 44, code.threadsPerBlock);
  put<int32_t>(bytes, 48, code.sharedBytes);
  put<int32_t>(bytes, 52, code.tileQ);
  bytes += code.entryName;
  bytes += code.binary;
  Hash128 sum = checksum(bytes);
  put<uint64_t>(bytes, kChecksumOffset, sum.low);
  put<uint64_t>(bytes, kChecksumOffset + 8, sum.high);
  return bytes;
}

bool decodeCacheEntry(const std::string &bytes, CodeObject &out,
                      std::string &why) {
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
  if (payloadSize > bytes.size() || nameSize > bytes.size() ||
      kCacheEntryHeaderSize + nameSize + payloadSize != bytes.size()) {
    why = "size mismatch (file has " + std::to_string(bytes.size()) +
          " bytes, header says " +
          std::to_string(kCacheEntryHeaderSize + nameSize + payloadSize) + ")";
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
  out.arch = static_cast<Arch>(arch);
  out.threadsPerBlock = get<int32_t>(bytes, 44);
  out.sharedBytes = get<int32_t>(bytes, 48);
  out.tileQ = get<int32_t>(bytes, 52);
  out.entryName = bytes.substr(kCacheEntryHeaderSize, nameSize);
  out.binary = bytes.substr(kCacheEntryHeaderSize + nameSize);
  return true;
}

} // namespace mlagen
