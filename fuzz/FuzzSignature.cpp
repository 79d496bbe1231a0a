//===- FuzzSignature.cpp - signature text: parse, validate, round trip ----===//
//
// Any text parseSignature accepts and validate() passes must print as a
// canonical form that parses back to the same Signature and the same text.
// Host apps and FFI hosts send this text: no input may crash the parser.
//
//===----------------------------------------------------------------------===//

#include "mlagen/Runtime/Signature.h"

#include <cstdint>
#include <cstdlib>
#include <string>

using namespace mlagen;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  Signature sig;
  if (!parseSignature(text, sig))
    return 0;
  Status valid = sig.validate();
  (void)valid.toString();
  if (!valid)
    return 0;
  std::string canonical = sig.canonical();
  Signature again;
  if (!parseSignature(canonical, again) || !(again == sig) ||
      again.canonical() != canonical || !again.validate())
    std::abort();
  return 0;
}
