// topk: exactly the k largest magnitudes (against a sort-based reference, heavy ties included, ties
// to the lower index), the exact error and its bound 1 - k/n, the bias, golden bytes, the k/ratio
// parameter, and decoder validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/sparsify.hpp"
#include "core/errors.hpp"
#include "kernels/cpu/sparse.hpp"

using namespace qgossip;

namespace {

// The reference: sort indices by (|v| descending, index ascending), keep k, sort ascending.
std::vector<std::uint32_t> reference_top_k(const std::vector<float>& v, std::size_t k) {
  std::vector<std::uint32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::vector<float> round_trip(const compressor& c, const std::vector<float>& v) {
  std::vector<std::byte> bytes;
  c.encode(v, codec_context{}, bytes);
  REQUIRE(bytes.size() <= c.max_encoded_bytes(v.size()));
  std::vector<float> out(v.size());
  REQUIRE(c.decode(bytes, codec_context{}, out).is_ok());
  return out;
}

}  // namespace

TEST_CASE("top_k_positions equals the sort-based reference, ties to the lower index" * doctest::test_suite("statistics")) {
  std::mt19937 gen(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + gen() % 3000;
    std::vector<float> v(n);
    switch (trial % 4) {
      case 0:  // distinct magnitudes
        for (float& x : v) x = normal(gen);
        break;
      case 1:  // heavy ties: a handful of magnitudes, both signs, and zeros of both signs
        for (float& x : v) x = static_cast<float>(static_cast<int>(gen() % 5) - 2) * 0.5f;
        for (std::size_t i = 0; i < n; i += 7) v[i] = -0.0f;
        break;
      case 2:  // one magnitude (all ties) in one 16-bit histogram bin
        for (float& x : v) x = (gen() % 2) ? 1.25f : -1.25f;
        break;
      default:  // magnitudes sharing the top 16 bits but differing in the low ones
        for (float& x : v) x = std::bit_cast<float>(static_cast<std::uint32_t>(0x3F800000u | (gen() % 64))) * ((gen() % 2) ? 1.0f : -1.0f);
        break;
    }
    for (std::size_t k : {std::size_t{0}, std::size_t{1}, n / 3, n - 1, n}) {
      std::vector<std::uint32_t> got;
      kernels::top_k_positions(v, k, got);
      if (got != reference_top_k(v, k)) FAIL("trial " << trial << " n=" << n << " k=" << k);
    }
  }
}

TEST_CASE("topk keeps exactly the k largest values as they are; error = the dropped squares <= (1 - k/n)") {
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::pair<const char*, keep_count> specs[] = {{"topk", {.k = 0, .ratio = 0.01}},
                                                      {"topk:ratio=0.25", {.k = 0, .ratio = 0.25}},
                                                      {"topk:k=5", {.k = 5, .ratio = 0}},
                                                      {"topk:ratio=1", {.k = 0, .ratio = 1}}};
  for (const auto& [spec, keep] : specs) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    CHECK_FALSE(c->unbiased());
    for (std::size_t n : {1u, 17u, 1000u, 10000u}) {
      CAPTURE(n);
      std::vector<float> v(n);
      for (float& x : v) x = normal(gen);
      const std::vector<float> out = round_trip(*c, v);
      const std::vector<std::uint32_t> want = reference_top_k(v, keep.of(n));
      double dropped = 0, norm = 0;
      std::vector<bool> kept(n, false);
      for (std::uint32_t i : want) kept[i] = true;
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(out[i] == (kept[i] ? v[i] : 0.0f));
        norm += double{v[i]} * v[i];
        if (!kept[i]) dropped += double{v[i]} * v[i];
      }
      CHECK(dropped <= c->relative_error_bound(n) * norm);
    }
  }
  // k as the spec says: round(ratio n) clamped to [1, n], or min(k, n).
  const auto r = make_compressor(parse_codec_spec("topk:ratio=0.01"));
  CHECK(r->relative_error_bound(1000) == doctest::Approx(1.0 - 10.0 / 1000));
  CHECK(r->relative_error_bound(10) == doctest::Approx(1.0 - 1.0 / 10));     // at least one
  CHECK(r->relative_error_bound(150) == doctest::Approx(1.0 - 2.0 / 150));   // 1.5 rounds to 2
  const auto k5 = make_compressor(parse_codec_spec("topk:k=5"));
  CHECK(k5->relative_error_bound(3) == 0.0);                                  // k > n keeps all
  CHECK(k5->relative_error_bound(50) == doctest::Approx(0.9));
  // The bound is reached by a constant-magnitude vector.
  const std::vector<float> flat{1, -1, 1, -1, 1, -1, 1, -1, 1, -1};
  const std::vector<float> out = round_trip(*k5, flat);
  double err = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) err += (out[i] - flat[i]) * (out[i] - flat[i]);
  CHECK(err == doctest::Approx(k5->relative_error_bound(10) * 10));
  CHECK(out == std::vector<float>{1, -1, 1, -1, 1, 0, 0, 0, 0, 0});  // ties: the lowest indices
}

TEST_CASE("topk is biased: deterministic, and its output misses the small coordinates entirely") {
  // Its mean over any number of trials is C(v) itself; for gaussian v and k = n/10 the dropped 90%
  // of the coordinates carry about 40% of ||v||^2, so ||mean - v|| / ||v|| ~ 0.6, far beyond noise.
  const auto c = make_compressor(parse_codec_spec("topk:ratio=0.1"));
  std::mt19937 gen(8);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(10000);
  for (float& x : v) x = normal(gen);
  std::vector<std::byte> a, b;
  c->encode(v, codec_context{.seed = 1}, a);
  c->encode(v, codec_context{.seed = 2, .rank = 5, .iteration = 7}, b);
  CHECK(a == b);
  const std::vector<float> out = round_trip(*c, v);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    err += (double{out[i]} - v[i]) * (double{out[i]} - v[i]);
    norm += double{v[i]} * v[i];
  }
  CHECK(std::sqrt(err / norm) > 0.5);
}

TEST_CASE("topk golden bytes") {
  const auto c = make_compressor(parse_codec_spec("topk:k=2"));
  CHECK(c->describe() == "topk:k=2");
  std::vector<std::byte> bytes;
  c->encode(std::vector<float>{0.5f, -3.0f, 1.0f, 2.0f}, codec_context{}, bytes);
  // n = 4; tag 0 (bitmap: 1 byte, Rice would not be shorter); values -3, 2; bitmap 0b1010.
  const std::vector<std::byte> want{std::byte{4},    std::byte{0},    std::byte{0},    std::byte{0},
                                    std::byte{0},    std::byte{0x00}, std::byte{0x00}, std::byte{0x40},
                                    std::byte{0xC0}, std::byte{0x00}, std::byte{0x00}, std::byte{0x00},
                                    std::byte{0x40}, std::byte{0x0A}};
  CHECK(bytes == want);
}

TEST_CASE("topk picks the shorter position coding: Rice for sparse selections, bitmap for dense ones") {
  std::mt19937 gen(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(100000);
  for (float& x : v) x = normal(gen);
  for (const auto& [spec, rice] : {std::pair{"topk:ratio=0.01", true}, std::pair{"topk:ratio=0.5", false}}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    std::vector<std::byte> bytes;
    c->encode(v, codec_context{}, bytes);
    CHECK((std::to_integer<int>(bytes[4]) != 0) == rice);
    const std::size_t k = spec == std::string("topk:ratio=0.01") ? 1000 : 50000;
    const double position_bits = 8.0 * static_cast<double>(bytes.size() - 5 - 4 * k) / static_cast<double>(k);
    MESSAGE(spec_name << ": " << position_bits << " position bits per kept value");
    CHECK(position_bits <= (rice ? 10.0 : 2.0));  // ~log2(n/k) + 2 for Rice; n/k for the bitmap
  }
}

TEST_CASE("topk decoder: count, tag, positions and values are all checked") {
  const auto c = make_compressor(parse_codec_spec("topk:k=3"));
  std::vector<float> v(200, 0.0f);
  v[10] = 5;
  v[100] = -4;
  v[150] = 3;
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{}, bytes);
  REQUIRE(std::to_integer<int>(bytes[4]) > 0);  // Rice
  std::vector<float> out(200);
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  CHECK(out == v);
  auto decode_with = [&](std::size_t at, std::byte value) {
    std::vector<std::byte> b = bytes;
    b[at] = value;
    return c->decode(b, codec_context{}, out).code();
  };
  CHECK(decode_with(0, std::byte{201}) == errc::corrupt);  // made for 201 values
  CHECK(decode_with(4, std::byte{33}) == errc::corrupt);   // unknown coding tag
  CHECK(decode_with(8, std::byte{0xFF}) == errc::corrupt);  // value 0: 5.0 = 0x40A00000 -> 0xFFA00000, NaN
  CHECK(decode_with(bytes.size() - 1, bytes.back() | std::byte{0x80}) == errc::corrupt);  // a padding bit
  // The right bytes for another count.
  std::vector<float> fewer(199), more(201);
  CHECK(c->decode(bytes, codec_context{}, fewer).code() == errc::corrupt);
  CHECK(c->decode(bytes, codec_context{}, more).code() == errc::corrupt);
}

TEST_CASE("topk and randk parameters: ratio or k, canonical forms, errors") {
  CHECK(make_compressor(parse_codec_spec("topk"))->describe() == "topk:ratio=0.01");
  CHECK(make_compressor(parse_codec_spec("topk:ratio=0.1"))->describe() == "topk:ratio=0.1");
  CHECK(make_compressor(parse_codec_spec("topk:ratio=1e-3"))->describe() == "topk:ratio=0.001");
  CHECK(make_compressor(parse_codec_spec("topk:k=100"))->describe() == "topk:k=100");
  for (const char* spec : {"topk", "topk:ratio=0.3333", "topk:k=7", "randk", "randk:k=3,scaled=false",
                           "randk:ratio=0.05,scaled=true"}) {
    const auto c = make_compressor(parse_codec_spec(spec));
    const auto again = make_compressor(parse_codec_spec(c->describe()));
    CHECK(again->describe() == c->describe());
    CHECK(again->params_tag() == c->params_tag());
  }
  for (const char* bad : {"topk:ratio=0", "topk:ratio=1.5", "topk:ratio=-0.1", "topk:ratio=nan", "topk:ratio=inf",
                          "topk:ratio=0.1x", "topk:k=0", "topk:k=0.5", "topk:k=5,ratio=0.1", "topk:K=5",
                          "randk:scaled=yes", "randk:ratio=2"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(make_compressor(parse_codec_spec(bad)), config_error);
  }
  CHECK(keep_count{.k = 0, .ratio = 0.07}.of(100) == 7);  // 0.07 * 100 = 7.000000000000001
  CHECK(keep_count{.k = 0, .ratio = 0.5}.of(0) == 0);
  CHECK(keep_count{.k = 9, .ratio = 0.5}.of(4) == 4);
}
