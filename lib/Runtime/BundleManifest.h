//===- BundleManifest.h - manifest.json of an AOT bundle -------*- C++ -*-===//
//
// One reader and one writer for the format, so `mlagen` (lib/Bundle) and the
// runtime cannot drift apart:
//
//   {"format": 2, "producer": "mlagen 0.1.0", "kernels": [{
//      "signature": "prefill qk=192 ...", "arch": "sm_90a",
//      "file": "<cache key>.cubin", "size": 41552, "xxh3_128": "<32 hex>",
//      "entry": "mlagen_prefill", "threads_per_block": 256,
//      "shared_bytes": 137216, "tile_q": 128, "tile_k": 0,
//      "padded_heads": 0, "cluster_parts": 1,
//      "extra_entries": [{"name": "mlagen_decode_reduce",
//      "threads_per_block": 256, "shared_bytes": 0, "rows_per_block": 16}],
//      "cache_key": "<32 hex>",
//      "generator": "...", "compiler": "nvrtc 13.0", "compiler_flags": "..."},
//      ...]}
//
// cluster_parts (1 to 8) is optional: a manifest written before it reads
// as 1, a decode kernel that merges no chunks inside a cluster.
//
// Format 1 (before issue 5) had no identities, sizes or checksums; it is
// refused as Unsupported.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_LIB_RUNTIME_BUNDLEMANIFEST_H
#define MLAGEN_LIB_RUNTIME_BUNDLEMANIFEST_H

#include "mlagen/Runtime/Runtime.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlagen {

// 3: decode kernels wait for the previous grid (griddepcontrol.wait) and
// are launched early on sm_90; a format-2 kernel would race.
// 4: decode kernels take merge_arrivals and merge pairs (merge entry
// count -2) in the grid (DECODE_CONTRACT.md); a format-3 kernel would
// leave those rows unwritten.
// 5: a pair's work items carry their slot + 2^30; a format-4 kernel would
// write those partials out of bounds.
// 6: the 16-row e4m3 decode kernels that merge pairs in clusters carry no
// grid merge (kGridPairs), and cluster_parts is required: a runtime that
// planned grid pairs for them would get NaN rows with clusters off.
inline constexpr int kBundleFormatVersion = 6;

struct BundleKernelRecord {
  Signature signature;
  std::string file; // a plain name inside the bundle directory
  uint64_t size = 0;
  std::string checksum; // XXH3-128 of the file, 32 hex digits
  CodeObject code;      // all but the binary
};

struct BundleManifest {
  int format = kBundleFormatVersion;
  std::string producer;
  std::vector<BundleKernelRecord> kernels;
};

std::string encodeBundleManifest(const BundleManifest &manifest);

// InvalidArgument naming the field at fault ("kernels[2].file: ..."),
// Unsupported for a manifest of another format. Never throws.
Status decodeBundleManifest(std::string_view text, BundleManifest &out);

// "mlagen <version>"
std::string bundleProducer();

} // namespace mlagen

#endif // MLAGEN_LIB_RUNTIME_BUNDLEMANIFEST_H
