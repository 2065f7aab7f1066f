// fp16 / bf16: the conversions against known bit patterns, against an independent reference at every
// rounding midpoint (ties to even, just above, just below), exhaustively for 16 -> 32 bits, and the
// codecs' payloads, saturation, decode validation and error bounds.
#include <doctest/doctest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "kernels/cpu/half.hpp"

using namespace qgossip;
using namespace qgossip::kernels;

namespace {

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// The value of a finite fp16 pattern from its definition, in double.
double half_value(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

double squared_error(const std::vector<float>& a, const std::vector<float>& v) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += (double{a[i]} - v[i]) * (double{a[i]} - v[i]);
  return s;
}

double squared_norm(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double{x} * x;
  return s;
}

std::vector<float> round_trip(const compressor& c, const std::vector<float>& v) {
  std::vector<std::byte> bytes;
  c.encode(v, codec_context{}, bytes);
  std::vector<float> out(v.size());
  REQUIRE(c.decode(bytes, codec_context{}, out).is_ok());
  return out;
}

}  // namespace

TEST_CASE("fp16: known bit patterns, ties to even, subnormals, saturation") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(0.0f) == 0x0000);
  CHECK(float_to_half(-0.0f) == 0x8000);
  CHECK(float_to_half(0.1f) == 0x2E66);
  CHECK(float_to_half(1.0f / 3.0f) == 0x3555);
  CHECK(float_to_half(65504.0f) == 0x7BFF);
  CHECK(float_to_half(0x1p-14f) == 0x0400);            // smallest normal
  CHECK(float_to_half(0x1p-24f) == 0x0001);            // smallest subnormal
  CHECK(float_to_half(0x1p-25f) == 0x0000);            // tie between 0 and 2^-24: to even (0)
  CHECK(float_to_half(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(float_to_half(3 * 0x1p-25f) == 0x0002);        // tie between 1 and 2 (x 2^-24): to 2
  CHECK(float_to_half(1023 * 0x1p-24f) == 0x03FF);     // largest subnormal
  CHECK(float_to_half(1023.5f * 0x1p-24f) == 0x0400);  // rounds up into the normals
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3C00);     // tie, 0x3C00 is even
  CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3C02);  // tie, 0x3C01 is odd
  CHECK(float_to_half(2047.5f) == 0x67FF + 1);         // 2047.5 ties between 2047 (odd) and 2048
  // Saturation: round-to-nearest would give infinity from 65520 up.
  CHECK(float_to_half(65519.0f) == 0x7BFF);
  CHECK(float_to_half(65520.0f) == 0x7BFF);
  CHECK(float_to_half(1e30f) == 0x7BFF);
  CHECK(float_to_half(FLT_MAX) == 0x7BFF);
  CHECK(float_to_half(-FLT_MAX) == 0xFBFF);
  CHECK(float_to_half(1e-30f) == 0x0000);
  CHECK(float_to_half(-1e-30f) == 0x8000);
  CHECK(float_to_half(FLT_TRUE_MIN) == 0x0000);
  CHECK(half_to_float(0x3C00) == 1.0f);
  CHECK(half_to_float(0x7BFF) == 65504.0f);
  CHECK(half_to_float(0x0001) == 0x1p-24f);
  CHECK(std::signbit(half_to_float(0x8000)));
}

TEST_CASE("fp16: every finite pattern decodes to its value and re-encodes to itself") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if (half_is_non_finite(bits)) continue;
    const float f = half_to_float(bits);
    if (static_cast<double>(f) != half_value(bits) || float_to_half(f) != bits) {
      FAIL("pattern " << h << " decodes to " << f);
    }
  }
}

TEST_CASE("fp16: at every rounding midpoint, ties go to even and neighbours to the nearer value") {
  // Between consecutive finite non-negative fp16 values a < b the midpoint is a float exactly (12
  // significant bits); it must go to the even pattern, the floats just around it to the nearer one.
  int checked = 0;
  for (std::uint16_t h = 0; h < 0x7BFF; ++h) {
    const double mid = (half_value(h) + half_value(static_cast<std::uint16_t>(h + 1))) / 2;
    const auto m = static_cast<float>(mid);
    REQUIRE(static_cast<double>(m) == mid);
    const std::uint16_t even = (h % 2 == 0) ? h : static_cast<std::uint16_t>(h + 1);
    for (float sign : {1.0f, -1.0f}) {
      const std::uint16_t s = sign < 0 ? 0x8000 : 0;
      if (float_to_half(sign * m) != (even | s) ||
          float_to_half(sign * std::nextafter(m, 0.0f)) != (h | s) ||
          float_to_half(sign * std::nextafter(m, 1e9f)) != ((h + 1) | s)) {
        FAIL("midpoint above pattern " << h);
      }
      ++checked;
    }
  }
  CHECK(checked == 2 * 0x7BFF);
}

#if defined(__FLT16_MAX__)
TEST_CASE("fp16: matches the compiler's _Float16 conversion on random floats below the overflow") {
  // An independent implementation: with -march=x86-64-v3 GCC converts with F16C's vcvtps2ph (round to
  // nearest even), elsewhere with libgcc's soft-float; either way the portable code must give the same
  // bits. Inputs: random floats with |x| < 65520, where saturation and rounding agree.
  std::mt19937 gen(1601);
  int compared = 0;
  for (int i = 0; i < 2000000; ++i) {
    float x = from_bits(static_cast<std::uint32_t>(gen()));
    if (!std::isfinite(x)) continue;
    // Map most inputs into the fp16 range (every exponent 2^-30 .. 2^15) so the subnormal and normal
    // paths both get a large share.
    int exponent = 0;
    x = std::ldexp(std::frexp(x, &exponent), static_cast<int>(gen() % 46) - 30);
    if (std::fabs(x) >= 65520.0f) continue;
    const auto want = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    if (float_to_half(x) != want) FAIL("x = " << x << " gives " << float_to_half(x) << ", _Float16 " << want);
    ++compared;
  }
  CHECK(compared > 1900000);
}
#endif

TEST_CASE("bf16: known bit patterns, ties to even, saturation") {
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(float_to_bf16(-2.0f) == 0xC000);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  CHECK(float_to_bf16(0.1f) == 0x3DCD);                // 0x3DCCCCCD rounds up
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3F80);      // tie, 0x3F80 even
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82);  // tie, 0x3F81 odd
  CHECK(float_to_bf16(FLT_MAX) == 0x7F7F);              // would round to infinity: saturates
  CHECK(float_to_bf16(from_bits(0x7F7F8000)) == 0x7F7F);  // the tie at the top
  CHECK(float_to_bf16(-FLT_MAX) == 0xFF7F);
  CHECK(float_to_bf16(FLT_TRUE_MIN) == 0x0000);         // 2^-149: below half of 2^-133
  CHECK(float_to_bf16(FLT_MIN) == 0x0080);
  CHECK(bf16_to_float(0x3F80) == 1.0f);
  CHECK(bf16_to_float(0x7F7F) == from_bits(0x7F7F0000));
}

TEST_CASE("bf16: at every rounding midpoint, ties go to even and neighbours to the nearer value") {
  for (std::uint32_t h = 0; h < 0x7F7F; ++h) {
    const std::uint32_t mid = (h << 16) | 0x8000u;  // exactly halfway to the next pattern
    const std::uint32_t even = (h % 2 == 0) ? h : h + 1;
    for (std::uint32_t s : {0u, 0x80000000u}) {
      if (float_to_bf16(from_bits(mid | s)) != (even | (s >> 16)) ||
          float_to_bf16(from_bits((mid - 1) | s)) != (h | (s >> 16)) ||
          float_to_bf16(from_bits((mid + 1) | s)) != ((h + 1) | (s >> 16))) {
        FAIL("midpoint above pattern " << h);
      }
    }
    if (bf16_to_float(static_cast<std::uint16_t>(h)) != from_bits(h << 16)) FAIL("pattern " << h);
  }
}

TEST_CASE("bulk conversions give the scalar results, and decode finds the first NaN/Inf pattern") {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  for (std::size_t n : {0u, 1u, 7u, 1023u, 1024u, 1025u, 5000u}) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(gen) * std::ldexp(1.0f, static_cast<int>(gen() % 40) - 30);
    std::vector<std::byte> h(2 * n), b(2 * n);
    floats_to_half(v, h);
    floats_to_bf16(v, b);
    std::vector<float> hv(n), bv(n);
    CHECK(half_to_floats(h, hv) == n);
    CHECK(bf16_to_floats(b, bv) == n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t hb, bb;
      std::memcpy(&hb, &h[2 * i], 2);
      std::memcpy(&bb, &b[2 * i], 2);
      REQUIRE(hb == float_to_half(v[i]));
      REQUIRE(bb == float_to_bf16(v[i]));
      REQUIRE(std::bit_cast<std::uint32_t>(hv[i]) == std::bit_cast<std::uint32_t>(half_to_float(hb)));
      REQUIRE(std::bit_cast<std::uint32_t>(bv[i]) == std::bit_cast<std::uint32_t>(bf16_to_float(bb)));
    }
    if (n > 3) {
      const std::size_t at = n - 2;
      for (std::uint16_t bad : {std::uint16_t{0x7C00}, std::uint16_t{0xFC00}, std::uint16_t{0x7E01}}) {
        std::vector<std::byte> corrupt = h;
        std::memcpy(&corrupt[2 * at], &bad, 2);
        CHECK(half_to_floats(corrupt, hv) == at);
      }
      for (std::uint16_t bad : {std::uint16_t{0x7F80}, std::uint16_t{0xFF80}, std::uint16_t{0x7FC0}}) {
        std::vector<std::byte> corrupt = b;
        std::memcpy(&corrupt[2 * at], &bad, 2);
        CHECK(bf16_to_floats(corrupt, bv) == at);
      }
    }
  }
}

TEST_CASE("fp16 and bf16 codecs: golden bytes, spec, flags") {
  const auto fp16 = make_compressor(parse_codec_spec("fp16"));
  const auto bf16 = make_compressor(parse_codec_spec("bf16"));
  CHECK(fp16->id() == codec_id::fp16);
  CHECK(bf16->id() == codec_id::bf16);
  CHECK(fp16->describe() == "fp16");
  CHECK(bf16->describe() == "bf16");
  CHECK(fp16->params_tag() != bf16->params_tag());
  CHECK_FALSE(fp16->unbiased());
  CHECK_FALSE(bf16->unbiased());
  CHECK(fp16->max_encoded_bytes(10) == 20);
  CHECK_THROWS(make_compressor(parse_codec_spec("fp16:bits=8")));
  std::vector<std::byte> bytes;
  fp16->encode(std::vector<float>{1.0f, -2.0f, 70000.0f}, codec_context{}, bytes);
  CHECK(bytes == std::vector<std::byte>{std::byte{0x00}, std::byte{0x3C}, std::byte{0x00}, std::byte{0xC0},
                                        std::byte{0xFF}, std::byte{0x7B}});
  bytes.clear();
  bf16->encode(std::vector<float>{1.0f, -2.0f}, codec_context{}, bytes);
  CHECK(bytes == std::vector<std::byte>{std::byte{0x80}, std::byte{0x3F}, std::byte{0x00}, std::byte{0xC0}});
}

TEST_CASE("fp16 and bf16 decoders reject NaN/Inf patterns (naming the index) and wrong sizes") {
  for (const char* spec : {"fp16", "bf16"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    std::vector<std::byte> bytes;
    c->encode(std::vector<float>(100, 0.25f), codec_context{}, bytes);
    std::vector<float> out(100);
    CHECK(c->decode(std::span(bytes).first(198), codec_context{}, out).code() == errc::corrupt);
    std::vector<float> more(101);
    CHECK(c->decode(bytes, codec_context{}, more).code() == errc::corrupt);
    bytes[2 * 37 + 1] = std::byte{0x7F};
    bytes[2 * 37] = std::byte{0xFF};  // 0x7FFF: NaN in both formats
    const status st = c->decode(bytes, codec_context{}, out);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find("index 37") != std::string::npos);
  }
}

TEST_CASE("error bounds: 2^-22 (fp16) and 2^-16 (bf16) inside the normal range; fp16 honest about its range") {
  const auto fp16 = make_compressor(parse_codec_spec("fp16"));
  const auto bf16 = make_compressor(parse_codec_spec("bf16"));
  CHECK(fp16->relative_error_bound(0) == 0.0);
  CHECK(fp16->relative_error_bound(100) == 1.0);
  CHECK(bf16->relative_error_bound(100) == 0x1p-16);
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::vector<float> v(10000), wide(10000);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = (gen() % 2 ? -1.0f : 1.0f) * std::ldexp(mant(gen), static_cast<int>(gen() % 30) - 14);  // [2^-14, 2^16)
    if (std::fabs(v[i]) > 65504.0f) v[i] = 65504.0f;
    wide[i] = (gen() % 2 ? -1.0f : 1.0f) * std::ldexp(mant(gen), static_cast<int>(gen() % 250) - 125);
  }
  // Per element |C(v) - v| <= 2^-11 |v| (fp16) / 2^-8 |v| (bf16): the squared sums obey the same factor.
  const std::vector<float> h = round_trip(*fp16, v);
  for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(std::fabs(double{h[i]} - v[i]) <= 0x1p-11 * std::fabs(v[i]));
  CHECK(squared_error(h, v) <= 0x1p-22 * squared_norm(v));
  const std::vector<float> b = round_trip(*bf16, wide);
  for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(std::fabs(double{b[i]} - wide[i]) <= 0x1p-8 * std::fabs(wide[i]));
  CHECK(squared_error(b, wide) <= bf16->relative_error_bound(wide.size()) * squared_norm(wide));
  // Outside its range fp16 loses everything: tiny values flush to zero (relative error exactly 1)...
  const std::vector<float> tiny(100, 1e-9f);
  CHECK(squared_error(round_trip(*fp16, tiny), tiny) == squared_norm(tiny));
  // ...and huge ones saturate (relative error close to 1, never above).
  const std::vector<float> huge(100, 1e30f);
  const double e = squared_error(round_trip(*fp16, huge), huge) / squared_norm(huge);
  CHECK(e > 0.999);
  CHECK(e <= fp16->relative_error_bound(100));
}
