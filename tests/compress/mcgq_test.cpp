// mcgq: the sampling kernel against a literal Alg. 1, its exact invariants, unbiasedness and the error
// bound (statistical, fixed seeds, Hoeffding tolerances), layers, both codings, the accumulated-gradient
// variant (Alg. 4) and dynamic K (Alg. 3) against step-by-step oracles, parameters, and the decoder.
#include "algorithms/compress/mcgq.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "algorithms/compress/bit_stream.hpp"
#include "algorithms/compress/run_length.hpp"
#include "core/errors.hpp"
#include "kernels/cpu/mcgq.hpp"

using namespace qgossip;

namespace {

std::vector<float> gaussian(std::size_t n, std::uint32_t seed, float sigma = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<float> laplace(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = (gen() & 1) ? e(gen) : -e(gen);
  return v;
}

std::unique_ptr<mcgq_compressor> make(const char* spec, const layer_bounds& layers = {}) {
  std::unique_ptr<compressor> c = make_compressor(parse_codec_spec(spec), layers);
  return std::unique_ptr<mcgq_compressor>(dynamic_cast<mcgq_compressor*>(c.release()));
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

// Alg. 1 as printed: for each sample x_i = (xi + i)/N, scan the CDF from the last hit for the first
// P_k > x_i, and add sign(g_k) there.
std::vector<std::int32_t> literal_alg1(std::span<const float> g, std::uint64_t samples, double xi) {
  double total = 0;
  for (float x : g) total += std::fabs(static_cast<double>(x));
  std::vector<double> cdf(g.size());
  double s = 0;
  for (std::size_t k = 0; k < g.size(); ++k) cdf[k] = (s += std::fabs(static_cast<double>(g[k]))) / total;
  cdf.back() = 1.0;
  std::vector<std::int32_t> g_int(g.size(), 0);
  std::size_t start = 0;
  for (std::uint64_t i = 0; i < samples; ++i) {
    const double x = (xi + static_cast<double>(i)) / static_cast<double>(samples);
    while (!(cdf[start] > x)) ++start;
    g_int[start] += g[start] < 0 ? -1 : 1;
  }
  return g_int;
}

codec_context ctx_at(std::uint64_t iteration, std::uint32_t stream = 0) {
  return codec_context{.seed = 17, .rank = 3, .iteration = iteration, .stream = stream};
}

}  // namespace

TEST_CASE("the closed-form single pass is Alg. 1: same hits, same counts") {
  std::mt19937 gen(1);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + gen() % 300;
    std::vector<float> g = trial % 2 ? gaussian(n, trial) : laplace(n, trial);
    for (std::size_t k = 0; k < n; k += 1 + gen() % 5) g[k] = 0.0f;  // zeros get no samples
    if (std::all_of(g.begin(), g.end(), [](float x) { return x == 0.0f; })) g[0] = 1.0f;
    const double k_amount = std::array<double, 5>{0.05, 0.3, 1.0, 2.5, 17.0}[trial % 5];
    const std::uint64_t samples = kernels::mcgq_samples(n, k_amount);
    const double xi = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    std::vector<std::int32_t> fast(n);
    const double total = kernels::mcgq_quantize(g, samples, xi, fast);
    CAPTURE(trial);
    CHECK(fast == literal_alg1(g, samples, xi));
    // Exact invariants: N samples in all, each count floor or ceil of N p_k, signs of g, zeros stay zero.
    std::uint64_t sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const double expect = static_cast<double>(samples) * std::fabs(static_cast<double>(g[k])) / total;
      sum += static_cast<std::uint64_t>(std::abs(fast[k]));
      CHECK(std::fabs(std::abs(fast[k]) - expect) < 1.0 + 1e-9);
      if (g[k] == 0.0f) CHECK(fast[k] == 0);
      if (fast[k] != 0) CHECK((fast[k] < 0) == (g[k] < 0));
    }
    CHECK(sum == samples);
  }
}

TEST_CASE("N = ceil(len * K), and an all-zero layer gets no samples") {
  CHECK(kernels::mcgq_samples(1000, 1.0) == 1000);
  CHECK(kernels::mcgq_samples(1000, 0.1) == 100);
  CHECK(kernels::mcgq_samples(1001, 0.1) == 101);
  CHECK(kernels::mcgq_samples(1, 1e-6) == 1);
  CHECK(kernels::mcgq_samples(0, 3.0) == 0);
  std::vector<float> zero(10, 0.0f);
  zero[3] = -0.0f;
  std::vector<std::int32_t> g_int(10, 7);
  CHECK(kernels::mcgq_quantize(zero, 10, 0.5, g_int) == 0.0);
  CHECK(g_int == std::vector<std::int32_t>(10, 0));
}

TEST_CASE("one dominant value takes every sample; absorbed tiny values take none") {
  const std::vector<float> g{1e20f, 1e-20f, -3.0f};
  std::vector<std::int32_t> g_int(3);
  (void)kernels::mcgq_quantize(g, 50, 0.999, g_int);
  CHECK(g_int == std::vector<std::int32_t>{50, 0, 0});
}

TEST_CASE("Wasserstein-1 over positions: hand examples and the 1/K bound of stratified sampling") {
  const std::vector<float> g{1.0f, 1.0f};
  CHECK(kernels::mcgq_wasserstein(g, std::vector<std::int32_t>{2, 0}) == doctest::Approx(0.5));
  CHECK(kernels::mcgq_wasserstein(g, std::vector<std::int32_t>{1, 1}) == 0.0);
  CHECK(kernels::mcgq_wasserstein(g, std::vector<std::int32_t>{0, -3}) == doctest::Approx(0.5));
  CHECK(kernels::mcgq_wasserstein(std::vector<float>{1, 0, 0, 0}, std::vector<std::int32_t>{0, 0, 0, 1}) ==
        doctest::Approx(3.0));  // all mass moved three positions
  CHECK(kernels::mcgq_wasserstein(std::vector<float>{0, 0}, std::vector<std::int32_t>{0, 0}) == 0.0);
  for (double k : {0.1, 1.0, 4.0}) {
    const std::vector<float> v = gaussian(5000, 3);
    std::vector<std::int32_t> g_int(v.size());
    const std::uint64_t samples = kernels::mcgq_samples(v.size(), k);
    (void)kernels::mcgq_quantize(v, samples, 0.37, g_int);
    const double d = kernels::mcgq_wasserstein(v, g_int);
    CHECK(d > 0.0);
    CHECK(d < static_cast<double>(v.size()) / static_cast<double>(samples));
  }
}

TEST_CASE("unbiased per coordinate (Hoeffding, 4000 trials) on gaussian, heavy-tailed, sparse and one-hot" * doctest::test_suite("statistics")) {
  // Each decoded coordinate takes one of two values step * floor / ceil(N p_k), step = ||g||_1 / N, so
  // P(|mean - g_k| >= t) <= 2 exp(-2 T t^2 / step^2) per coordinate. With t = step * sqrt(ln(2 m / 1e-9)
  // / (2T)) for m coordinates in all, the chance of any false failure is below 1e-9 (seeds fixed).
  constexpr int kTrials = 4000;
  const std::size_t n = 64;
  std::vector<std::vector<float>> vectors{gaussian(n, 5), laplace(n, 6)};
  std::vector<float> sparse(n, 0.0f), hot(n, 0.0f);
  for (std::size_t k = 0; k < n; k += 7) sparse[k] = 0.01f * static_cast<float>(k) - 0.2f;
  hot[17] = -2.5f;
  vectors.push_back(sparse);
  vectors.push_back(hot);
  const double m = 3.0 * static_cast<double>(vectors.size() * n);
  for (const char* spec : {"mcgq:K=1", "mcgq:K=0.1", "mcgq:K=3,coding=dense"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make(spec);
    REQUIRE(c->unbiased());
    for (const std::vector<float>& v : vectors) {
      std::vector<double> mean(n, 0.0);
      for (int t = 0; t < kTrials; ++t) {
        const std::vector<float> out = round_trip(*c, v, ctx_at(t));
        for (std::size_t k = 0; k < n; ++k) mean[k] += out[k] / kTrials;
      }
      double l1 = 0;
      for (float x : v) l1 += std::fabs(x);
      const double step = l1 / static_cast<double>(kernels::mcgq_samples(n, c->options().k));
      const double tol = step * std::sqrt(std::log(2.0 * m / 1e-9) / (2.0 * kTrials));
      for (std::size_t k = 0; k < n; ++k) {
        CAPTURE(k);
        CHECK(std::fabs(mean[k] - v[k]) <= tol);
      }
    }
  }
}

TEST_CASE("E||C(v) - v||^2 / ||v||^2 stays below relative_error_bound = min(1/(4K^2), 1/K)" * doctest::test_suite("statistics")) {
  // The bound is a worst case over vectors; on these inputs the mean of 200 trials is far below it
  // (gaussian at K = 1: about 0.11 against 0.25), so sampling noise cannot reach it.
  for (const char* spec : {"mcgq:K=1", "mcgq:K=0.25", "mcgq:K=4"}) {
    const auto c = make(spec);
    CHECK(c->relative_error_bound(1000) ==
          doctest::Approx(std::min(1.0 / (4 * c->options().k * c->options().k), 1.0 / c->options().k)));
    for (const std::vector<float>& v : {gaussian(3000, 8), laplace(3000, 9)}) {
      double norm2 = 0, err = 0;
      for (float x : v) norm2 += double{x} * x;
      for (int t = 0; t < 200; ++t) {
        const std::vector<float> out = round_trip(*c, v, ctx_at(t));
        for (std::size_t k = 0; k < v.size(); ++k) err += (double{out[k]} - v[k]) * (double{out[k]} - v[k]);
      }
      const std::string spec_name(spec);
      CAPTURE(spec_name);
      CHECK(err / 200 / norm2 <= c->relative_error_bound(v.size()));
    }
  }
}

TEST_CASE("bits per value on a gaussian vector at K = 1 (the paper reports ~32x on real gradients)" * doctest::test_suite("statistics")) {
  const std::size_t n = 1 << 20;
  const std::vector<float> v = gaussian(n, 10);
  for (const char* spec : {"mcgq:K=1", "mcgq:K=1,coding=dense", "mcgq:K=0.1", "mcgq:K=0.01"}) {
    const auto c = make(spec);
    const std::vector<std::byte> bytes = encode(*c, v, ctx_at(1));
    CHECK(bytes.size() <= c->max_encoded_bytes(n));
    const double bits = 8.0 * static_cast<double>(bytes.size()) / static_cast<double>(n);
    const double entropy = c->entropy_bits_per_value(bytes, n, ctx_at(1));
    MESSAGE(std::string(spec) << ": " << bits << " bits/value, compression " << 32.0 / bits
                              << "x, entropy of g_int " << entropy << " bits/value");
    CHECK(entropy <= bits);
  }
}

TEST_CASE("max_encoded_bytes bounds the payload of dense, spiky and sparse inputs, at every K") {
  std::vector<std::vector<float>> inputs{gaussian(3000, 13), laplace(3000, 14), std::vector<float>(3000, 0.0f),
                                         std::vector<float>(3000, -1.0f)};
  inputs[2][1234] = 5.0f;  // one-hot: every sample on one value
  std::vector<float> alternating(3000, 0.0f);
  for (std::size_t k = 0; k < alternating.size(); k += 2) alternating[k] = k % 4 ? 1.0f : -1e-3f;
  inputs.push_back(alternating);
  for (const char* spec : {"mcgq:K=0.001", "mcgq:K=0.1", "mcgq:K=1", "mcgq:K=64", "mcgq:K=2,coding=dense",
                           "mcgq:K=0.5,dynamic=true"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make(spec, {0, 1000, 1001, 3000});
    for (const std::vector<float>& v : inputs)
      for (int t = 0; t < 3; ++t) CHECK(encode(*c, v, ctx_at(t)).size() <= c->max_encoded_bytes(v.size()));
  }
  // Few samples mean few nonzero values: the bound shrinks with K.
  CHECK(make("mcgq:K=0.01")->max_encoded_bytes(100000) < make("mcgq:K=1")->max_encoded_bytes(100000) / 20);
}

TEST_CASE("the payload: norm float, then the run-length coding of g_int, per layer") {
  const auto c = make("mcgq:K=0.5", {0, 6, 6, 10});  // an empty middle layer
  const std::vector<float> v{1, -2, 0, 0, 4, 1, 0, 0, 0, 0};
  const codec_context ctx = ctx_at(5);
  const std::vector<std::byte> bytes = encode(*c, v, ctx);
  const kernels::philox_stream rng = kernels::philox_stream::make(17, 3, 5, 0);
  std::vector<std::byte> expect;
  bit_stream_writer w(expect);
  const std::size_t bounds[] = {0, 6, 6, 10};
  for (std::size_t l = 0; l < 3; ++l) {
    const std::span<const float> g(v.data() + bounds[l], bounds[l + 1] - bounds[l]);
    std::vector<std::int32_t> g_int(g.size());
    const double total =
        kernels::mcgq_quantize(g, kernels::mcgq_samples(g.size(), 0.5), kernels::mcgq_offset(rng, l), g_int);
    w.put_bits(std::bit_cast<std::uint32_t>(static_cast<float>(total)), 32);
    run_length_encode(g_int, w);
  }
  CHECK(bytes == expect);
  // 3 samples on layer 0 (norm 8), none on the zero layers; decoded layer 0 keeps its L1 norm.
  std::vector<float> out(v.size());
  REQUIRE(c->decode(bytes, ctx, out).is_ok());
  double l1 = 0;
  for (std::size_t k = 0; k < 6; ++k) l1 += std::fabs(out[k]);
  CHECK(l1 == doctest::Approx(8.0));
  for (std::size_t k = 6; k < 10; ++k) CHECK(out[k] == 0.0f);
}

TEST_CASE("layers are sampled separately: each keeps its L1 norm, small layers are not starved") {
  const layer_bounds layers{0, 3000, 3100, 3110, 4000};
  std::vector<float> v = gaussian(4000, 11);
  for (std::size_t k = 3000; k < 3100; ++k) v[k] *= 1e-4f;  // a layer with tiny gradients
  for (std::size_t k = 3100; k < 3110; ++k) v[k] = 0.0f;    // an all-zero layer
  const auto layered = make("mcgq:K=0.5", layers);
  const auto flat = make("mcgq:K=0.5");
  CHECK(layered->params_tag() != flat->params_tag());
  const std::vector<float> out = round_trip(*layered, v, ctx_at(2));
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    double in1 = 0, out1 = 0;
    std::size_t nonzero = 0;
    for (std::size_t k = layers[l]; k < layers[l + 1]; ++k) {
      in1 += std::fabs(v[k]);
      out1 += std::fabs(out[k]);
      nonzero += out[k] != 0.0f;
    }
    CAPTURE(l);
    CHECK(out1 == doctest::Approx(in1).epsilon(1e-6));
    if (in1 > 0) CHECK(nonzero > 0);
  }
  // The flat codec spends its samples on the large entries: the tiny layer gets almost nothing.
  const std::vector<float> flat_out = round_trip(*flat, v, ctx_at(2));
  double tiny = 0;
  for (std::size_t k = 3000; k < 3100; ++k) tiny += std::fabs(flat_out[k]);
  CHECK(tiny == 0.0);
  // Sizes must match the layers.
  std::vector<float> wrong(3999);
  std::vector<std::byte> out_bytes;
  CHECK_THROWS_AS(layered->encode(wrong, codec_context{}, out_bytes), invariant_error);
  const std::vector<std::byte> bytes = encode(*layered, v, ctx_at(2));
  CHECK(layered->decode(bytes, ctx_at(2), wrong).code() == errc::corrupt);
}

TEST_CASE("rle and dense carry the same g_int: identical decoded floats, different sizes") {
  const std::vector<float> v = gaussian(5000, 12);
  const auto rle = make("mcgq:K=0.2");
  const auto dense = make("mcgq:K=0.2,coding=dense");
  const codec_context ctx = ctx_at(9);
  const std::vector<std::byte> a = encode(*rle, v, ctx), b = encode(*dense, v, ctx);
  CHECK(round_trip(*rle, v, ctx) == round_trip(*dense, v, ctx));
  std::vector<std::int32_t> g_int(v.size());
  (void)kernels::mcgq_quantize(v, 1000, kernels::mcgq_offset(kernels::philox_stream::make(17, 3, 9, 0), 0),
                               g_int);
  CHECK(a.size() == (32 + run_length_bits(g_int) + 7) / 8);
  CHECK(b.size() == (64 + v.size() * run_length_widths_of(g_int).value_bits + 7) / 8);
}

TEST_CASE("variant=accumulate is Alg. 4: sample a += g, then zero the sampled entries") {
  const std::size_t n = 500;
  const auto acc = make("mcgq:K=0.05,variant=accumulate");
  const auto plain = make("mcgq:K=0.05");
  CHECK_FALSE(acc->unbiased());
  CHECK(std::isinf(acc->relative_error_bound(n)));
  std::vector<float> reference(n, 0.0f);  // the oracle's accumulator
  for (int t = 0; t < 30; ++t) {
    const std::vector<float> g = gaussian(n, 100 + t);
    for (std::size_t k = 0; k < n; ++k) reference[k] += g[k];
    const codec_context ctx = ctx_at(t);
    const std::vector<std::byte> bytes = encode(*acc, g, ctx);
    CAPTURE(t);
    REQUIRE(bytes == encode(*plain, reference, ctx));  // the bytes of sampling the accumulator
    std::vector<float> out(n);
    REQUIRE(acc->decode(bytes, ctx, out).is_ok());
    for (std::size_t k = 0; k < n; ++k)
      if (out[k] != 0.0f) reference[k] = 0.0f;  // sampled entries are reset
  }
  // Streams keep separate accumulators, and a reset starts afresh.
  const std::vector<float> g = gaussian(n, 1);
  const std::vector<std::byte> fresh = encode(*plain, g, ctx_at(99, 1));
  CHECK(encode(*acc, g, ctx_at(99, 1)) == fresh);  // stream 1 was never used
  CHECK(encode(*acc, g, ctx_at(99, 0)) != encode(*plain, g, ctx_at(99, 0)));
  acc->reset_sender_state();
  CHECK(encode(*acc, g, ctx_at(99, 0)) == encode(*plain, g, ctx_at(99, 0)));
}

TEST_CASE("accumulate samples the entries that plain sampling rarely reaches") {
  // 990 small entries (0.001) next to 10 large ones (10) at K = 0.01: 10 samples per encode. Plain
  // sampling sends a small entry with probability ~1e-4 per encode (about 1% of all samples go to the
  // small ones). With the accumulator, the large entries are reset whenever sampled while the small
  // ones keep growing, until they hold a comparable share of the mass and get a large share of the
  // samples (Alg. 4's purpose). Counts over 400 encodes: plain ~40, accumulate well over 1000.
  const std::size_t n = 1000;
  std::vector<float> g(n, 0.001f);
  for (std::size_t k = 0; k < n; k += 100) g[k] = 10.0f;
  const auto plain = make("mcgq:K=0.01");
  const auto acc = make("mcgq:K=0.01,variant=accumulate");
  std::size_t hits_plain = 0, hits_acc = 0;
  for (int t = 0; t < 400; ++t) {
    const std::vector<float> a = round_trip(*plain, g, ctx_at(t));
    const std::vector<float> b = round_trip(*acc, g, ctx_at(t));
    for (std::size_t k = 0; k < n; ++k)
      if (k % 100 != 0) {
        hits_plain += a[k] != 0.0f;
        hits_acc += b[k] != 0.0f;
      }
  }
  MESSAGE("small entries sent in 400 encodes: plain " << hits_plain << ", accumulate " << hits_acc);
  CHECK(hits_plain < 100);
  CHECK(hits_acc > 10 * hits_plain);
}

TEST_CASE("dynamic=true is Alg. 3: K <- clamp(K + dk (d_prev - d)), per layer, oracle step by step") {
  const layer_bounds layers{0, 700, 1000};
  const auto dyn = make("mcgq:K=0.5,dynamic=true,dk=2", layers);
  CHECK(dyn->describe() == "mcgq:K=0.5,coding=rle,variant=plain,dynamic=true,dk=2");
  CHECK(dyn->min_k() == 0.5 / 16);
  CHECK(dyn->max_k() == 8.0);
  CHECK(dyn->relative_error_bound(1000) == doctest::Approx(1.0 / dyn->min_k()));
  std::vector<double> k{0.5, 0.5}, previous{std::nan(""), std::nan("")};
  bool moved = false;
  for (int t = 0; t < 25; ++t) {
    // Inputs that change shape over time (denser, then spikier), so the distance moves.
    std::vector<float> v = gaussian(1000, 200 + t);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = std::pow(std::fabs(v[i]), 1.0f + 0.1f * t) * (v[i] < 0 ? -1 : 1);
    const codec_context ctx = ctx_at(t);
    CHECK(dyn->current_k_for_testing(0, 1000) == k);
    const std::vector<std::byte> bytes = encode(*dyn, v, ctx);
    // Oracle: the same bytes as a static codec at the current K of each layer (equal here, so one codec
    // per layer and compare per layer via the kernel).
    const kernels::philox_stream rng = kernels::philox_stream::make(17, 3, static_cast<std::uint64_t>(t), 0);
    std::vector<std::byte> expect;
    bit_stream_writer w(expect);
    for (std::size_t l = 0; l < 2; ++l) {
      const std::span<const float> g(v.data() + layers[l], layers[l + 1] - layers[l]);
      std::vector<std::int32_t> g_int(g.size());
      const double total = kernels::mcgq_quantize(g, kernels::mcgq_samples(g.size(), k[l]),
                                                  kernels::mcgq_offset(rng, l), g_int);
      w.put_bits(std::bit_cast<std::uint32_t>(static_cast<float>(total)), 32);
      run_length_encode(g_int, w);
      const double d = kernels::mcgq_wasserstein(g, g_int);
      const double before = std::isnan(previous[l]) ? d : previous[l];
      const double next = std::clamp(k[l] + 2.0 * (before - d), 0.5 / 16, 8.0);
      moved |= next != k[l];
      k[l] = next;
      previous[l] = d;
    }
    CAPTURE(t);
    CHECK(bytes == expect);
    std::vector<float> out(v.size());
    REQUIRE(dyn->decode(bytes, ctx, out).is_ok());  // N comes from the payload
  }
  CHECK(moved);
  CHECK(dyn->current_k_for_testing(0, 1000) == k);
  CHECK(dyn->current_k_for_testing(1, 1000) == std::vector<double>{0.5, 0.5});  // another stream
}

TEST_CASE("spec: parsing, canonical describe() and its round trip, and the errors") {
  CHECK(make("mcgq")->describe() == "mcgq:K=1,coding=rle,variant=plain,dynamic=false");
  CHECK(make("mcgq:K=1.0")->describe() == "mcgq:K=1,coding=rle,variant=plain,dynamic=false");
  for (const char* spec : {"mcgq:K=0.1", "mcgq:K=64,coding=dense", "mcgq:K=0.3,variant=accumulate",
                           "mcgq:K=2.5,dynamic=true,dk=0.125", "mcgq:K=1e-05"}) {
    const auto c = make(spec);
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    CHECK(make(c->describe().c_str())->describe() == c->describe());
    CHECK(make(c->describe().c_str())->params_tag() == c->params_tag());
  }
  CHECK(make("mcgq:K=0.1")->params_tag() != make("mcgq:K=0.2")->params_tag());
  for (const char* bad : {"mcgq:K=0", "mcgq:K=-1", "mcgq:K=nan", "mcgq:K=inf", "mcgq:K=65", "mcgq:K=1x",
                          "mcgq:K=", "mcgq:coding=elias", "mcgq:variant=memory", "mcgq:dynamic=yes",
                          "mcgq:dk=1", "mcgq:dynamic=true,dk=-1", "mcgq:k=1", "mcgq:samples=3"}) {
    const std::string bad_spec(bad);
    CAPTURE(bad_spec);
    CHECK_THROWS_AS(make_compressor(parse_codec_spec(bad)), config_error);
  }
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("mcgq"), layer_bounds{1, 5}), config_error);
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("mcgq"), layer_bounds{0, 5, 3}), config_error);
  CHECK_THROWS_AS(make_compressor(parse_codec_spec("mcgq"), layer_bounds{0}), config_error);
  CHECK_THROWS_WITH_AS(make_compressor(parse_codec_spec("mcgq:K=0")), doctest::Contains("(0, 64]"),
                       config_error);
}

TEST_CASE("the decoder rejects damaged norms, wrong sample totals, and trailing bits") {
  const auto c = make("mcgq:K=1");
  std::vector<float> out(4);
  const auto payload = [](std::uint32_t norm_bits, const std::vector<std::int32_t>& g_int) {
    std::vector<std::byte> bytes;
    bit_stream_writer w(bytes);
    w.put_bits(norm_bits, 32);
    run_length_encode(g_int, w);
    return bytes;
  };
  const std::uint32_t two = std::bit_cast<std::uint32_t>(2.0f);
  SUBCASE("reference") {
    REQUIRE(c->decode(payload(two, {1, 0, -2, 1}), codec_context{}, out).is_ok());
    CHECK(out == std::vector<float>{0.5f, 0.0f, -1.0f, 0.5f});
  }
  SUBCASE("NaN, infinite, negative norms") {
    for (std::uint32_t bits : {0x7fc00000u, 0x7f800000u, 0xc0000000u, 0x80000000u})
      CHECK(c->decode(payload(bits, {1, 0, -2, 1}), codec_context{}, out).code() == errc::corrupt);
  }
  SUBCASE("sum |g_int| must be N = 4") {
    CHECK(c->decode(payload(two, {1, 0, -2, 0}), codec_context{}, out).code() == errc::corrupt);
    CHECK(c->decode(payload(two, {1, 5, -2, 0}), codec_context{}, out).code() == errc::corrupt);
  }
  SUBCASE("zero norm with samples, and a norm without any") {
    CHECK(c->decode(payload(0, {1, 0, -2, 1}), codec_context{}, out).code() == errc::corrupt);
    CHECK(c->decode(payload(two, {0, 0, 0, 0}), codec_context{}, out).code() == errc::corrupt);
    CHECK(c->decode(payload(0, {0, 0, 0, 0}), codec_context{}, out).is_ok());
  }
  SUBCASE("trailing bytes") {
    std::vector<std::byte> bytes = payload(two, {1, 0, -2, 1});
    bytes.push_back(std::byte{0});
    CHECK(c->decode(bytes, codec_context{}, out).code() == errc::corrupt);
  }
  SUBCASE("dynamic K accepts N within [ceil(len K/16), ceil(len min(16K, 64))]") {
    const auto dyn = make("mcgq:K=1,dynamic=true");
    CHECK(dyn->decode(payload(two, {1, 0, -20, 1}), codec_context{}, out).is_ok());
    CHECK(dyn->decode(payload(two, {1, 0, -70, 1}), codec_context{}, out).code() == errc::corrupt);
  }
}

TEST_CASE("stateful variants: non-finite input throws before any state changes") {
  const auto acc = make("mcgq:K=0.5,variant=accumulate");
  const auto plain = make("mcgq:K=0.5");
  std::vector<float> v = gaussian(300, 4);
  v[100] = std::numeric_limits<float>::quiet_NaN();
  std::vector<std::byte> out;
  CHECK_THROWS_AS(acc->encode(v, ctx_at(0), out), invariant_error);
  CHECK(out.empty());
  v[100] = 1.0f;
  CHECK(encode(*acc, v, ctx_at(0)) == encode(*plain, v, ctx_at(0)));  // the accumulator is still zero
}
