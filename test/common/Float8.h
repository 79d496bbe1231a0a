//===- Float8.h - host fp8 e4m3 conversions for tests ----------*- C++ -*-===//
//
// fp8 e4m3 as the decode kernels read it: OCP (bias 7, max 448, 0x7f/0xff
// NaN; NVIDIA and gfx950) and FNUZ (bias 8, max 240, 0x80 the only NaN, no
// negative zero; gfx942). Encoding rounds to nearest even and saturates at
// the largest finite value, as quantising engines do.
//
//===----------------------------------------------------------------------===//
#ifndef MLAGEN_TEST_COMMON_FLOAT8_H
#define MLAGEN_TEST_COMMON_FLOAT8_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mlagen::test {

inline float e4m3ToFloat(uint8_t code, bool fnuz = false) {
  const int bias = fnuz ? 8 : 7;
  const int e = (code >> 3) & 15, m = code & 7;
  if (fnuz ? code == 0x80 : (code & 0x7f) == 0x7f)
    return NAN;
  const float magnitude = e == 0 ? std::ldexp(float(m), 1 - bias - 3)
                                 : std::ldexp(1.0f + m / 8.0f, e - bias);
  return (code & 0x80) ? -magnitude : magnitude;
}

inline uint8_t floatToE4M3(float value, bool fnuz = false) {
  const int bias = fnuz ? 8 : 7;
  const float maxFinite = fnuz ? 240.0f : 448.0f;
  if (std::isnan(value))
    return fnuz ? 0x80 : 0x7f;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float a = std::fabs(value);
  if (a >= maxFinite)
    return sign | (fnuz ? 0x7f : 0x7e);
  int e2 = 0;
  std::frexp(a, &e2); // a = f 2^e2, f in [0.5, 1)
  const int exponent = std::max(e2 - 1, 1 - bias);
  const float step = std::ldexp(1.0f, exponent - 3);
  float q = std::nearbyint(a / step) * step; // ties to even
  q = std::min(q, maxFinite);
  if (q == 0.0f)
    return fnuz ? 0 : sign; // FNUZ has no negative zero
  std::frexp(q, &e2);
  const int qe = e2 - 1;
  if (qe < 1 - bias)
    return sign | uint8_t(q / std::ldexp(1.0f, 1 - bias - 3));
  const int m = int((q / std::ldexp(1.0f, qe) - 1.0f) * 8.0f);
  return sign | uint8_t((qe + bias) << 3) | uint8_t(m);
}

// The value a float becomes after a round trip through e4m3.
inline float roundToE4M3(float value, bool fnuz = false) {
  return e4m3ToFloat(floatToE4M3(value, fnuz), fnuz);
}

} // namespace mlagen::test

#endif // MLAGEN_TEST_COMMON_FLOAT8_H
