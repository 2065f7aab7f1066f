// sign: golden bytes, the exact error identity ||C(v) - v||^2 = ||v||^2 - ||v||_1^2 / d per bucket, the
// worst case 1 - 1/d reached by a one-hot vector, the bias, and decoder validation.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"
#include "kernels/cpu/sign.hpp"

using namespace qgossip;

namespace {

std::vector<float> round_trip(const compressor& c, const std::vector<float>& v) {
  std::vector<std::byte> bytes;
  c.encode(v, codec_context{}, bytes);
  REQUIRE(bytes.size() == c.max_encoded_bytes(v.size()));
  std::vector<float> out(v.size());
  REQUIRE(c.decode(bytes, codec_context{}, out).is_ok());
  return out;
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

// sum over buckets of ||v_b||^2 - ||v_b||_1^2 / d_b, in double.
double predicted_error(const std::vector<float>& v, std::size_t bucket) {
  const std::size_t d = (bucket == 0 || bucket > v.size()) ? v.size() : bucket;
  double total = 0;
  for (std::size_t start = 0; start < v.size(); start += d) {
    const std::size_t end = std::min(v.size(), start + d);
    double l1 = 0, l2 = 0;
    for (std::size_t i = start; i < end; ++i) {
      l1 += std::fabs(double{v[i]});
      l2 += double{v[i]} * v[i];
    }
    total += l2 - l1 * l1 / static_cast<double>(end - start);
  }
  return total;
}

}  // namespace

TEST_CASE("sign golden bytes: count, the mean magnitude, then the sign bits LSB-first") {
  const auto c = make_compressor(parse_codec_spec("sign"));
  CHECK(c->describe() == "sign:bucket=0");
  CHECK(c->id() == codec_id::sign);
  CHECK_FALSE(c->unbiased());
  std::vector<std::byte> bytes;
  c->encode(std::vector<float>{1.0f, -2.0f, 3.0f, -4.0f, -0.0f}, codec_context{}, bytes);
  // n = 5; scale (1+2+3+4+0)/5 = 2.0 = 0x40000000; signs 0,1,0,1,1 -> 0b11010 = 0x1A.
  const std::vector<std::byte> want{std::byte{5},    std::byte{0},    std::byte{0}, std::byte{0},
                                    std::byte{0},    std::byte{0},    std::byte{0}, std::byte{0x40},
                                    std::byte{0x1A}};
  CHECK(bytes == want);
  std::vector<float> out(5);
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  CHECK(out == std::vector<float>{2.0f, -2.0f, 2.0f, -2.0f, -2.0f});
}

TEST_CASE("sign error is ||v||^2 - ||v||_1^2/d per bucket, within the bound; one-hot reaches 1 - 1/d") {
  std::mt19937 gen(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  for (const char* spec : {"sign", "sign:bucket=1", "sign:bucket=3", "sign:bucket=64", "sign:bucket=5000"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    const std::size_t bucket = std::stoul(std::string(c->describe()).substr(12));
    for (std::size_t n : {1u, 10u, 1000u, 4097u}) {
      CAPTURE(n);
      std::vector<float> g(n), heavy(n), one_hot(n, 0.0f), flat(n);
      for (std::size_t i = 0; i < n; ++i) {
        g[i] = normal(gen);
        heavy[i] = cauchy(gen);
        flat[i] = (gen() % 2) ? 0.75f : -0.75f;
      }
      one_hot[n / 2] = -3.0f;
      for (const std::vector<float>* v : {&g, &heavy, &one_hot, &flat}) {
        const std::vector<float> out = round_trip(*c, *v);
        const double err = squared_error(out, *v);
        const double norm = squared_norm(*v);
        // Only the float rounding of each scale separates the two (relative 2^-20 is generous).
        CHECK(err == doctest::Approx(predicted_error(*v, bucket)).epsilon(1e-5).scale(norm));
        // The 1e-12 is this test's own rounding (double sums of n terms), not the codec's.
        CHECK(err <= c->relative_error_bound(n) * norm * (1 + 1e-12));
      }
      // Constant magnitude: exact.
      CHECK(squared_error(round_trip(*c, flat), flat) == 0.0);
    }
    // One-hot in one full bucket: relative error 1 - 1/d, the bound's worst case.
    const std::size_t n = 4096;
    std::vector<float> one_hot(n, 0.0f);
    one_hot[0] = 2.5f;
    const double d = static_cast<double>(bucket == 0 || bucket > n ? n : bucket);
    const double rel = squared_error(round_trip(*c, one_hot), one_hot) / squared_norm(one_hot);
    CHECK(rel == doctest::Approx(1.0 - 1.0 / d).epsilon(1e-9));
    CHECK(rel <= c->relative_error_bound(n) * (1 + 1e-12));
  }
}

TEST_CASE("sign is biased: the decoded vector (its own mean: it is deterministic) is far from v") {
  // A deterministic operator's mean over any number of trials is C(v) itself. For a gaussian v,
  // ||C(v) - v||^2 / ||v||^2 = 1 - ||v||_1^2 / (n ||v||^2) -> 1 - 2/pi = 0.36: far beyond rounding noise.
  const auto c = make_compressor(parse_codec_spec("sign"));
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(20000);
  for (float& x : v) x = normal(gen);
  const codec_context a{.seed = 1, .rank = 0, .iteration = 1, .stream = 0};
  const codec_context b{.seed = 2, .rank = 3, .iteration = 9, .stream = 1};
  std::vector<std::byte> ea, eb;
  c->encode(v, a, ea);
  c->encode(v, b, eb);
  CHECK(ea == eb);  // no randomness: nothing averages the bias away
  const double rel = squared_error(round_trip(*c, v), v) / squared_norm(v);
  CHECK(rel == doctest::Approx(1.0 - 2.0 / std::numbers::pi).epsilon(0.03));
}

TEST_CASE("sign decoder: count, size, scale and padding faults") {
  const auto c = make_compressor(parse_codec_spec("sign:bucket=4"));
  const std::vector<float> v{1, -2, 3, -4, 5, -6, 7, -8, 9, -10};  // 3 buckets, 10 bits
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{}, bytes);
  REQUIRE(bytes.size() == 4 + 12 + 2);
  std::vector<float> out(v.size());
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  CHECK(out[9] == -9.5f);  // last bucket (9, -10): mean 9.5
  auto corrupt = [&](std::size_t byte, std::byte value) {
    std::vector<std::byte> b = bytes;
    b[byte] = value;
    return c->decode(b, codec_context{}, out);
  };
  // Layout: n at 0..3; scales 2.5, 6.5, 9.5 at 4..7, 8..11, 12..15; sign bits at 16..17.
  CHECK(corrupt(0, std::byte{11}).code() == errc::corrupt);     // payload made for 11 values
  CHECK(corrupt(7, std::byte{0xC0}).code() == errc::corrupt);   // scale 0 = 0xC0200000 = -2.5
  CHECK(corrupt(17, std::byte{0x06}).code() == errc::corrupt);  // a padding bit (bit 2 of the last byte)
  auto scale2 = [&](std::uint32_t bits) {
    std::vector<std::byte> b = bytes;
    std::memcpy(&b[12], &bits, 4);
    return c->decode(b, codec_context{}, out).code();
  };
  CHECK(scale2(0x7FC00000u) == errc::corrupt);  // NaN
  CHECK(scale2(0x7F800000u) == errc::corrupt);  // +Inf
  CHECK(scale2(0x80000000u) == errc::corrupt);  // -0
  CHECK(scale2(0x00000000u) == errc::ok);       // +0: valid
  CHECK(scale2(0x7F7FFFFFu) == errc::ok);       // FLT_MAX: valid
  std::vector<float> fewer(9), more(11);
  CHECK(c->decode(bytes, codec_context{}, fewer).code() == errc::corrupt);
  CHECK(c->decode(bytes, codec_context{}, more).code() == errc::corrupt);
  // A zero scale (-0 excluded) is valid: an all-zero bucket decodes to +-0.
  std::vector<float> zeros(8, 0.0f);
  CHECK(round_trip(*c, zeros) == zeros);
}

TEST_CASE("sign entropy: the binary entropy of the sign bits") {
  const auto c = make_compressor(parse_codec_spec("sign:bucket=3"));
  const std::vector<float> v{1, -1, 2, 3, -0.0f, 4, 5, 6};  // 2 of 8 negative: H(1/4) = 0.811
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{}, bytes);
  CHECK(c->entropy_bits_per_value(bytes, v.size(), codec_context{}) == doctest::Approx(0.8112781245));
  bytes.clear();
  c->encode(std::vector<float>(10, 1.0f), codec_context{}, bytes);
  CHECK(c->entropy_bits_per_value(bytes, 10, codec_context{}) == 0.0);
}

TEST_CASE("sign spec: bucket parameter, canonical form, errors") {
  CHECK(make_compressor(parse_codec_spec("sign:bucket=512"))->describe() == "sign:bucket=512");
  CHECK(make_compressor(parse_codec_spec("sign:bucket=512"))->params_tag() !=
        make_compressor(parse_codec_spec("sign"))->params_tag());
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("sign:buckets=5")), config_error);
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("sign:bucket=-1")), config_error);
  const auto c = make_compressor(parse_codec_spec("sign:bucket=1"));
  CHECK(c->relative_error_bound(100) == 0.0);  // each value is its own scale: exact
  CHECK(make_compressor(parse_codec_spec("sign"))->relative_error_bound(4) ==
        doctest::Approx(0.75).epsilon(1e-10));
}
