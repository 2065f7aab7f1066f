// dither: the bytes against an element-by-element reading of the spec (indices round-trip), the
// statistics of the error (uniform on (-kappa/2, kappa/2], uncorrelated with the input, unbiased; fixed
// seeds with tolerances derived below), buckets and layers, the shared-seed decode, and the decoder.
#include "algorithms/compress/dither.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/errors.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/dither.hpp"
#include "kernels/cpu/philox.hpp"

using namespace qgossip;

namespace {

std::vector<float> gaussian(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::unique_ptr<dither_compressor> make(const char* spec, const layer_bounds& layers = {}) {
  std::unique_ptr<compressor> c = make_compressor(parse_codec_spec(spec), layers);
  return std::unique_ptr<dither_compressor>(dynamic_cast<dither_compressor*>(c.release()));
}

std::vector<std::byte> encode(const compressor& c, std::span<const float> v, const codec_context& ctx) {
  std::vector<std::byte> out;
  c.encode(v, ctx, out);
  return out;
}

std::vector<float> round_trip(const compressor& c, std::span<const float> v, const codec_context& ctx) {
  const std::vector<std::byte> bytes = encode(c, v, ctx);
  std::vector<float> out(v.size());
  const status st = c.decode(bytes, ctx, out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return out;
}

codec_context ctx_at(std::uint64_t iteration) {
  return codec_context{.seed = 5, .rank = 2, .iteration = iteration, .stream = 0};
}

// kappa of the bucket holding element i, read from the payload.
float kappa_of(const std::vector<std::byte>& bytes, const std::vector<std::size_t>& bounds, std::size_t i) {
  const std::size_t b =
      static_cast<std::size_t>(std::upper_bound(bounds.begin(), bounds.end(), i) - bounds.begin()) - 1;
  float kappa;
  std::memcpy(&kappa, bytes.data() + 4 * b, 4);
  return kappa;
}

}  // namespace

TEST_CASE("bytes and decoded values match the spec element by element (the indices round-trip)") {
  struct setup {
    const char* spec;
    layer_bounds layers;
    std::size_t n;
  };
  for (const setup& s : {setup{"dither:K=1", {}, 1000}, setup{"dither:K=7,bucket=100", {}, 1001},
                         setup{"dither:K=127,bucket=512", {0, 700, 1000}, 1000},
                         setup{"dither:K=5,bucket=3", {0, 0, 10, 11}, 11}, setup{"dither:K=300", {}, 2000},
                         setup{"dither:K=32767,bucket=64", {}, 333}}) {
    const std::string spec_name(s.spec);
    CAPTURE(spec_name);
    const auto c = make(s.spec, s.layers);
    std::vector<float> v = gaussian(s.n, 21);
    for (std::size_t i = 0; i < v.size(); i += 13) v[i] *= 1e-30f;  // tiny values
    v[s.n / 2] = 0.0f;
    const std::uint32_t K = c->options().levels;
    const codec_context ctx = ctx_at(4);
    const kernels::philox_stream rng = kernels::philox_stream::make(5, 2, 4, 0);
    const std::vector<std::size_t> bounds = c->bucket_bounds(s.n);
    const std::size_t head = 4 * (bounds.size() - 1);
    std::vector<std::byte> expect(head + kernels::packed_size(s.n, c->bits()));
    std::vector<std::uint16_t> codes(s.n);
    std::vector<float> values(s.n);
    for (std::size_t b = 0; b + 1 < bounds.size(); ++b) {
      float max = 0.0f;
      for (std::size_t i = bounds[b]; i < bounds[b + 1]; ++i) max = std::max(max, std::fabs(v[i]));
      const float kappa = max / static_cast<float>(K);
      std::memcpy(expect.data() + 4 * b, &kappa, 4);
      for (std::size_t i = bounds[b]; i < bounds[b + 1]; ++i) {
        const float u = rng.uniform(i);
        long q = 0;
        if (kappa > 0.0f) {
          const float y = v[i] / kappa;
          const float t = y + u;
          q = std::clamp(static_cast<long>(std::floor(t)), -static_cast<long>(K), static_cast<long>(K));
        }
        codes[i] = static_cast<std::uint16_t>(q + K);
        const double x = double{kappa} * (static_cast<double>(q) - (double{u} - 0.5));
        values[i] = kappa > 0.0f ? static_cast<float>(x) : 0.0f;
      }
    }
    kernels::pack_bits(codes, c->bits(), std::span(expect).subspan(head));
    const std::vector<std::byte> bytes = encode(*c, v, ctx);
    CHECK(bytes == expect);
    CHECK(bytes.size() == c->max_encoded_bytes(s.n));
    std::vector<float> out(s.n);
    REQUIRE(c->decode(bytes, ctx, out).is_ok());
    CHECK(std::memcmp(out.data(), values.data(), 4 * s.n) == 0);
  }
}

TEST_CASE("code widths and sizes: bit_width(2K) bits per index plus a float per bucket") {
  CHECK(make("dither:K=1")->bits() == 2);
  CHECK(make("dither:K=7")->bits() == 4);
  CHECK(make("dither:K=8")->bits() == 5);
  CHECK(make("dither:K=127")->bits() == 8);
  CHECK(make("dither:K=32767")->bits() == 16);
  CHECK(make("dither:K=7")->max_encoded_bytes(1001) == 4 + 501);
  CHECK(make("dither:K=7,bucket=512")->max_encoded_bytes(1025) == 4 * 3 + 513);
  CHECK(make("dither")->max_encoded_bytes(0) == 0);
}

TEST_CASE("buckets never cross layers; bucket=0 is one kappa per layer") {
  const layer_bounds layers{0, 700, 700, 1000};
  CHECK(make("dither:bucket=512", layers)->bucket_bounds(1000) ==
        std::vector<std::size_t>{0, 512, 700, 1000});
  CHECK(make("dither", layers)->bucket_bounds(1000) == std::vector<std::size_t>{0, 700, 1000});
  CHECK(make("dither:bucket=300")->bucket_bounds(700) == std::vector<std::size_t>{0, 300, 600, 700});
  CHECK(make("dither")->bucket_bounds(0) == std::vector<std::size_t>{0});
  CHECK(make("dither", layers)->params_tag() != make("dither")->params_tag());
  // The layered codec sizes buckets by its layers, and refuses vectors of another size.
  const auto c = make("dither", layers);
  std::vector<float> wrong(999);
  std::vector<std::byte> out;
  CHECK_THROWS_AS(c->encode(wrong, codec_context{}, out), invariant_error);
  const std::vector<float> v = gaussian(1000, 1);
  const std::vector<std::byte> bytes = encode(*c, v, codec_context{});
  CHECK(c->decode(bytes, codec_context{}, wrong).code() == errc::corrupt);
}

TEST_CASE("the error is uniform on (-kappa/2, kappa/2] and uncorrelated with the input") {
  // n i.i.d. errors (each value has its own dither), normalized by their bucket's kappa: e in (-1/2, 1/2].
  // Tolerances, each a false-failure chance below ~1e-8 for the fixed seeds:
  //   max |e| <= 1/2 + 1e-5 (exact up to float rounding of x/kappa and the clamp, ~K 2^-23);
  //   mean: sd 1/sqrt(12 n), allow 6 sd;  variance: E e^2 = 1/12, sd of e^2 is sqrt(1/80 - 1/144) = 0.0745,
  //   allow 6 sd / sqrt(n);  Kolmogorov-Smirnov: by the DKW inequality P(D > eps) <= 2 exp(-2 n eps^2),
  //   eps = sqrt(ln(2e9) / (2n));  correlation with x, |x| and the neighbour's error: sqrt(n) r is about
  //   N(0, 1) for independent samples, allow 6 / sqrt(n).
  const std::size_t n = 200000;
  for (const char* spec : {"dither:K=7", "dither:K=1,bucket=512", "dither:K=127,bucket=64"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make(spec);
    std::vector<float> v = gaussian(n, 31);
    for (std::size_t i = 0; i < n; i += 2) v[i] = std::pow(v[i], 3.0f);  // mix in a heavier-tailed half
    const codec_context ctx = ctx_at(77);
    const std::vector<std::byte> bytes = encode(*c, v, ctx);
    std::vector<float> out(n);
    REQUIRE(c->decode(bytes, ctx, out).is_ok());
    const std::vector<std::size_t> bounds = c->bucket_bounds(n);
    std::vector<double> e(n);
    double max_abs = 0, sum = 0, sum2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double kappa = kappa_of(bytes, bounds, i);
      REQUIRE(kappa > 0.0);
      e[i] = (double{out[i]} - double{v[i]}) / kappa;
      max_abs = std::max(max_abs, std::fabs(e[i]));
      sum += e[i];
      sum2 += e[i] * e[i];
    }
    const double nd = static_cast<double>(n);
    CHECK(max_abs <= 0.5 + 1e-5);
    CHECK(std::fabs(sum / nd) <= 6.0 / std::sqrt(12.0 * nd));
    CHECK(std::fabs(sum2 / nd - 1.0 / 12.0) <= 6.0 * 0.0745 / std::sqrt(nd));
    std::vector<double> sorted = e;
    std::sort(sorted.begin(), sorted.end());
    double ks = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double cdf = std::clamp(sorted[i] + 0.5, 0.0, 1.0);
      ks = std::max({ks, std::fabs(cdf - static_cast<double>(i) / nd),
                     std::fabs(cdf - static_cast<double>(i + 1) / nd)});
    }
    CHECK(ks <= std::sqrt(std::log(2e9) / (2.0 * nd)));
    const auto correlation = [&](auto&& a, auto&& b, std::size_t m) {
      double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
      for (std::size_t i = 0; i < m; ++i) {
        const double x = a(i), y = b(i);
        sa += x;
        sb += y;
        saa += x * x;
        sbb += y * y;
        sab += x * y;
      }
      const double md = static_cast<double>(m);
      return (sab / md - sa / md * sb / md) /
             std::sqrt((saa / md - sa / md * sa / md) * (sbb / md - sb / md * sb / md));
    };
    const auto err = [&](std::size_t i) { return e[i]; };
    const double r_x = correlation([&](std::size_t i) { return double{v[i]}; }, err, n);
    const double r_abs = correlation([&](std::size_t i) { return std::fabs(double{v[i]}); }, err, n);
    const double r_next = correlation(
        err, [&](std::size_t i) { return e[i + 1]; }, n - 1);
    MESSAGE(std::string(spec) << ": mean " << sum / nd << ", var " << sum2 / nd << " (1/12 = " << 1.0 / 12
                              << "), KS " << ks << ", corr(e, x) " << r_x << ", corr(e, |x|) " << r_abs
                              << ", corr(e_i, e_i+1) " << r_next);
    CHECK(std::fabs(r_x) <= 6.0 / std::sqrt(nd));
    CHECK(std::fabs(r_abs) <= 6.0 / std::sqrt(nd));
    CHECK(std::fabs(r_next) <= 6.0 / std::sqrt(nd));
  }
}

TEST_CASE("unbiased per coordinate (Hoeffding, 4000 trials)" * doctest::test_suite("statistics")) {
  // A decoded value lies in [x - kappa/2, x + kappa/2]: P(|mean - x| >= t) <= 2 exp(-2 T t^2 / kappa^2).
  // t = kappa sqrt(ln(2 m / 1e-9) / (2T)) for m coordinates keeps any false failure below 1e-9.
  constexpr int kTrials = 4000;
  const std::size_t n = 48;
  for (const char* spec : {"dither:K=1", "dither:K=3,bucket=16"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make(spec);
    const std::vector<float> v = gaussian(n, 41);
    std::vector<double> mean(n, 0.0);
    for (int t = 0; t < kTrials; ++t) {
      const std::vector<float> out = round_trip(*c, v, ctx_at(t));
      for (std::size_t i = 0; i < n; ++i) mean[i] += out[i] / kTrials;
    }
    const std::vector<std::byte> bytes = encode(*c, v, ctx_at(0));
    const std::vector<std::size_t> bounds = c->bucket_bounds(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double tol =
          kappa_of(bytes, bounds, i) * std::sqrt(std::log(2.0 * 2 * n / 1e-9) / (2.0 * kTrials));
      CAPTURE(i);
      CHECK(std::fabs(mean[i] - v[i]) <= tol);
    }
  }
}

TEST_CASE("relative_error_bound = longest bucket / (12 K^2), and the measured error stays below it") {
  const auto c = make("dither:K=7,bucket=512");
  CHECK(c->unbiased());
  CHECK(c->relative_error_bound(100000) == doctest::Approx(512.0 / (12 * 49)).epsilon(1e-5));
  CHECK(make("dither:K=7")->relative_error_bound(1000) == doctest::Approx(1000.0 / (12 * 49)).epsilon(1e-5));
  CHECK(make("dither:K=7", {0, 10, 1000})->relative_error_bound(1000) ==
        doctest::Approx(990.0 / (12 * 49)).epsilon(1e-5));
  const std::vector<float> v = gaussian(10000, 2);
  double norm2 = 0, err = 0;
  for (float x : v) norm2 += double{x} * x;
  for (int t = 0; t < 20; ++t) {
    const std::vector<float> out = round_trip(*c, v, ctx_at(t));
    for (std::size_t i = 0; i < v.size(); ++i) err += (double{out[i]} - v[i]) * (double{out[i]} - v[i]);
  }
  CHECK(err / 20 / norm2 <= c->relative_error_bound(v.size()));
}

TEST_CASE("the receiver needs the sender's ctx: another ctx gives other (finite) values") {
  const auto c = make("dither:K=7");
  const std::vector<float> v = gaussian(1000, 3);
  const std::vector<std::byte> bytes = encode(*c, v, ctx_at(8));
  std::vector<float> right(v.size()), wrong(v.size());
  REQUIRE(c->decode(bytes, ctx_at(8), right).is_ok());
  REQUIRE(c->decode(bytes, ctx_at(9), wrong).is_ok());
  CHECK(right != wrong);
  for (float x : wrong) CHECK(std::isfinite(x));
  // Another rank, seed or stream changes the dither too (the encoder draws it from the same stream).
  CHECK(encode(*c, v, codec_context{.seed = 5, .rank = 3, .iteration = 8, .stream = 0}) != bytes);
}

TEST_CASE("all-zero buckets: kappa 0, every index 0, decoded +0") {
  const auto c = make("dither:K=7,bucket=4");
  const std::vector<float> v{0, 0, -0.0f, 0, 1, -2, 0, 3};
  const std::vector<float> out = round_trip(*c, v, ctx_at(1));
  for (std::size_t i = 0; i < 4; ++i) CHECK(std::bit_cast<std::uint32_t>(out[i]) == 0u);
  CHECK(std::fabs(out[5] + 2.0f) <= 3.0f / 7 / 2 * 1.0001f);
}

TEST_CASE("the decoder rejects bad kappas, out-of-range indices, stray indices in zero buckets, padding") {
  const auto c = make("dither:K=5,bucket=4");  // 4-bit codes, 0..10 valid
  const std::vector<float> v{1, -2, 3, 0.5f, 0, 0, 0, 0, 7};
  const std::vector<std::byte> good = encode(*c, v, ctx_at(2));  // 3 kappas (12 bytes) + 5 bytes of codes
  REQUIRE(good.size() == 12 + 5);
  std::vector<float> out(v.size());
  REQUIRE(c->decode(good, ctx_at(2), out).is_ok());
  const auto with_kappa = [&](std::size_t b, std::uint32_t bits) {
    std::vector<std::byte> bad = good;
    std::memcpy(bad.data() + 4 * b, &bits, 4);
    return bad;
  };
  for (std::uint32_t bits : {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0xbf800000u}) {
    const status st = c->decode(with_kappa(0, bits), ctx_at(2), out);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find("bucket 0") != std::string::npos);
  }
  SUBCASE("an index code above 2K") {
    std::vector<std::byte> bad = good;
    bad[12] = std::byte{0xBB};  // codes 11 and 11
    const status st = c->decode(bad, ctx_at(2), out);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find("element 0") != std::string::npos);
  }
  SUBCASE("a nonzero index in a bucket whose kappa is 0") {
    std::vector<std::byte> bad = good;
    bad[14] = std::byte{0x56};  // elements 4, 5: codes 6 and 5 (K = 5 is the only valid one)
    const status st = c->decode(bad, ctx_at(2), out);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find("element 4") != std::string::npos);
  }
  SUBCASE("nonzero padding") {
    std::vector<std::byte> bad = good;
    bad[16] |= std::byte{0x80};  // the high nibble of the last byte is padding (9 codes)
    CHECK(c->decode(bad, ctx_at(2), out).code() == errc::corrupt);
  }
  SUBCASE("a kappa whose products overflow decodes to finite, clamped values") {
    const std::vector<std::byte> huge = with_kappa(0, 0x7f7fffffu);  // FLT_MAX
    REQUIRE(c->decode(huge, ctx_at(2), out).is_ok());
    for (float x : out) CHECK(std::isfinite(x));
  }
}

TEST_CASE("spec: canonical describe(), round trip, errors; entropy of the indices") {
  CHECK(make("dither")->describe() == "dither:K=127,bucket=0");
  CHECK(make("dither:K=7,bucket=512")->describe() == "dither:K=7,bucket=512");
  for (const char* spec : {"dither:K=1", "dither:K=7,bucket=512", "dither:K=32767,bucket=1"}) {
    const auto c = make(spec);
    CHECK(make(c->describe().c_str())->params_tag() == c->params_tag());
  }
  for (const char* bad : {"dither:K=0", "dither:K=32768", "dither:K=-1", "dither:K=1.5", "dither:bucket=-1",
                          "dither:k=7", "dither:levels=7"}) {
    const std::string bad_spec(bad);
    CAPTURE(bad_spec);
    CHECK_THROWS_AS(make_compressor(parse_codec_spec(bad)), config_error);
  }
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("dither"), layer_bounds{2, 9}), config_error);
  const auto c = make("dither:K=7");
  const std::vector<float> v = gaussian(100000, 4);
  const std::vector<std::byte> bytes = encode(*c, v, ctx_at(3));
  const double h = c->entropy_bits_per_value(bytes, v.size(), ctx_at(3));
  MESSAGE("dither:K=7 on a gaussian: " << c->bits() << " bits/index, entropy " << h << " bits/index");
  CHECK(h > 1.0);
  CHECK(h <= 4.0);
}
