// qsgd codec specifics: exact sizes, the reported bound, decoded values within one level, and the
// decoder's treatment of damaged scales.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/qsgd.hpp"

using namespace qgossip;

namespace {

std::vector<float> sample(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

}  // namespace

TEST_CASE("8-bit payloads are n + 4*ceil(n/512) bytes, 4-bit ceil(n/2) + 4*ceil(n/512)") {
  const auto q8 = make_compressor(parse_codec_spec("qsgd:bits=8,bucket=512"));
  const auto q4 = make_compressor(parse_codec_spec("qsgd:bits=4,bucket=512"));
  for (std::size_t n : {0u, 1u, 2u, 511u, 512u, 513u, 1024u, 100001u, 1u << 20}) {
    CAPTURE(n);
    const std::vector<float> v = sample(n, 1);
    std::vector<std::byte> b8, b4;
    q8->encode(v, codec_context{}, b8);
    q4->encode(v, codec_context{}, b4);
    const std::size_t buckets = (n + 511) / 512;
    CHECK(b8.size() == n + 4 * buckets);
    CHECK(b4.size() == (n + 1) / 2 + 4 * buckets);
    CHECK(q8->max_encoded_bytes(n) == b8.size());
  }
}

TEST_CASE("relative_error_bound: min(d/(4 s^2), sqrt(d)/s) with d = min(bucket, n)") {
  const auto q8 = make_compressor(parse_codec_spec("qsgd:bits=8,bucket=512"));
  CHECK(q8->relative_error_bound(std::size_t{16} << 20) == doctest::Approx(512.0 / (4 * 127.0 * 127.0)));
  CHECK(q8->relative_error_bound(100) == doctest::Approx(100.0 / (4 * 127.0 * 127.0)));
  CHECK(q8->relative_error_bound(0) == 0.0);
  const auto q4 = make_compressor(parse_codec_spec("qsgd:bits=4,bucket=512,norm=max"));
  CHECK(q4->relative_error_bound(4096) == doctest::Approx(512.0 / (4 * 7.0 * 7.0)));  // 2.61 < sqrt(512)/7
  const auto ternary = make_compressor(parse_codec_spec("qsgd:levels=1,bucket=0"));
  CHECK(ternary->relative_error_bound(10000) == doctest::Approx(100.0));  // sqrt(10000)/1
  CHECK(ternary->unbiased());
}

TEST_CASE("every decoded value is within one level step of its input, with the same sign") {
  for (const char* spec :
       {"qsgd:bits=8", "qsgd:bits=4,norm=max", "qsgd:levels=1,bucket=0", "qsgd:bits=12,bucket=100"}) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const auto& q = dynamic_cast<const qsgd_compressor&>(*c);
    const std::size_t d = q.options().bucket == 0 ? 5000 : q.options().bucket;
    const std::vector<float> v = sample(5000, 2);
    std::vector<std::byte> bytes;
    c->encode(v, codec_context{.seed = 1, .rank = 0, .iteration = 0, .stream = 0}, bytes);
    std::vector<float> out(v.size());
    REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
    for (std::size_t i = 0; i < v.size(); ++i) {
      float S;
      std::memcpy(&S, bytes.data() + 4 * (i / d), 4);
      CHECK(std::fabs(out[i] - v[i]) <= S / q.options().levels * 1.000001f);
      CHECK((out[i] == 0.0f || std::signbit(out[i]) == std::signbit(v[i])));
    }
  }
}

TEST_CASE("flipped scale bits: NaN, Inf or negative scales are rejected, others decode") {
  const auto c = make_compressor(parse_codec_spec("qsgd:bits=8,bucket=64"));
  const std::vector<float> v = sample(200, 3);  // 4 buckets: 16 scale bytes
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{}, bytes);
  std::vector<float> out(v.size());
  for (std::size_t bit = 0; bit < 8 * 16; ++bit) {
    std::vector<std::byte> flipped = bytes;
    flipped[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    float scale;
    std::memcpy(&scale, flipped.data() + 4 * (bit / 32), 4);
    const bool valid = std::isfinite(scale) && !std::signbit(scale);
    const status st = c->decode(flipped, codec_context{}, out);
    CAPTURE(bit);
    CHECK(st.is_ok() == valid);
    if (!st.is_ok()) CHECK(st.message().find("bucket " + std::to_string(bit / 32)) != std::string::npos);
    if (st.is_ok())
      for (float x : out) CHECK(std::isfinite(x));
  }
}

TEST_CASE("layer bounds do not change the qsgd encoding") {
  const codec_spec spec = parse_codec_spec("qsgd:bits=4,bucket=100");
  const auto plain = make_compressor(spec);
  const auto layered = make_compressor(spec, layer_bounds{0, 150, 333, 1000});
  const std::vector<float> v = sample(1000, 4);
  std::vector<std::byte> a, b;
  plain->encode(v, codec_context{}, a);
  layered->encode(v, codec_context{}, b);
  CHECK(a == b);
}
