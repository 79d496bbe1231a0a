//===- BFloat16.h - host bf16 conversions for tests ------------*- C++ -*-===//
#ifndef MLAGEN_TEST_COMMON_BFLOAT16_H
#define MLAGEN_TEST_COMMON_BFLOAT16_H

#include <bit>
#include <cmath>
#include <cstdint>

namespace mlagen::test {

// Round to nearest even, as the GPU conversions do; NaN stays NaN.
inline uint16_t floatToBF16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value))
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16ToFloat(uint16_t value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value) << 16);
}

// The value a float becomes after a round trip through bf16.
inline float roundToBF16(float value) { return bf16ToFloat(floatToBF16(value)); }

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_BFLOAT16_H
