//===- FuzzBundleManifest.cpp - bundle manifests: decode, re-encode -------===//
//
// A bundle directory comes from elsewhere (a build machine, a package): its
// manifest.json is untrusted text. decodeBundleManifest must refuse bad ones
// with a Status, and what it accepts must survive an encode/decode round
// trip unchanged.
//
//===----------------------------------------------------------------------===//

#include "BundleManifest.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlagen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  BundleManifest manifest;
  if (!decodeBundleManifest(text, manifest))
    return 0;
  std::string encoded = encodeBundleManifest(manifest);
  BundleManifest again;
  if (!decodeBundleManifest(encoded, again) ||
      encodeBundleManifest(again) != encoded)
    std::abort();
  return 0;
}
