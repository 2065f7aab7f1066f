// first_non_finite finds the first NaN or infinity, in any block, and nothing else.
#include <doctest/doctest.h>

#include <cfloat>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/finite.hpp"

using qgossip::kernels::first_non_finite;

TEST_CASE("first_non_finite: finite extremes pass, every kind of non-finite value is found") {
  std::vector<float> v(1000, 1.0f);
  v[1] = FLT_MAX, v[2] = -FLT_MAX, v[3] = 1e-45f, v[4] = -0.0f, v[5] = FLT_MIN;
  CHECK(first_non_finite(v) == v.size());
  CHECK(first_non_finite(std::span<const float>()) == 0);

  float payload_nan;
  const std::uint32_t bits = 0xffc00001u;  // a negative NaN with a payload
  std::memcpy(&payload_nan, &bits, 4);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity(), payload_nan}) {
    for (std::size_t at : {0u, 255u, 256u, 257u, 999u}) {
      std::vector<float> w = v;
      w[at] = bad;
      CHECK(first_non_finite(w) == at);
      if (at + 10 < w.size()) {
        w[at + 10] = bad;  // the first one wins
        CHECK(first_non_finite(w) == at);
      }
    }
  }
}
