// QSGD's statistical promises, checked against exact expectations rather than loose bounds:
// for a vector v and the scales the codec chose, each coordinate decodes to one of two neighbours
// lo_i < hi_i with P(hi_i) = p_i = frac(s|v_i|/S), so E||Q(v)-v||^2, its variance and E[nnz] are
// computable exactly. The tests check (1) that those exact values obey the paper's bounds, and
// (2) that the codec's empirical averages over many iterations (fresh Philox streams) match them.
// All seeds are fixed; each tolerance below says how unlikely a false failure would be with any seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.hpp"

using namespace qgossip;

namespace {

struct named_vector {
  std::string name;
  std::vector<float> v;
};

std::vector<named_vector> test_vectors(std::size_t n) {
  std::mt19937 gen(4242);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<named_vector> out;
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  out.push_back({"dense gaussian", v});
  for (float& x : v) x = (gen() % 2 ? 1.0f : -1.0f) * expo(gen);
  out.push_back({"laplace", v});
  for (float& x : v) x = cauchy(gen);
  out.push_back({"cauchy", v});
  for (std::size_t i = 0; i < n; ++i) v[i] = (gen() % 20 == 0) ? normal(gen) : 0.0f;
  out.push_back({"sparse 5%", v});
  std::fill(v.begin(), v.end(), 0.0f);
  v[n / 3] = -2.5f;
  out.push_back({"one-hot", v});
  std::fill(v.begin(), v.end(), 0.37f);
  out.push_back({"constant", v});
  std::fill(v.begin(), v.end(), 0.0f);
  out.push_back({"zero", v});
  return out;
}

// The exact distribution of one encode+decode, per coordinate (see the file comment).
struct exact_model {
  std::vector<double> lo, hi, p;  // signed neighbours and P(hi)
  std::vector<double> slack;      // how far p may be off: the 2^-24 grid of u and the rounding of x + u
  double error = 0;               // E||Q(v) - v||^2
  double error_var = 0;           // Var ||Q(v) - v||^2
  double error_slack = 0;
  double nnz = 0, nnz_var = 0;
};

exact_model model_of(const std::vector<float>& v, const std::vector<std::byte>& payload, std::uint32_t levels,
                     std::size_t bucket) {
  const std::size_t n = v.size();
  const std::size_t d = (bucket == 0 || bucket > n) ? n : bucket;
  exact_model m;
  m.lo.resize(n), m.hi.resize(n), m.p.resize(n), m.slack.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    float S;
    std::memcpy(&S, payload.data() + 4 * (i / d), 4);  // the payload starts with the bucket scales
    const float a = std::fabs(v[i]);
    double lo = 0, hi = 0, p = 0, slack = 0;
    if (S > 0) {
      const float s = static_cast<float>(levels);
      const float x =
          (S >= 0x1p-100f && S <= 0x1p100f) ? a * (s / S) : (a / S) * s;  // kernels/cpu/qsgd_format.hpp
      const float l = std::floor(x);
      const float step = S / static_cast<float>(levels);
      lo = std::min(l * step, FLT_MAX);
      hi = l < levels ? std::min((l + 1) * step, FLT_MAX) : lo;
      p = l < levels ? double(x) - l : 0.0;
      slack = 0x1p-24 + std::nextafter(x, 2 * x + 1) - x;
    }
    const double sign = v[i] < 0 ? -1 : 1;
    m.lo[i] = sign * lo, m.hi[i] = sign * hi, m.p[i] = p, m.slack[i] = slack;
    const double e_lo = (lo - a) * (lo - a), e_hi = (hi - a) * (hi - a);
    const double e = p * e_hi + (1 - p) * e_lo;
    m.error += e;
    m.error_var += p * e_hi * e_hi + (1 - p) * e_lo * e_lo - e * e;
    m.error_slack += slack * std::fabs(e_hi - e_lo);
    const double nz = lo > 0 ? 1.0 : (hi > 0 ? p : 0.0);
    m.nnz += nz;
    m.nnz_var += nz * (1 - nz);
  }
  return m;
}

double norm2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return s;
}

std::string spec_of(std::uint32_t levels, std::size_t bucket, const char* norm) {
  return "qsgd:levels=" + std::to_string(levels) + ",bucket=" + std::to_string(bucket) + ",norm=" + norm;
}

}  // namespace

TEST_CASE("QSGD is unbiased: the mean of many decodes converges to v, coordinate by coordinate" * doctest::test_suite("statistics")) {
  // T decodes with independent streams (iteration t). Q_i takes two values lo_i, hi_i (w_i apart), so
  // by Hoeffding P(|mean_i - E Q_i| >= c w_i / sqrt(T)) <= 2 exp(-2 c^2); c = 3.5 gives 4.6e-11 per
  // coordinate, < 1e-6 for all coordinates of all cases together. Deterministic rounding (to the
  // nearest level) is off by ~w_i/4 on average, 3x the tolerance at T = 2000: it would fail.
  constexpr std::size_t kN = 1000;
  constexpr int kTrials = 2000;
  constexpr double kC = 3.5;
  for (const named_vector& tv : test_vectors(kN)) {
    if (tv.name == "zero" || tv.name == "one-hot") continue;  // no randomness to test (exact below)
    for (std::uint32_t levels : {1u, 7u}) {
      for (const char* norm : {"l2", "max"}) {
        const std::string spec = spec_of(levels, 256, norm);
        CAPTURE(tv.name);
        CAPTURE(spec);
        const auto c = make_compressor(parse_codec_spec(spec));
        std::vector<double> sum(kN, 0.0);
        std::vector<std::byte> bytes;
        std::vector<float> out(kN);
        for (int t = 0; t < kTrials; ++t) {
          bytes.clear();
          c->encode(tv.v, codec_context{.seed = 11, .rank = 1, .iteration = std::uint64_t(t), .stream = 0},
                    bytes);
          REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
          for (std::size_t i = 0; i < kN; ++i) sum[i] += out[i];
        }
        const exact_model m = model_of(tv.v, bytes, levels, 256);  // scales do not depend on t
        double dist2 = 0;
        int failures = 0;
        for (std::size_t i = 0; i < kN; ++i) {
          const double mean = sum[i] / kTrials;
          const double w = std::fabs(m.hi[i] - m.lo[i]);
          const double tol =
              kC * w / std::sqrt(double(kTrials)) + 2 * m.slack[i] * w + 1e-6 * std::fabs(tv.v[i]);
          if (std::fabs(mean - tv.v[i]) > tol && ++failures <= 3)
            FAIL_CHECK("coordinate " << i << ": v=" << tv.v[i] << " mean=" << mean << " tol=" << tol);
          dist2 += (mean - tv.v[i]) * (mean - tv.v[i]);
        }
        CHECK(failures == 0);
        // In aggregate: E||mean - v||^2 = E||Q(v) - v||^2 / T <= bound ||v||^2 / T. For the dense
        // vectors the sum has >= 1000 independent terms of comparable size, so its sd is ~5% of its
        // mean and a factor k = 2 is > 20 sd away.
        if (tv.name == "dense gaussian" || tv.name == "laplace")
          CHECK(dist2 <= 2 * c->relative_error_bound(kN) * norm2(tv.v) / kTrials);
      }
    }
  }
}

TEST_CASE("QSGD's error: E||Q(v)-v||^2 <= min(d/(4s^2), sqrt(d)/s) ||v||^2, and the codec realizes it" * doctest::test_suite("statistics")) {
  // (1) The exact expectation obeys the bound the codec reports (which is the paper's
  //     min(d/s^2, sqrt(d)/s) with the factor 1/4 of p(1-p) <= 1/4 kept; so the paper's holds too).
  // (2) The average of T = 300 measured errors is within 6 sd (sd = sqrt(Var/T), exact) of the
  //     expectation: false-failure probability ~2e-9 per case (CLT over T * n terms).
  constexpr std::size_t kN = 2000;
  constexpr int kTrials = 300;
  for (const named_vector& tv : test_vectors(kN)) {
    for (std::uint32_t levels : {1u, 3u, 7u, 127u}) {
      for (std::size_t bucket : {512u, 0u}) {
        for (const char* norm : {"l2", "max"}) {
          const std::string spec = spec_of(levels, bucket, norm);
          CAPTURE(tv.name);
          CAPTURE(spec);
          const auto c = make_compressor(parse_codec_spec(spec));
          std::vector<std::byte> bytes;
          std::vector<float> out(kN);
          double total = 0;
          for (int t = 0; t < kTrials; ++t) {
            bytes.clear();
            c->encode(tv.v, codec_context{.seed = 5, .rank = 0, .iteration = std::uint64_t(t), .stream = 3},
                      bytes);
            REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
            double e = 0;
            for (std::size_t i = 0; i < kN; ++i) e += (double(out[i]) - tv.v[i]) * (double(out[i]) - tv.v[i]);
            total += e;
          }
          const exact_model m = model_of(tv.v, bytes, levels, bucket);
          const double v2 = norm2(tv.v);
          const double bound = c->relative_error_bound(kN);
          const double d = double(bucket == 0 ? kN : bucket), s = levels;
          CHECK(bound <= std::min(d / (s * s), std::sqrt(d) / s));  // never looser than the paper
          CHECK(m.error <= bound * v2 * (1 + 1e-6));
          const double mean = total / kTrials;
          CHECK(std::fabs(mean - m.error) <=
                6 * std::sqrt(m.error_var / kTrials) + m.error_slack + 1e-12 * v2);
          if (tv.name == "zero") CHECK(total == 0.0);
        }
      }
    }
  }
}

TEST_CASE("QSGD (L2, no bucketing) sends E[nnz] <= s(s + sqrt(d)) nonzeros" * doctest::test_suite("statistics")) {
  // Exact E[nnz] against the bound, then the measured mean over T = 300 against E[nnz] within 6 sd.
  constexpr std::size_t kN = 2000;
  constexpr int kTrials = 300;
  for (const named_vector& tv : test_vectors(kN)) {
    for (std::uint32_t levels : {1u, 3u, 7u}) {
      const std::string spec = spec_of(levels, 0, "l2");
      CAPTURE(tv.name);
      CAPTURE(spec);
      const auto c = make_compressor(parse_codec_spec(spec));
      std::vector<std::byte> bytes;
      std::vector<float> out(kN);
      double total = 0;
      for (int t = 0; t < kTrials; ++t) {
        bytes.clear();
        c->encode(tv.v, codec_context{.seed = 6, .rank = 2, .iteration = std::uint64_t(t), .stream = 0},
                  bytes);
        REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
        total +=
            static_cast<double>(std::count_if(out.begin(), out.end(), [](float x) { return x != 0.0f; }));
      }
      const exact_model m = model_of(tv.v, bytes, levels, 0);
      const double s = levels;
      CHECK(m.nnz <= s * (s + std::sqrt(double(kN))));
      CHECK(std::fabs(total / kTrials - m.nnz) <= 6 * std::sqrt(m.nnz_var / kTrials) + 1e-3 * kN * 0x1p-16);
    }
  }
}
