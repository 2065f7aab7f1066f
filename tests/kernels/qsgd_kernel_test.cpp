// The QSGD CPU kernels against a plain, element-by-element reimplementation of the format in
// kernels/cpu/qsgd_format.hpp (the spec), plus the properties the format promises and the decoder's
// corruption cases.
#include <doctest/doctest.h>

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd.hpp"

using namespace qgossip::kernels;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The spec, written the slow and obvious way.
float spec_scale(const float* v, std::size_t len, qsgd_norm norm) {
  if (norm == qsgd_norm::max) {
    float m = 0;
    for (std::size_t i = 0; i < len; ++i) m = std::max(m, std::fabs(v[i]));
    return m;
  }
  double lane[32] = {};
  for (std::size_t k = 0; k < len; ++k) lane[k % 32] += double(v[k]) * double(v[k]);
  for (int off = 16; off > 0; off /= 2)
    for (int j = 0; j < off; ++j) lane[j] += lane[j + off];
  const double r = std::sqrt(lane[0]);
  return r > FLT_MAX ? FLT_MAX : static_cast<float>(r);
}

std::vector<std::byte> spec_encode(const std::vector<float>& v, const qsgd_layout& L,
                                   const philox_stream& rng) {
  const std::size_t n = v.size(), d = L.bucket_size(n), nb = L.bucket_count(n);
  const unsigned b = L.bits();
  std::vector<std::byte> out(L.encoded_bytes(n));
  std::vector<float> scales(nb);
  for (std::size_t k = 0; k < nb; ++k) {
    scales[k] = spec_scale(v.data() + k * d, std::min(d, n - k * d), L.norm);
    std::memcpy(out.data() + 4 * k, &scales[k], 4);
  }
  std::byte* packed = out.data() + 4 * nb;
  for (std::size_t i = 0; i < n; ++i) {
    const float S = scales[i / d];
    std::uint32_t level = 0;
    if (S > 0) {
      const float s = static_cast<float>(L.levels);
      const float x =
          (S >= 0x1p-100f && S <= 0x1p100f) ? std::fabs(v[i]) * (s / S) : (std::fabs(v[i]) / S) * s;
      const float y = x + rng.uniform(i);
      level = std::min(static_cast<std::uint32_t>(std::floor(y)), L.levels);
    }
    const std::uint32_t code = level | ((v[i] < 0 && level > 0) ? 1u << (b - 1) : 0u);
    for (unsigned j = 0; j < b; ++j)
      if ((code >> j) & 1) packed[(i * b + j) / 8] |= static_cast<std::byte>(1u << ((i * b + j) % 8));
  }
  return out;
}

std::vector<float> spec_decode(const std::vector<std::byte>& in, const qsgd_layout& L, std::size_t n) {
  const std::size_t d = L.bucket_size(n), nb = L.bucket_count(n);
  const unsigned b = L.bits();
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    float S;
    std::memcpy(&S, in.data() + 4 * (i / d), 4);
    std::uint32_t code = 0;
    for (unsigned j = 0; j < b; ++j)
      code |= ((std::to_integer<unsigned>(in[4 * nb + (i * b + j) / 8]) >> ((i * b + j) % 8)) & 1u) << j;
    const float step = S / static_cast<float>(L.levels);
    const float m = std::min(static_cast<float>(code & ((1u << (b - 1)) - 1)) * step, FLT_MAX);
    out[i] = (code >> (b - 1)) ? -m : m;
  }
  return out;
}

std::vector<float> gradient_like(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  if (n > 10) v[n / 3] = 0.0f, v[n / 2] = -0.0f, v[n - 1] *= 50.0f;
  return v;
}

constexpr simd_level kLevels[] = {simd_level::portable, simd_level::avx2, simd_level::avx512};

std::vector<std::byte> encode(const std::vector<float>& v, const qsgd_layout& L, const philox_stream& rng) {
  std::vector<std::byte> out(L.encoded_bytes(v.size()));
  REQUIRE(qsgd_encode(v, L, rng, out));
  return out;
}

}  // namespace

TEST_CASE("code width is one sign bit plus the bits of the level count") {
  CHECK(qsgd_code_bits(1) == 2);
  CHECK(qsgd_code_bits(3) == 3);
  CHECK(qsgd_code_bits(7) == 4);
  CHECK(qsgd_code_bits(8) == 5);
  CHECK(qsgd_code_bits(100) == 8);
  CHECK(qsgd_code_bits(127) == 8);
  CHECK(qsgd_code_bits(128) == 9);
  CHECK(qsgd_code_bits(kQsgdMaxLevels) == 16);
}

TEST_CASE("sizes: 4 bytes per bucket plus ceil(n*b/8)") {
  const qsgd_layout L8{127, 512, qsgd_norm::l2};
  CHECK(L8.encoded_bytes(0) == 0);
  CHECK(L8.encoded_bytes(1) == 4 + 1);
  CHECK(L8.encoded_bytes(512) == 4 + 512);
  CHECK(L8.encoded_bytes(513) == 8 + 513);
  const qsgd_layout L4{7, 0, qsgd_norm::max};  // one bucket
  CHECK(L4.encoded_bytes(1001) == 4 + 501);
  const qsgd_layout L5{15, 3, qsgd_norm::l2};
  CHECK(L5.encoded_bytes(10) == 4 * 4 + 7);  // 50 bits
}

TEST_CASE("encode and decode equal the element-by-element spec for many layouts, at every SIMD level") {
  if (!simd_supported(simd_level::avx512)) MESSAGE("no AVX-512 on this CPU: its clones are not tested here");
  const philox_stream rng = philox_stream::make(99, 1, 17, 0);
  for (std::uint32_t levels : {1u, 3u, 7u, 15u, 100u, 127u, 255u, 1000u, kQsgdMaxLevels}) {
    for (std::size_t bucket : {0u, 1u, 3u, 5u, 512u, 1000u, 4096u}) {
      for (qsgd_norm norm : {qsgd_norm::l2, qsgd_norm::max}) {
        for (std::size_t n : {0u, 1u, 7u, 513u, 3001u}) {
          CAPTURE(levels);
          CAPTURE(bucket);
          CAPTURE(static_cast<int>(norm));
          CAPTURE(n);
          const qsgd_layout L{levels, bucket, norm};
          std::vector<float> v = gradient_like(n, static_cast<std::uint32_t>(levels + n));
          // Magnitudes that reach both forms of x (ratio and two-step, see qsgd_format.hpp).
          const float magnitude = std::array<float, 3>{1.0f, 1e33f, 1e-33f}[(levels + bucket + n) % 3];
          for (float& x : v) x *= magnitude;
          const std::vector<std::byte> want_bytes = spec_encode(v, L, rng);
          const std::vector<float> want = spec_decode(want_bytes, L, n);
          for (simd_level simd : kLevels) {
            if (!simd_supported(simd)) continue;
            CAPTURE(to_string(simd));
            std::vector<std::byte> bytes(L.encoded_bytes(n));
            REQUIRE(qsgd_encode(simd, v, L, rng, bytes));
            REQUIRE(bytes == want_bytes);
            std::vector<float> out(n);
            REQUIRE(qsgd_decode(simd, bytes, L, out).ok());
            for (std::size_t i = 0; i < n; ++i) REQUIRE(bits_of(out[i]) == bits_of(want[i]));
          }
        }
      }
    }
  }
}

TEST_CASE("golden bytes: a deterministic ternary encoding") {
  // levels=1 (2-bit codes), max norm, one bucket: +-4 -> level 1 whatever u is, 0 -> level 0.
  const qsgd_layout L{1, 0, qsgd_norm::max};
  const std::vector<float> v{4, -4, 0, 4, 0, -4};
  const std::vector<std::byte> got = encode(v, L, philox_stream::make(1, 2, 3, 4));
  // scale 4.0f = 0x40800000 LE; codes 01 11 00 01 | 00 11 -> 0b01'00'11'01, 0b0000'11'00
  const std::vector<std::byte> want{std::byte{0x00}, std::byte{0x00}, std::byte{0x80},
                                    std::byte{0x40}, std::byte{0x4D}, std::byte{0x0C}};
  CHECK(got == want);
}

TEST_CASE("scales: canonical, never below |v|, clamped, exact for max") {
  bool finite = false;
  const std::vector<float> v = gradient_like(1000, 5);
  for (std::size_t len : {1u, 31u, 32u, 33u, 1000u}) {
    const float s = qsgd_bucket_scale(std::span(v.data(), len), qsgd_norm::l2, finite);
    CHECK(finite);
    CHECK(bits_of(s) == bits_of(spec_scale(v.data(), len, qsgd_norm::l2)));
    double exact = 0;
    for (std::size_t i = 0; i < len; ++i) exact += double(v[i]) * v[i];
    CHECK(s == doctest::Approx(std::sqrt(exact)).epsilon(1e-6));
    for (std::size_t i = 0; i < len; ++i) CHECK(std::fabs(v[i]) <= s);
    const float m = qsgd_bucket_scale(std::span(v.data(), len), qsgd_norm::max, finite);
    CHECK(m == spec_scale(v.data(), len, qsgd_norm::max));
  }
  // A single value: the L2 scale is exactly |v| (no rounding can push it below).
  for (float x : {1e-45f, 1.17549435e-38f, 0.1f, 3.0f, 1e30f, FLT_MAX}) {
    const float one[1] = {-x};
    CHECK(qsgd_bucket_scale(one, qsgd_norm::l2, finite) == x);
  }
  const float huge[3] = {3e38f, -3e38f, 3e38f};  // norm 5.2e38 > FLT_MAX
  CHECK(qsgd_bucket_scale(huge, qsgd_norm::l2, finite) == FLT_MAX);
  CHECK(finite);
  const float zero[4] = {0, -0.0f, 0, 0};
  CHECK(qsgd_bucket_scale(zero, qsgd_norm::l2, finite) == 0.0f);
  CHECK(qsgd_bucket_scale(zero, qsgd_norm::max, finite) == 0.0f);
}

TEST_CASE("non-finite input is refused by encode, wherever it is") {
  const qsgd_layout L{127, 512, qsgd_norm::l2};
  const philox_stream rng = philox_stream::make(1, 0, 0, 0);
  for (qsgd_norm norm : {qsgd_norm::l2, qsgd_norm::max}) {
    const qsgd_layout Ln{127, 512, norm};
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      for (std::size_t at : {0u, 511u, 512u, 1999u}) {
        std::vector<float> v = gradient_like(2000, 3);
        v[at] = bad;
        std::vector<std::byte> out(L.encoded_bytes(v.size()));
        CHECK_FALSE(qsgd_encode(v, Ln, rng, out));
      }
    }
  }
}

TEST_CASE("extreme but finite inputs decode within one step of the input") {
  const philox_stream rng = philox_stream::make(8, 0, 0, 0);
  const std::vector<std::vector<float>> cases{
      {FLT_MAX, -FLT_MAX, FLT_MAX, 1.0f},  // L2 norm overflows: scale clamps to FLT_MAX
      {1e-45f, -1e-45f, 0.0f, 3e-45f},     // subnormal scale: |v|/S stays <= 1
      {1e-40f, 0.0f, 0.0f, 0.0f},          // one subnormal among zeros
      {0.0f, -0.0f, 0.0f, 0.0f},           // an all-zero bucket
  };
  for (qsgd_norm norm : {qsgd_norm::l2, qsgd_norm::max}) {
    for (std::uint32_t levels : {1u, 7u, 127u, kQsgdMaxLevels}) {
      const qsgd_layout L{levels, 0, norm};
      for (const auto& v : cases) {
        const std::vector<std::byte> bytes = encode(v, L, rng);
        std::vector<float> out(v.size());
        REQUIRE(qsgd_decode(bytes, L, out).ok());
        bool finite;
        const float S = qsgd_bucket_scale(v, norm, finite);
        for (std::size_t i = 0; i < v.size(); ++i) {
          CHECK(std::isfinite(out[i]));
          // One step S/s, plus (subnormal scales only) the rounding of the step to the 2^-149 grid.
          CHECK(std::fabs(double(out[i]) - v[i]) <= double(S) / levels * (1 + 1e-6) + levels * 0x1p-150);
          if (v[i] == 0.0f) CHECK(bits_of(out[i]) == 0);  // zeros decode to +0
        }
      }
    }
  }
}

TEST_CASE("decoder faults, with the index of the first one") {
  const qsgd_layout L{100, 4, qsgd_norm::l2};          // 8-bit codes, levels 101..127 unused
  const std::vector<float> v = gradient_like(10, 11);  // 3 buckets: 4, 4, 2
  const std::vector<std::byte> good = encode(v, L, philox_stream::make(2, 0, 0, 0));
  std::vector<float> out(10);
  REQUIRE(qsgd_decode(good, L, out).ok());

  SUBCASE("size") {
    std::vector<std::byte> longer = good;
    longer.push_back(std::byte{0});
    CHECK(qsgd_decode(longer, L, out).fault == qsgd_fault::size);
    CHECK(qsgd_decode(std::span(good).first(good.size() - 1), L, out).fault == qsgd_fault::size);
    std::vector<float> fewer(9);
    CHECK(qsgd_decode(good, L, fewer).fault == qsgd_fault::size);
  }
  SUBCASE("scale") {
    for (float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), -1.0f, -0.0f}) {
      std::vector<std::byte> b = good;
      std::memcpy(b.data() + 4, &bad, 4);  // bucket 1
      const qsgd_decode_result r = qsgd_decode(b, L, out);
      CHECK(r.fault == qsgd_fault::scale);
      CHECK(r.index == 1);
    }
  }
  SUBCASE("level above s, and the sign bit on level 0") {
    for (unsigned code : {101u, 127u, 128u + 101u, 0x80u}) {
      std::vector<std::byte> b = good;
      b[12 + 6] = static_cast<std::byte>(code);  // element 6
      for (simd_level simd : kLevels) {
        if (!simd_supported(simd)) continue;
        const qsgd_decode_result r = qsgd_decode(simd, b, L, out);
        CHECK(r.fault == qsgd_fault::code);
        CHECK(r.index == 6);
      }
    }
  }
  SUBCASE("a bad scale before a bad code wins, and the reverse") {
    std::vector<std::byte> b = good;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(b.data() + 8, &nan, 4);         // bucket 2 (elements 8, 9)
    b[12 + 5] = static_cast<std::byte>(0x80u);  // element 5, bucket 1
    CHECK(qsgd_decode(b, L, out).fault == qsgd_fault::code);
    std::memcpy(b.data() + 4, &nan, 4);  // now bucket 1 too
    const qsgd_decode_result r = qsgd_decode(b, L, out);
    CHECK(r.fault == qsgd_fault::scale);
    CHECK(r.index == 1);
  }
  SUBCASE("padding") {
    const qsgd_layout L3{3, 0, qsgd_norm::max};  // 3-bit codes: 30 bits for 10 values, 2 padding
    std::vector<std::byte> b = encode(v, L3, philox_stream::make(2, 0, 0, 0));
    REQUIRE(qsgd_decode(b, L3, out).ok());
    b.back() |= std::byte{0x80};
    CHECK(qsgd_decode(b, L3, out).fault == qsgd_fault::padding);
  }
}
