// NUQSGD: parameters, golden bytes, the level structure, unbiasedness, the error bound, the Elias
// payload, and its variance against QSGD's at the same number of nonzero levels.
//
// As in qsgd_statistics_test.cpp, the statistics are checked against EXACT expectations: given v
// and the norm the codec chose, coordinate i decodes to one of two neighbours lo_i <= |v_i| <= hi_i
// (times its sign) with a probability the format fixes exactly (kernels/cpu/nuqsgd.hpp), so
// E||Q(v)-v||^2 and its variance are computed, not estimated. Seeds are fixed; each tolerance says
// how unlikely a false failure would be under any seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/nuqsgd.hpp"
#include "core/errors.hpp"
#include "tests/compress/test_vectors.hpp"

using namespace qgossip;

namespace {

using testing::named_vector;

std::vector<named_vector> test_vectors(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<named_vector> out;
  testing::append_random_family(out, n, gen);
  std::vector<float> v(n);
  std::fill(v.begin(), v.end(), 0.37f);
  out.push_back({"constant", v});
  std::fill(v.begin(), v.end(), 0.0f);
  v[n / 3] = -2.5f;
  out.push_back({"one-hot", v});
  std::fill(v.begin(), v.end(), 0.0f);
  out.push_back({"zero", v});
  return out;
}

double norm2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return s;
}

std::size_t per_bucket(std::size_t bucket, std::size_t n) { return (bucket == 0 || bucket > n) ? n : bucket; }

float scale_of(const std::vector<std::byte>& payload, std::size_t bucket_index) {
  float s;
  std::memcpy(&s, payload.data() + 4 * bucket_index, 4);
  return s;
}

// P(u < p) for the codecs' u = k 2^-24, k uniform in 0 .. 2^24 - 1.
double p_below(double p) { return std::min(1.0, std::ceil(p * 0x1p24) * 0x1p-24); }

// The exact two-point distribution of each decoded coordinate, and the moments of the error.
struct exact_model {
  std::vector<double> lo, hi, p;  // signed outcomes and P(hi)
  double error = 0, error_var = 0;
};

void add_coordinate(exact_model& m, float v, double lo, double hi, double p) {
  const double a = std::fabs(double(v)), sign = std::signbit(v) ? -1.0 : 1.0;
  m.lo.push_back(sign * lo);
  m.hi.push_back(sign * hi);
  m.p.push_back(p);
  const double e_lo = (lo - a) * (lo - a), e_hi = (hi - a) * (hi - a);
  const double e = p * e_hi + (1 - p) * e_lo;
  m.error += e;
  m.error_var += p * e_hi * e_hi + (1 - p) * e_lo * e_lo - e * e;
}

// kernels/cpu/nuqsgd.hpp, restated independently.
exact_model nuqsgd_model(const std::vector<float>& v, const std::vector<std::byte>& payload, int s,
                         std::size_t bucket) {
  const std::size_t d = per_bucket(bucket, v.size());
  exact_model m;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float S = scale_of(payload, i / d);
    double lo = 0, hi = 0, p = 0;
    if (S > 0) {
      const float r = std::fabs(v[i]) / S;
      int e = 0;
      const float mant = std::frexp(r, &e);  // r = mant 2^e, mant in [1/2, 1): r in [2^(e-1), 2^e)
      if (r >= std::ldexp(1.0f, -s)) {
        const float lo_level = std::ldexp(1.0f, e - 1);
        lo = S * lo_level;                      // fl(S 2^k), as the decoder computes it
        hi = r == 1.0f ? lo : S * (2 * lo_level);
        p = r == 1.0f ? 0.0 : p_below(2.0 * mant - 1.0);
      } else {
        lo = 0;
        hi = S * std::ldexp(1.0f, -s);
        p = p_below(double(r) * std::ldexp(1.0, s));
      }
    }
    add_coordinate(m, v[i], lo, hi, p);
  }
  return m;
}

// kernels/cpu/qsgd_format.hpp (L2 norm), restated: x = fl(|v| fl(s/S)) for normal-range S.
exact_model qsgd_model(const std::vector<float>& v, const std::vector<std::byte>& payload, std::uint32_t levels,
                       std::size_t bucket) {
  const std::size_t d = per_bucket(bucket, v.size());
  exact_model m;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float S = scale_of(payload, i / d);
    double lo = 0, hi = 0, p = 0;
    if (S > 0) {
      REQUIRE((S >= 0x1p-100f && S <= 0x1p100f));
      const float s = static_cast<float>(levels);
      const float x = std::fabs(v[i]) * (s / S);
      const float l = std::floor(x);
      const float step = S / s;
      lo = l * step;
      hi = l < s ? (l + 1) * step : lo;
      p = l < s ? double(x) - l : 0.0;  // up to the 2^-24 grid of u: irrelevant for the ratios here
    }
    add_coordinate(m, v[i], lo, hi, p);
  }
  return m;
}

std::vector<std::byte> encode(const compressor& c, const std::vector<float>& v, const codec_context& ctx) {
  std::vector<std::byte> out;
  c.encode(v, ctx, out);
  return out;
}

// Mean of ||C(v) - v||^2 over T encodes with fresh streams.
double measured_error(const compressor& c, const std::vector<float>& v, int trials, std::uint32_t stream) {
  std::vector<float> out(v.size());
  double total = 0;
  for (int t = 0; t < trials; ++t) {
    const std::vector<std::byte> bytes =
        encode(c, v, codec_context{.seed = 21, .rank = 0, .iteration = std::uint64_t(t), .stream = stream});
    REQUIRE(c.decode(bytes, codec_context{}, out).is_ok());
    for (std::size_t i = 0; i < v.size(); ++i) total += (double(out[i]) - v[i]) * (double(out[i]) - v[i]);
  }
  return total / trials;
}

}  // namespace

TEST_CASE("nuqsgd: parameters and canonical form") {
  const auto c = make_compressor(parse_codec_spec("nuqsgd"));
  CHECK(c->describe() == "nuqsgd:s=3,bucket=8192");
  CHECK(c->name() == "nuqsgd");
  CHECK(c->id() == codec_id::nuqsgd);
  CHECK(c->unbiased());
  const auto e = make_compressor(parse_codec_spec("nuqsgd:s=3,bucket=8192"));
  CHECK(e->params_tag() == c->params_tag());
  CHECK(make_compressor(parse_codec_spec("nuqsgd:s=5,bucket=0"))->describe() == "nuqsgd:s=5,bucket=0");
  CHECK(make_compressor(parse_codec_spec("nuqsgd:s=4"))->params_tag() != c->params_tag());
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("nuqsgd:s=0")), config_error);
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("nuqsgd:s=127")), config_error);
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("nuqsgd:levels=3")), config_error);
  CHECK_NOTHROW(make_compressor(parse_codec_spec("nuqsgd:s=126")));
}

TEST_CASE("relative_error_bound: min(d/16, 1/8 + min(d/4^(s+1), sqrt(d)/2^s)), d = min(bucket, n)") {
  const auto c = make_compressor(parse_codec_spec("nuqsgd:s=3,bucket=8192"));
  CHECK(c->relative_error_bound(1u << 20) == doctest::Approx(0.125 + std::sqrt(8192.0) / 8));  // 11.44
  CHECK(c->relative_error_bound(100) == doctest::Approx(0.125 + 100.0 / 256));
  CHECK(c->relative_error_bound(1) == doctest::Approx(1.0 / 16));
  CHECK(c->relative_error_bound(0) == 0.0);
}

TEST_CASE("golden bytes: levels hit exactly decode losslessly") {
  // v = [0.5, -0.5, 0.5, -0.5]: norm 1, r = 1/2 = level index t = s exactly (s = 2), whatever the
  // stream. Per value: gap 1 "0", sign, Elias(2) "100"; then the end marker "0": 21 bits, and 3
  // padding 1s.
  const auto c = make_compressor(parse_codec_spec("nuqsgd:s=2,bucket=0"));
  const std::vector<float> v = {0.5f, -0.5f, 0.5f, -0.5f};
  const std::vector<std::byte> bytes = encode(*c, v, codec_context{.seed = 77});
  const std::vector<std::byte> golden = {std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0x3F},
                                         std::byte{0xC4}, std::byte{0x10}, std::byte{0xE3}};
  CHECK(bytes == golden);
  std::vector<float> out(4);
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  CHECK(out == v);
}

TEST_CASE("every decoded value is one of the two levels around r, with v's sign") {
  for (const char* spec : {"nuqsgd:s=1,bucket=0", "nuqsgd:s=3,bucket=100", "nuqsgd:s=8,bucket=7", "nuqsgd:s=126,bucket=50"}) {
    CAPTURE(spec);
    const auto c = make_compressor(parse_codec_spec(spec));
    const auto& q = dynamic_cast<const nuqsgd_compressor&>(*c);
    for (const named_vector& tv : test_vectors(3000, 8)) {
      CAPTURE(tv.name);
      const std::vector<std::byte> bytes = encode(*c, tv.v, codec_context{.seed = 2});
      CHECK(bytes.size() <= c->max_encoded_bytes(tv.v.size()));
      std::vector<float> out(tv.v.size());
      REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
      const exact_model m = nuqsgd_model(tv.v, bytes, static_cast<int>(q.options().s), q.options().bucket);
      int bad = 0;
      for (std::size_t i = 0; i < out.size(); ++i) {
        const bool is_lo = double(out[i]) == m.lo[i], is_hi = double(out[i]) == m.hi[i];
        if (!(is_lo || is_hi) || (out[i] != 0 && std::signbit(out[i]) != std::signbit(tv.v[i]))) {
          if (++bad <= 3) FAIL_CHECK(i << ": v=" << tv.v[i] << " out=" << out[i] << " lo=" << m.lo[i] << " hi=" << m.hi[i]);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("NUQSGD is unbiased: the mean of many decodes converges to v, coordinate by coordinate" * doctest::test_suite("statistics")) {
  // Each coordinate takes lo_i or hi_i (w_i apart), so by Hoeffding
  // P(|mean_i - E Q_i| >= c w_i / sqrt(T)) <= 2 exp(-2c^2) = 4.6e-11 for c = 3.5: < 1e-6 over all
  // coordinates of all cases. E Q_i differs from v_i by at most 2^-24 w_i (the grid of u) plus float
  // rounding of r (1e-6 |v_i|). Rounding to the nearest level instead would be off by ~w_i/4 on
  // average, > 3x this tolerance at T = 2000.
  constexpr std::size_t kN = 1000;
  constexpr int kTrials = 2000;
  constexpr double kC = 3.5;
  for (const named_vector& tv : test_vectors(kN, 4242)) {
    if (tv.name == "zero" || tv.name == "one-hot") continue;  // exact: no randomness to average
    for (int s : {1, 3, 6}) {
      const std::string spec = "nuqsgd:s=" + std::to_string(s) + ",bucket=256";
      CAPTURE(tv.name);
      CAPTURE(spec);
      const auto c = make_compressor(parse_codec_spec(spec));
      std::vector<double> sum(kN, 0.0);
      std::vector<float> out(kN);
      std::vector<std::byte> bytes;
      for (int t = 0; t < kTrials; ++t) {
        bytes = encode(*c, tv.v, codec_context{.seed = 11, .rank = 1, .iteration = std::uint64_t(t)});
        REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
        for (std::size_t i = 0; i < kN; ++i) sum[i] += out[i];
      }
      const exact_model m = nuqsgd_model(tv.v, bytes, s, 256);
      int failures = 0;
      for (std::size_t i = 0; i < kN; ++i) {
        const double w = std::fabs(m.hi[i] - m.lo[i]);
        const double tol = kC * w / std::sqrt(double(kTrials)) + 0x1p-23 * w + 1e-6 * std::fabs(tv.v[i]);
        const double mean = sum[i] / kTrials;
        if (std::fabs(mean - tv.v[i]) > tol && ++failures <= 3)
          FAIL_CHECK("coordinate " << i << ": v=" << tv.v[i] << " mean=" << mean << " tol=" << tol);
      }
      CHECK(failures == 0);
    }
  }
}

TEST_CASE("NUQSGD's error: the exact E||Q(v)-v||^2 obeys the bound, and the codec realizes it" * doctest::test_suite("statistics")) {
  // (1) exact expectation <= relative_error_bound * ||v||^2, on the test vectors and on the
  //     near-worst case for the bound's sqrt(d) term: d = 4^(s+1) equal values, r = 2^-(s+1) each,
  //     midway in the bottom interval (expected error exactly ||v||^2, bound 1 + 1/8).
  // (2) the mean of T = 200 measured errors is within 6 sd (exact sd / sqrt(T)) of it: a false
  //     failure has probability ~2e-9 per case (CLT over T * n terms).
  constexpr int kTrials = 200;
  for (int s : {1, 2, 3, 5}) {
    std::vector<named_vector> cases = test_vectors(2048, 99);
    const std::size_t worst_d = std::size_t{1} << (2 * (s + 1));
    cases.push_back({"worst-case equal values", std::vector<float>(worst_d, 0.5f)});
    for (const named_vector& tv : cases) {
      for (std::size_t bucket : {std::size_t{512}, std::size_t{0}}) {
        const std::string spec = "nuqsgd:s=" + std::to_string(s) + ",bucket=" + std::to_string(bucket);
        CAPTURE(tv.name);
        CAPTURE(spec);
        const auto c = make_compressor(parse_codec_spec(spec));
        const std::vector<std::byte> bytes = encode(*c, tv.v, codec_context{.seed = 21, .stream = 5});
        const exact_model m = nuqsgd_model(tv.v, bytes, s, bucket);
        const double v2 = norm2(tv.v);
        const double bound = c->relative_error_bound(tv.v.size());
        CHECK(m.error <= bound * v2 * (1 + 1e-6));
        if (tv.name == "worst-case equal values" && bucket == 0)
          CHECK(m.error == doctest::Approx(v2).epsilon(1e-6));  // the bound is within 1/8 of tight here
        const double mean = measured_error(*c, tv.v, kTrials, 5);
        CHECK(std::fabs(mean - m.error) <= 6 * std::sqrt(m.error_var / kTrials) + 1e-6 * v2);
        if (tv.name == "zero") CHECK(mean == 0.0);
      }
    }
  }
}

TEST_CASE("NUQSGD has lower variance than QSGD with the same number of nonzero levels" * doctest::test_suite("statistics")) {
  // NUQSGD with s has s + 1 nonzero levels (2^-s .. 1); QSGD with levels = s + 1 has as many
  // (1/(s+1) .. 1). Both use the bucket's L2 norm. Compared: the exact E||C(v)-v||^2 of each, and
  // the measured means over T = 30 encodes (each within a few percent of its expectation at n = 8192,
  // far from the gaps below). Vectors: gaussian, and Laplace as the gradient-like heavy-tailed case
  // (real MLP gradients: `qgossip codec --gen grad`). At s = 1 the two level sets coincide
  // ({0, 1/2, 1}), so the errors must agree.
  // Ratios NUQSGD/QSGD (exact; the measured ones agree within 2%), bucket 8192: gaussian s=2 0.74,
  // s=3 0.47, s=4 0.26; laplace 0.74, 0.47, 0.25. Bucket 512: gaussian 0.70, 0.36, 0.13; laplace
  // 0.69, 0.36, 0.15. At s=2 the measured ratio sits ~0.1 below the 0.85 limit, > 10 sd of its noise.
  constexpr std::size_t kN = 8192;
  constexpr int kTrials = 30;
  for (const named_vector& tv : test_vectors(kN, 31337)) {
    if (tv.name != "gaussian" && tv.name != "laplace") continue;
    for (std::size_t bucket : {std::size_t{8192}, std::size_t{512}}) {
      for (int s : {1, 2, 3, 4}) {
        const std::string nu_spec = "nuqsgd:s=" + std::to_string(s) + ",bucket=" + std::to_string(bucket);
        const std::string q_spec = "qsgd:levels=" + std::to_string(s + 1) + ",bucket=" + std::to_string(bucket);
        CAPTURE(tv.name);
        CAPTURE(nu_spec);
        const auto nu = make_compressor(parse_codec_spec(nu_spec));
        const auto q = make_compressor(parse_codec_spec(q_spec));
        const exact_model m_nu = nuqsgd_model(tv.v, encode(*nu, tv.v, codec_context{}), s, bucket);
        const exact_model m_q = qsgd_model(tv.v, encode(*q, tv.v, codec_context{}), s + 1, bucket);
        const double ratio = m_nu.error / m_q.error;
        const double measured = measured_error(*nu, tv.v, kTrials, 1) / measured_error(*q, tv.v, kTrials, 1);
        MESSAGE(tv.name << " bucket " << bucket << " s=" << s << ": NUQSGD/QSGD error ratio " << ratio
                        << " exact, " << measured << " measured; NUQSGD rel. error " << m_nu.error / norm2(tv.v));
        if (s == 1) {
          CHECK(ratio == doctest::Approx(1.0).epsilon(1e-4));
        } else {
          CHECK(ratio < 0.8);
          CHECK(measured < 0.85);
        }
      }
    }
  }
}

TEST_CASE("payload size: bits per value on a gaussian, and the worst-case bound") {
  // E[bits] for NUQSGD is small because most r fall in the bottom interval: a nonzero costs
  // gap + sign + Elias(1) = 3 bits or so. max_encoded_bytes assumes every value at t = s + 1
  // (a true but loose bound: the unit norm allows at most 3 values above 1/2).
  const auto c = make_compressor(parse_codec_spec("nuqsgd:s=3,bucket=8192"));
  const std::vector<float> v = test_vectors(1u << 16, 5)[0].v;
  const std::vector<std::byte> bytes = encode(*c, v, codec_context{.seed = 3});
  const double bits_per_value = 8.0 * bytes.size() / v.size();
  MESSAGE("nuqsgd:s=3,bucket=8192 on a gaussian: " << bits_per_value << " bits per value, entropy "
                                                   << c->entropy_bits_per_value(bytes, v.size(), codec_context{}));
  CHECK(bits_per_value < 3.0);
  CHECK(bytes.size() <= c->max_encoded_bytes(v.size()));
  CHECK(c->max_encoded_bytes(v.size()) == 4 * 8 + ((2 + 6) * v.size() + 8 + 7) / 8);  // |Elias(4)| = 6
}

TEST_CASE("decoder faults: an index above s + 1, a negative norm, a short payload") {
  const auto c = make_compressor(parse_codec_spec("nuqsgd:s=2,bucket=0"));
  std::vector<float> out(4);
  // Norm 1.0, then gap 1 "0", sign "0", Elias(4) = "101000": index 4 > s + 1 = 3.
  // Bits 0 0 1 0 1 0 0 0, LSB-first: 0x14.
  std::vector<std::byte> p = {std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0x3F},
                              std::byte{0x14}, std::byte{0x00}};
  status st = c->decode(p, codec_context{}, out);
  CHECK(st.code() == errc::corrupt);
  CHECK(st.message().find("above s + 1") != std::string::npos);
  std::vector<std::byte> negative = {std::byte{0x00}, std::byte{0x00}, std::byte{0x80}, std::byte{0xBF},
                                     std::byte{0xC4}, std::byte{0x10}, std::byte{0xE3}};
  st = c->decode(negative, codec_context{}, out);
  CHECK(st.code() == errc::corrupt);
  CHECK(st.message().find("negative norm") != std::string::npos);
  st = c->decode(std::span(negative).first(3), codec_context{}, out);
  CHECK(st.code() == errc::corrupt);
  CHECK(st.message().find("norms") != std::string::npos);
}
