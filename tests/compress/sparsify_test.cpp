// randsparse and randk: the position codings (round trips for every coding, golden bits, every decoder
// fault), the selection kernels against element-by-element references, unbiasedness of randsparse and
// scaled rand-k and the bias of unscaled rand-k, their exact error factors, rand-k's positions being
// the same on both sides, golden bytes and parameters.
//
// Statistical checks use fixed seeds (codec_context iterations 0..T-1), so they are deterministic; each
// tolerance is stated with the probability that a correct codec would exceed it for a random seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <set>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/sparsify.hpp"
#include "core/errors.hpp"
#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/sparse.hpp"

using namespace qgossip;
using kernels::position_fault;

namespace {

std::vector<std::uint32_t> random_positions(std::mt19937& gen, std::size_t n, double density) {
  std::vector<std::uint32_t> p;
  std::bernoulli_distribution keep(density);
  for (std::size_t i = 0; i < n; ++i)
    if (keep(gen)) p.push_back(static_cast<std::uint32_t>(i));
  return p;
}

std::size_t coding_bytes(std::span<const std::uint32_t> p, std::size_t n, std::uint8_t tag) {
  return tag == kernels::kBitmapTag ? kernels::bitmap_bytes(n) : kernels::rice_bytes(p, tag - 1u);
}

std::vector<std::byte> encode_with(std::span<const std::uint32_t> p, std::size_t n, std::uint8_t tag) {
  std::vector<std::byte> out(coding_bytes(p, n, tag));
  kernels::encode_positions(p, n, tag, out);
  return out;
}

position_fault decode_count(std::span<const std::byte> in, std::size_t n, std::uint8_t tag, std::size_t m) {
  std::vector<std::uint32_t> p(m);
  return kernels::decode_positions(in, n, tag, p);
}

// Binary entropy in bits.
double entropy(double p) { return -p * std::log2(p) - (1 - p) * std::log2(1 - p); }

std::vector<float> test_vector(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

// Per-coordinate mean and mean relative squared error of decode(encode(v)) over T contexts.
struct moments {
  std::vector<double> mean;
  double rel_mse = 0;
  double kept_fraction = 0;
};

moments run_trials(const compressor& c, const std::vector<float>& v, int trials) {
  moments m;
  m.mean.assign(v.size(), 0.0);
  double norm = 0;
  for (float x : v) norm += double{x} * x;
  std::vector<float> out(v.size());
  std::vector<std::byte> bytes;
  for (int t = 0; t < trials; ++t) {
    const codec_context ctx{.seed = 77, .rank = 1, .iteration = static_cast<std::uint64_t>(t), .stream = 0};
    bytes.clear();
    c.encode(v, ctx, bytes);
    REQUIRE(c.decode(bytes, ctx, out).is_ok());
    double err = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      m.mean[i] += out[i];
      err += (double{out[i]} - v[i]) * (double{out[i]} - v[i]);
      m.kept_fraction += out[i] != 0.0f ? 1.0 : 0.0;
    }
    m.rel_mse += err / norm;
  }
  for (double& x : m.mean) x /= trials;
  m.rel_mse /= trials;
  m.kept_fraction /= static_cast<double>(trials) * static_cast<double>(v.size());
  return m;
}

}  // namespace

TEST_CASE("position codings round-trip for the bitmap and every Rice parameter") {
  std::mt19937 gen(17);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t n = trial < 5 ? static_cast<std::size_t>(trial) : 1 + gen() % 5000;
    const double density = std::array{0.0, 0.001, 0.02, 0.3, 0.9, 1.0}[trial % 6];
    const std::vector<std::uint32_t> p = random_positions(gen, n, density);
    for (std::uint8_t tag = 0; tag <= kernels::kMaxRiceTag; ++tag) {
      const std::vector<std::byte> bytes = encode_with(p, n, tag);
      std::vector<std::uint32_t> back(p.size());
      const position_fault f = kernels::decode_positions(bytes, n, tag, back);
      if (f != position_fault::none || back != p)
        FAIL("n=" << n << " m=" << p.size() << " tag=" << int{tag} << ": " << kernels::to_string(f));
    }
    // The chosen coding is the smallest of those tried, and never above the bitmap.
    const kernels::position_coding best = kernels::choose_position_coding(p, n);
    CHECK(best.bytes == coding_bytes(p, n, best.tag));
    CHECK(best.bytes <= kernels::bitmap_bytes(n));
  }
  // Gaps far longer than one 57-bit window, in unary (r = 0) and otherwise.
  const std::vector<std::uint32_t> far{0, 3, 200000, 999999};
  for (std::uint8_t tag : {1, 2, 9, 32}) {
    const std::vector<std::byte> bytes = encode_with(far, 1000000, tag);
    std::vector<std::uint32_t> back(far.size());
    CHECK(kernels::decode_positions(bytes, 1000000, tag, back) == position_fault::none);
    CHECK(back == far);
  }
}

TEST_CASE("Rice coding golden bits: positions {0, 5, 6} with r = 1 are 0x0C") {
  // Gaps 0, 4, 0. Each: the quotient g >> 1 in unary (ones, then a zero), then the low bit of g.
  // 0 -> 0 0; 4 -> 1 1 0 0; 0 -> 0 0. Bits from the LSB: 0 0 1 1 0 0 0 0 = 0x0C.
  const std::vector<std::uint32_t> p{0, 5, 6};
  CHECK(kernels::rice_bytes(p, 1) == 1);
  CHECK(encode_with(p, 10, 2) == std::vector<std::byte>{std::byte{0x0C}});
  CHECK(encode_with(p, 10, kernels::kBitmapTag) == std::vector<std::byte>{std::byte{0x61}, std::byte{0x00}});
}

TEST_CASE("position decoder faults, one corruption per case") {
  const std::vector<std::uint32_t> p{0, 5, 6};
  const std::vector<std::byte> rice = encode_with(p, 10, 2);  // 0x0C
  CHECK(decode_count(rice, 10, 2, 3) == position_fault::none);
  CHECK(decode_count(rice, 10, 33, 3) == position_fault::tag);
  CHECK(decode_count(rice, 10, 255, 3) == position_fault::tag);
  CHECK(decode_count({}, 10, 2, 3) == position_fault::count);                        // nothing there
  CHECK(decode_count(std::vector<std::byte>{std::byte{0x0C}, std::byte{0}}, 10, 2, 3) == position_fault::size);
  CHECK(decode_count(rice, 10, 2, 4) == position_fault::count);                      // fourth one missing
  // A trailing code of zero bits (gap 0 with r = 1: "00") is indistinguishable from padding, so a
  // decoder must be told m: the payloads carry it (randsparse) or derive it from n (topk).
  CHECK(decode_count(rice, 10, 2, 2) == position_fault::none);
  CHECK(decode_count(encode_with(std::vector<std::uint32_t>{0, 1, 3}, 10, 2), 10, 2, 2) == position_fault::padding);
  CHECK(decode_count(rice, 6, 2, 3) == position_fault::range);                       // 6 is not below 6
  CHECK(decode_count(rice, 10, 2, 11) == position_fault::count);                     // more than n
  // A run of ones longer than any gap below n.
  const std::vector<std::byte> ones(40, std::byte{0xFF});
  CHECK(decode_count(ones, 100, 1, 1) == position_fault::range);
  CHECK(decode_count(ones, 1000000, 1, 1) == position_fault::count);  // runs out of bits first

  const std::vector<std::byte> bitmap = encode_with(p, 10, 0);  // 0x61 0x00
  CHECK(decode_count(bitmap, 10, 0, 3) == position_fault::none);
  CHECK(decode_count(bitmap, 17, 0, 3) == position_fault::size);
  CHECK(decode_count(bitmap, 10, 0, 2) == position_fault::count);  // a set bit too many
  CHECK(decode_count(bitmap, 10, 0, 4) == position_fault::count);  // one too few
  std::vector<std::byte> padded = bitmap;
  padded[1] = std::byte{0x04};  // bit 10: beyond n
  CHECK(decode_count(padded, 10, 0, 4) == position_fault::padding);
}

TEST_CASE("bernoulli_select keeps exactly the elements whose uniform is below threshold / 2^24") {
  const std::vector<float> v = test_vector(10000, 1);
  const auto rng = kernels::philox_stream::make(5, 6, 7, 8);
  for (std::uint32_t threshold : {1u, 1677722u, 1u << 23, (1u << 24) - 1, 1u << 24}) {
    std::vector<std::uint32_t> positions;
    std::vector<float> values;
    kernels::bernoulli_select(v, rng, threshold, 3.0f, positions, values);
    std::vector<std::uint32_t> want;
    for (std::uint32_t i = 0; i < v.size(); ++i)
      if (rng.uniform(i) < static_cast<float>(threshold) * 0x1p-24f) want.push_back(i);
    CHECK(positions == want);
    REQUIRE(values.size() == want.size());
    for (std::size_t j = 0; j < want.size(); ++j) REQUIRE(values[j] == v[want[j]] * 3.0f);
  }
}

TEST_CASE("sample_positions: k distinct ascending positions; every position equally likely") {
  const auto rng = kernels::philox_stream::make(1, 2, 3, 4);
  std::vector<std::uint32_t> p;
  kernels::sample_positions(rng, 10, 10, p);
  CHECK(p == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  kernels::sample_positions(rng, 10, 0, p);
  CHECK(p.empty());
  kernels::sample_positions(rng, 1, 1, p);
  CHECK(p == std::vector<std::uint32_t>{0});
  // Inclusion counts over T = 40000 streams, n = 20, k = 3: each ~ Binomial(T, 0.15), sd 71.4.
  // 6 sd per position: a correct sampler fails with probability < 20 * 2e-9.
  constexpr int kTrials = 40000;
  std::vector<int> hits(20, 0);
  for (int t = 0; t < kTrials; ++t) {
    kernels::sample_positions(kernels::philox_stream::make(9, 0, static_cast<std::uint64_t>(t), 0), 20, 3, p);
    REQUIRE(p.size() == 3);
    REQUIRE(std::is_sorted(p.begin(), p.end()));
    REQUIRE(std::adjacent_find(p.begin(), p.end()) == p.end());
    for (std::uint32_t i : p) ++hits[i];
  }
  for (int h : hits) CHECK(std::abs(h - kTrials * 0.15) < 6 * std::sqrt(kTrials * 0.15 * 0.85));
}

TEST_CASE("randsparse is unbiased, keeps a fraction p, and has E||C(v)-v||^2 = (1/p - 1)||v||^2") {
  // n = 40, T = 20000, p = 0.1. Each coordinate's mean has sd |v_i| sqrt((1/p - 1)/T) = 0.0212 |v_i|;
  // allowing 5 sd, a correct codec fails with probability < 40 * 6e-7. A codec that forgot the 1/p
  // would be off by 0.9 |v_i| = 42 sd. The relative MSE has sd ~0.5% of its value: 5% is 10 sd.
  const auto c = make_compressor(parse_codec_spec("randsparse:p=0.1"));
  CHECK(c->unbiased());
  const std::vector<float> v = test_vector(40, 2);
  constexpr int kTrials = 20000;
  const moments m = run_trials(*c, v, kTrials);
  const double factor = 1.0 / 0.10000002384185791 - 1.0;  // p' = round(0.1 * 2^24) / 2^24
  CHECK(c->relative_error_bound(40) == doctest::Approx(factor).epsilon(1e-12));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double sd = std::fabs(v[i]) * std::sqrt(factor / kTrials);
    if (std::fabs(m.mean[i] - v[i]) > 5 * sd) FAIL("coordinate " << i << ": mean " << m.mean[i] << " for " << v[i]);
  }
  CHECK(m.rel_mse == doctest::Approx(factor).epsilon(0.05));
  // Kept fraction: sd sqrt(p(1-p)/(nT)) = 0.00034; tolerance 0.002 (> 5 sd).
  CHECK(m.kept_fraction == doctest::Approx(0.1).epsilon(0.02));
}

TEST_CASE("rand-k: scaled is unbiased with factor n/k - 1; unscaled is biased (mean k/n v), factor 1 - k/n") {
  // n = 40, k = 4: each coordinate is kept with probability 0.1, so the same 5-sd argument as for
  // randsparse applies to the scaled version; the unscaled mean sits at 0.1 v_i, >= 40 sd from v_i.
  const std::vector<float> v = test_vector(40, 3);
  constexpr int kTrials = 20000;
  const auto scaled = make_compressor(parse_codec_spec("randk:k=4"));
  const auto plain = make_compressor(parse_codec_spec("randk:k=4,scaled=false"));
  CHECK(scaled->unbiased());
  CHECK_FALSE(plain->unbiased());
  CHECK(scaled->relative_error_bound(40) == doctest::Approx(9.0));
  CHECK(plain->relative_error_bound(40) == doctest::Approx(0.9));
  const moments ms = run_trials(*scaled, v, kTrials);
  const moments mp = run_trials(*plain, v, kTrials);
  double bias = 0, norm = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double sd = std::fabs(v[i]) * std::sqrt(9.0 / kTrials);
    if (std::fabs(ms.mean[i] - v[i]) > 5 * sd) FAIL("scaled, coordinate " << i);
    const double sd_plain = std::fabs(v[i]) * std::sqrt(0.1 * 0.9 / kTrials);
    if (std::fabs(mp.mean[i] - 0.1 * v[i]) > 5 * sd_plain) FAIL("unscaled, coordinate " << i);
    bias += (mp.mean[i] - v[i]) * (mp.mean[i] - v[i]);
    norm += double{v[i]} * v[i];
  }
  CHECK(std::sqrt(bias / norm) == doctest::Approx(0.9).epsilon(0.02));  // rel_bias of unscaled rand-k
  // Exactly k kept every time; the MSE factors as stated (sd of the mean ~0.5%: 5% is 10 sd).
  CHECK(ms.kept_fraction == doctest::Approx(0.1).epsilon(1e-12));
  CHECK(ms.rel_mse == doctest::Approx(9.0).epsilon(0.05));
  CHECK(mp.rel_mse == doctest::Approx(0.9).epsilon(0.05));
}

TEST_CASE("rand-k: the decoder regenerates the encoder's positions from the context; 4 + 4k bytes") {
  const auto c = make_compressor(parse_codec_spec("randk:ratio=0.01"));
  const auto& rk = dynamic_cast<const randk_compressor&>(*c);
  const std::vector<float> v = test_vector(100000, 4);
  const codec_context ctx{.seed = 3, .rank = 2, .iteration = 1000, .stream = 1};
  std::vector<std::byte> bytes;
  c->encode(v, ctx, bytes);
  CHECK(bytes.size() == 4 + 4 * 1000);
  CHECK(bytes.size() == c->max_encoded_bytes(v.size()));
  std::vector<float> out(v.size());
  REQUIRE(c->decode(bytes, ctx, out).is_ok());
  const std::vector<std::uint32_t> kept = rk.positions(v.size(), ctx);
  REQUIRE(kept.size() == 1000);
  std::set<std::uint32_t> at(kept.begin(), kept.end());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (at.count(static_cast<std::uint32_t>(i)))
      REQUIRE(out[i] == v[i] * 100.0f);  // n/k = 100 exactly
    else
      REQUIRE(out[i] == 0.0f);
  }
  // The payload means something only with its context: another context puts the values elsewhere.
  std::vector<float> other(v.size());
  REQUIRE(c->decode(bytes, codec_context{.seed = 3, .rank = 2, .iteration = 1001, .stream = 1}, other).is_ok());
  CHECK(other != out);
  CHECK(rk.positions(v.size(), codec_context{.seed = 4}) != rk.positions(v.size(), codec_context{.seed = 5}));
}

TEST_CASE("randsparse positions cost close to the entropy of the kept set") {
  // Per kept value, an ideal coder of Bernoulli(p) positions needs H(p)/p bits (11.41 at p = 0.001,
  // 8.08 at 0.01, 4.69 at 0.1, 2 at 0.5). Rice coding at the best of three parameters is expected
  // within 1.6% of that for these p (11.49, 8.11, 4.76), and the bitmap (1/p bits) takes over when p
  // is large. Tolerance 3%: the smallest sample (p = 0.001, ~1050 gaps) has a sampling sd of ~0.5%
  // of its mean, so a correct coder stays inside by > 4 sd.
  const std::vector<float> v = test_vector(1 << 20, 5);
  for (double p : {0.001, 0.01, 0.1, 0.5}) {
    CAPTURE(p);
    const auto c = make_compressor(parse_codec_spec("randsparse:p=" + format_real(p)));
    std::vector<std::byte> bytes;
    c->encode(v, codec_context{.seed = 1}, bytes);
    std::uint32_t m = 0;
    std::memcpy(&m, bytes.data() + 4, 4);
    const double bits = 8.0 * static_cast<double>(bytes.size() - 9 - 4 * std::size_t{m}) / m;
    MESSAGE("p=" << p << ": " << bits << " position bits per kept value, entropy " << entropy(p) / p);
    CHECK(bits <= 1.03 * entropy(p) / p);
    CHECK(bits <= 1.0 / p + 0.01);
  }
}

TEST_CASE("randsparse golden bytes (p = 1 keeps everything, scale 1)") {
  const auto c = make_compressor(parse_codec_spec("randsparse:p=1"));
  CHECK(c->relative_error_bound(4) == 0.0);
  std::vector<std::byte> bytes;
  c->encode(std::vector<float>{1.0f, 2.0f, 0.0f, 3.0f}, codec_context{}, bytes);
  std::vector<std::byte> want{std::byte{4}, std::byte{0}, std::byte{0}, std::byte{0},   // n
                              std::byte{4}, std::byte{0}, std::byte{0}, std::byte{0},   // m
                              std::byte{0}};                                            // bitmap
  for (float x : {1.0f, 2.0f, 0.0f, 3.0f}) {
    const auto b = std::bit_cast<std::array<std::byte, 4>>(x);
    want.insert(want.end(), b.begin(), b.end());
  }
  want.push_back(std::byte{0x0F});
  CHECK(bytes == want);
}

TEST_CASE("randsparse decoder validates count, m, tag, values and positions") {
  const auto c = make_compressor(parse_codec_spec("randsparse:p=0.05"));
  const std::vector<float> v = test_vector(1000, 6);
  std::vector<std::byte> bytes;
  c->encode(v, codec_context{.seed = 2}, bytes);
  std::uint32_t m = 0;
  std::memcpy(&m, bytes.data() + 4, 4);
  REQUIRE(m > 0);
  std::vector<float> out(v.size());
  REQUIRE(c->decode(bytes, codec_context{}, out).is_ok());
  auto with_u32 = [&](std::size_t at, std::uint32_t x) {
    std::vector<std::byte> b = bytes;
    std::memcpy(&b[at], &x, 4);
    return c->decode(b, codec_context{}, out).code();
  };
  CHECK(with_u32(0, 999) == errc::corrupt);                 // made for another count
  CHECK(with_u32(4, m + 1) == errc::corrupt);               // one value more than the bytes hold
  CHECK(with_u32(4, m - 1) == errc::corrupt);               // positions left over
  CHECK(with_u32(4, 0xFFFFFFFFu) == errc::corrupt);         // more than n
  CHECK(with_u32(9, 0x7F800000u) == errc::corrupt);         // value 0 = +Inf
  CHECK(with_u32(9 + 4 * (m - 1), 0xFFC00000u) == errc::corrupt);  // last value NaN
  std::vector<std::byte> tag = bytes;
  tag[8] = std::byte{40};
  CHECK(c->decode(tag, codec_context{}, out).code() == errc::corrupt);
}

TEST_CASE("randsparse and randk refuse values that overflow once scaled; out untouched") {
  const std::vector<float> big(64, FLT_MAX);
  for (const char* spec : {"randsparse:p=0.5", "randk:ratio=0.5"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    std::vector<std::byte> out{std::byte{7}};
    CHECK_THROWS_AS(c->encode(big, codec_context{}, out), invariant_error);
    CHECK(out.size() == 1);
  }
  // Unscaled rand-k sends the values as they are.
  std::vector<std::byte> out;
  make_compressor(parse_codec_spec("randk:ratio=0.5,scaled=false"))->encode(big, codec_context{}, out);
  CHECK(out.size() == 4 + 4 * 32);
}

TEST_CASE("randsparse parameters") {
  CHECK(make_compressor(parse_codec_spec("randsparse"))->describe() == "randsparse:p=0.1");
  CHECK(make_compressor(parse_codec_spec("randsparse:p=1e-5"))->describe() == "randsparse:p=1e-05");
  CHECK(make_compressor(parse_codec_spec("randsparse:p=0.25"))->relative_error_bound(10) == 3.0);
  CHECK(make_compressor(parse_codec_spec("randsparse:p=0.25"))->params_tag() !=
        make_compressor(parse_codec_spec("randsparse:p=0.5"))->params_tag());
  for (const char* bad : {"randsparse:p=0", "randsparse:p=1e-9", "randsparse:p=1.01", "randsparse:p=abc",
                          "randsparse:q=0.1", "randsparse:p=nan"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(make_compressor(parse_codec_spec(bad)), config_error);
  }
  const auto c = make_compressor(parse_codec_spec("randsparse:p=0.1"));
  CHECK(dynamic_cast<const randsparse_compressor&>(*c).effective_p() == 1677722.0 / 16777216.0);
}

TEST_CASE("fuzz past the count: random tags, counts, values and position bits give corrupt or finite") {
  // The contract test's random payloads mostly stop at the count check; these keep a valid n so the
  // position decoders see the junk (run under ASan/UBSan in CI).
  std::mt19937 gen(4711);
  const std::vector<float> v = test_vector(3000, 9);
  for (const char* spec : {"randsparse:p=0.01", "randsparse:p=0.6", "topk:ratio=0.01", "topk:ratio=0.7"}) {
    const std::string spec_name(spec);
    CAPTURE(spec_name);
    const auto c = make_compressor(parse_codec_spec(spec));
    std::vector<std::byte> good;
    c->encode(v, codec_context{}, good);
    std::vector<float> out(v.size());
    int accepted = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<std::byte> b = good;
      // Flip a random number of random bytes after the count, sometimes only in the tag/m fields,
      // sometimes resize.
      const std::size_t from = trial % 3 == 0 ? 4 : 4 + gen() % (b.size() - 4);
      const int flips = 1 + static_cast<int>(gen() % 8);
      for (int f = 0; f < flips; ++f) b[from + gen() % (b.size() - from)] = static_cast<std::byte>(gen());
      if (trial % 5 == 0) b.resize(4 + gen() % (2 * b.size()));
      const status st = c->decode(b, codec_context{}, out);
      if (st.is_ok()) {
        ++accepted;
        REQUIRE(std::all_of(out.begin(), out.end(), [](float x) { return std::isfinite(x); }));
      } else {
        REQUIRE(st.code() == errc::corrupt);
      }
    }
    MESSAGE(spec_name << ": " << accepted << " of 3000 damaged payloads decoded (to finite values)");
  }
}
