//===- Float8Test.cpp - the tests' fp8 e4m3 reference conversions ---------===//
#include "Float8.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace mlagen::test;

TEST_CASE("e4m3 decodes OCP and FNUZ codes", "[reference]") {
  CHECK(e4m3ToFloat(0x00) == 0.0f);
  CHECK(e4m3ToFloat(0x01) == 0x1p-9f);        // smallest subnormal
  CHECK(e4m3ToFloat(0x08) == 0x1p-6f);        // smallest normal
  CHECK(e4m3ToFloat(0x38) == 1.0f);
  CHECK(e4m3ToFloat(0x7e) == 448.0f);         // largest finite
  CHECK(e4m3ToFloat(0xfe) == -448.0f);
  CHECK(std::isnan(e4m3ToFloat(0x7f)));
  CHECK(std::isnan(e4m3ToFloat(0xff)));
  // FNUZ: bias 8, 0x80 the only NaN, 0x7f finite.
  CHECK(e4m3ToFloat(0x40, true) == 1.0f);
  CHECK(e4m3ToFloat(0x01, true) == 0x1p-10f);
  CHECK(e4m3ToFloat(0x7f, true) == 240.0f);
  CHECK(std::isnan(e4m3ToFloat(0x80, true)));
}

TEST_CASE("e4m3 encoding round-trips every finite code", "[reference]") {
  for (bool fnuz : {false, true}) {
    for (int code = 0; code < 256; ++code) {
      const float value = e4m3ToFloat(uint8_t(code), fnuz);
      if (std::isnan(value) || (!fnuz && code == 0x80))
        continue; // -0 (OCP) encodes as 0x80 too, checked below
      INFO("fnuz " << fnuz << " code " << code);
      CHECK(floatToE4M3(value, fnuz) == code);
    }
  }
  CHECK(floatToE4M3(-0.0f) == 0x80);
  CHECK(floatToE4M3(-0.0f, true) == 0x00);
}

TEST_CASE("e4m3 encoding rounds to nearest even and saturates",
          "[reference]") {
  CHECK(floatToE4M3(1.0625f) == 0x38);  // halfway 1 and 1.125: even (1)
  CHECK(floatToE4M3(1.1875f) == 0x3a);  // halfway 1.125 and 1.25: even (1.25)
  CHECK(floatToE4M3(1.05f) == 0x38);
  CHECK(floatToE4M3(1.08f) == 0x39);
  CHECK(floatToE4M3(0x1p-10f) == 0x00); // half the smallest subnormal: even (0)
  CHECK(floatToE4M3(3.0f * 0x1p-10f) == 0x02);
  CHECK(floatToE4M3(460.0f) == 0x7e);   // saturate, never the NaN code
  CHECK(floatToE4M3(1e9f) == 0x7e);
  CHECK(floatToE4M3(-1e9f) == 0xfe);
  CHECK(floatToE4M3(1e9f, true) == 0x7f);
  CHECK(roundToE4M3(0.3f) == 0.3125f);
}
