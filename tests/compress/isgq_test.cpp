// isgq: the factory and its errors, the payload size against the packing rule and the paper's rate,
// the dithered values' error (uniform, variance kappa²/12, X and Δ dithered independently), the
// unbiasedness and variance of the rebuilt gradient, MSE-ISGQ against dither on a real MLP batch,
// the factor product, determinism, and the decoder's corruption cases. Fixed seeds throughout; each
// statistical tolerance is derived where it is checked.
#include "algorithms/compress/isgq.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.hpp"
#include "kernels/cpu/philox.hpp"
#include "node/models/mlp.hpp"
#include "node/data/synthetic.hpp"

using namespace qgossip;

namespace {

std::unique_ptr<isgq_codec> make(const std::string& spec) { return make_isgq(parse_codec_spec(spec)); }

std::string error_of(const std::string& spec) {
  try {
    (void)make(spec);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

codec_context ctx_at(std::uint64_t iteration) {
  return codec_context{.seed = 9, .rank = 3, .iteration = iteration, .stream = 1};
}

struct shape {
  std::size_t in, out;
};

// Gaussian Δ, and X with a fraction of exact zeros (as after a ReLU) and the rest |N(0, 1)|.
std::vector<fc_factors> random_layers(std::span<const shape> shapes, std::size_t batch, std::uint32_t seed,
                                      double zeros = 0.4) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::vector<fc_factors> layers;
  std::size_t offset = 0;
  for (const shape& s : shapes) {
    fc_factors f;
    f.offset = offset;
    f.in = s.in;
    f.out = s.out;
    f.batch = batch;
    f.x.resize(s.in * batch);
    f.delta.resize(s.out * batch);
    for (float& v : f.x) v = coin(gen) < zeros ? 0.0f : std::fabs(normal(gen));
    for (float& v : f.delta) v = normal(gen);
    offset += s.out * (s.in + 1);
    layers.push_back(std::move(f));
  }
  return layers;
}

std::size_t total_params(std::span<const fc_factors> layers) {
  std::size_t n = 0;
  for (const fc_factors& f : layers) n = std::max(n, f.offset + f.out * (f.in + 1));
  return n;
}

// (1/L) Δ [X; 1]ᵀ in double, laid out as the flat gradient.
std::vector<double> exact_gradient(std::span<const fc_factors> layers) {
  std::vector<double> g(total_params(layers));
  for (const fc_factors& f : layers)
    for (std::size_t i = 0; i <= f.in; ++i)
      for (std::size_t o = 0; o < f.out; ++o) {
        double s = 0;
        for (std::size_t e = 0; e < f.batch; ++e)
          s += double(f.delta[e * f.out + o]) * (i < f.in ? double(f.x[e * f.in + i]) : 1.0);
        g[f.offset + i * f.out + o] = s / double(f.batch);
      }
  return g;
}

std::vector<std::byte> encode(const isgq_codec& c, std::span<const fc_factors> layers, const codec_context& ctx) {
  std::vector<std::byte> out;
  c.encode(layers, ctx, out);
  return out;
}

std::vector<float> decode(const isgq_codec& c, std::span<const std::byte> bytes, const codec_context& ctx,
                          std::span<const fc_factors> shapes) {
  std::vector<float> g(total_params(shapes));
  const status st = c.decode(bytes, ctx, shapes, g);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return g;
}

// Squared error of one layer's rebuilt gradient, and its squared total bias (sum of errors)².
struct layer_error {
  double sq = 0, bias = 0, norm_sq = 0;
};

layer_error error_of_layer(const fc_factors& f, std::span<const double> exact, std::span<const float> got) {
  layer_error r;
  for (std::size_t k = f.offset; k < f.offset + f.out * (f.in + 1); ++k) {
    const double d = exact[k] - double(got[k]);
    r.sq += d * d;
    r.bias += d;
    r.norm_sq += exact[k] * exact[k];
  }
  r.bias *= r.bias;
  return r;
}

// The packing rule of isgq.hpp, by brute force: the group size g (words of at most 32 bits) with
// the fewest bits per index, ties to the smaller g.
struct rule {
  std::uint64_t group, bits;
};
unsigned width(std::uint64_t v) { return static_cast<unsigned>(std::bit_width(v)); }
rule packing_rule(std::uint64_t levels) {
  const std::uint64_t base = 2 * levels + 1;
  rule best{1, width(base - 1)};
  std::uint64_t p = base;
  for (std::uint64_t g = 2;; ++g) {
    p *= base;
    if (p > (std::uint64_t{1} << 32)) break;
    if (width(p - 1) * best.group < best.bits * g) best = {g, width(p - 1)};
  }
  return best;
}
std::size_t matrix_bytes(std::uint64_t count, std::uint64_t levels) {
  const rule r = packing_rule(levels);
  const std::uint64_t base = 2 * levels + 1, rest = count % r.group;
  std::uint64_t p = 1;
  for (std::uint64_t d = 0; d < rest; ++d) p *= base;
  return (count / r.group * r.bits + (rest > 0 ? width(p - 1) : 0) + 7) / 8;
}

}  // namespace

TEST_CASE("the factory: defaults, canonical form, and errors in the registry's style") {
  const auto d = make("isgq");
  CHECK(d->describe() == "isgq:kx=1,kd=1,variant=dither,scale=matrix");
  CHECK(d->id() == codec_id::isgq);
  CHECK(static_cast<std::uint16_t>(codec_id::isgq) == 12);
  CHECK(d->name() == "isgq");
  CHECK(d->unbiased());
  const auto m = make("isgq:variant=mse,kd=3,kx=2,lambda=0.5,iterations=2");
  CHECK(m->describe() == "isgq:kx=2,kd=3,variant=mse,iterations=2,lambda=0.5");
  CHECK(!m->unbiased());
  CHECK(make(m->describe())->describe() == m->describe());
  CHECK(make("isgq:variant=mse")->describe() == "isgq:kx=1,kd=1,variant=mse,iterations=1,lambda=1");
  CHECK(make("isgq:kx=32767,kd=7")->options().kx == 32767);
  const auto col = make("isgq:scale=column,kd=2");
  CHECK(col->describe() == "isgq:kx=1,kd=2,variant=dither,scale=column");
  CHECK(col->options().scale == isgq_scale::column);
  CHECK(make(col->describe())->params_tag() == col->params_tag());
  CHECK(col->params_tag() != make("isgq:scale=matrix,kd=2")->params_tag());
  CHECK(d->params_tag() == make("isgq:kx=1,kd=1")->params_tag());
  CHECK(d->params_tag() != make("isgq:kx=1,kd=2")->params_tag());
  CHECK(d->params_tag() != make("isgq:variant=mse")->params_tag());

  CHECK(error_of("isgq:kz=1") ==
        "codec 'isgq': unknown parameter 'kz' (did you mean 'kx'?); valid parameters: kx, kd, variant, "
        "scale, iterations, lambda");
  CHECK(error_of("isgq:variant=lloyd") ==
        "codec 'isgq': parameter 'variant' = 'lloyd': expected one of dither, mse");
  CHECK(error_of("isgq:iterations=2") == "codec 'isgq': parameter 'iterations' applies to variant=mse only");
  CHECK(error_of("isgq:lambda=1") == "codec 'isgq': parameter 'lambda' applies to variant=mse only");
  CHECK(error_of("isgq:variant=mse,scale=column") ==
        "codec 'isgq': parameter 'scale' applies to variant=dither only");
  CHECK(error_of("isgq:scale=row") == "codec 'isgq': parameter 'scale' = 'row': expected one of matrix, column");
  CHECK(error_of("isgq:kx=0") == "codec 'isgq': parameter 'kx' = '0': expected an integer in [1, 32767]");
  CHECK(error_of("isgq:variant=mse,kd=128") ==
        "codec 'isgq': parameter 'kd' = '128': expected an integer in [1, 127]");
  CHECK(error_of("isgq:variant=mse,iterations=17") ==
        "codec 'isgq': parameter 'iterations' = '17': expected an integer in [0, 16]");
  CHECK(error_of("isgq:variant=mse,lambda=-1") != "");
  CHECK(error_of("isgq:variant=mse,lambda=nan") != "");
}

TEST_CASE("payload size: base-(2K+1) packing per matrix, against the paper's rate") {
  // The documented groups: K = 1: 17 indices in 27 bits; K = 3: 11 in 31 bits; K = 7: 4 bits each;
  // K = 127: 8 bits each.
  CHECK(packing_rule(1).group == 17);
  CHECK(packing_rule(1).bits == 27);
  CHECK(packing_rule(3).group == 11);
  CHECK(packing_rule(3).bits == 31);
  CHECK(packing_rule(7).bits == 4 * packing_rule(7).group);
  CHECK(packing_rule(127).bits == 8 * packing_rule(127).group);

  const std::vector<shape> shapes{{784, 128}, {128, 10}, {3, 1}};
  for (const std::uint32_t kx : {1u, 2u, 3u, 7u, 127u, 300u, 32767u}) {
    for (const std::size_t batch : {1u, 7u, 32u}) {
      const std::uint32_t kd = kx == 32767u ? 5u : kx;
      CAPTURE(kx);
      CAPTURE(batch);
      const auto c = make("isgq:kx=" + std::to_string(kx) + ",kd=" + std::to_string(kd));
      const auto layers = random_layers(shapes, batch, kx + 17);
      std::size_t expect = 4;
      for (const fc_factors& f : layers) expect += 8 + matrix_bytes(f.in * batch, kx) + matrix_bytes(f.out * batch, kd);
      CHECK(encode(*c, layers, ctx_at(1)).size() == expect);
      CHECK(c->max_encoded_bytes(layers, batch) == expect);
      // scale=column: a kappa per example, for X and for Δ.
      const auto per_column = make("isgq:kx=" + std::to_string(kx) + ",kd=" + std::to_string(kd) + ",scale=column");
      CHECK(encode(*per_column, layers, ctx_at(1)).size() == expect + shapes.size() * 8 * (batch - 1));
      CHECK(per_column->bits_per_message(layers, batch).layers[0].side_bits == 64 * batch);
      const isgq_message_bits bits = c->bits_per_message(layers, batch);
      CHECK(bits.total_bits() == 8 * expect);
      REQUIRE(bits.layers.size() == shapes.size());
      for (std::size_t l = 0; l < shapes.size(); ++l) {
        const isgq_layer_bits& b = bits.layers[l];
        const double paper = double(batch) * (double(shapes[l].in) * std::log2(2.0 * kx + 1) +
                                              double(shapes[l].out) * std::log2(2.0 * kd + 1));
        CHECK(b.paper_bits == doctest::Approx(paper).epsilon(1e-12));
        CHECK(double(b.code_bits) >= paper);  // no code beats the entropy of uniform indices
        CHECK(b.side_bits == 64);
        CHECK(b.dense_bits == 32 * shapes[l].out * (shapes[l].in + 1));
      }
      // Padding aside, K = 1 and 3 pack within 0.4% of log2(2K+1) bits per index (1.588 vs 1.585,
      // 2.818 vs 2.807); the fixed-width code of the dither codec would need 2 and 3 bits.
      if (kx == 1 || kx == 3) CHECK(double(bits.layers[0].code_bits) <= 1.004 * bits.layers[0].paper_bits + 16);
    }
  }
  // The mse variant sends 2K + 1 float points per matrix instead of kappa.
  const auto m = make("isgq:variant=mse,kx=3,kd=2");
  const auto layers = random_layers(shapes, 5, 1);
  CHECK(m->bits_per_message(layers, 5).layers[1].side_bits == 32 * (7 + 5));
  CHECK(encode(*m, layers, ctx_at(1)).size() == m->max_encoded_bytes(layers, 5));
  // The MLP 784-128-10 at batch 32 and K = 1: compression gain above 60 (the paper's Table 3 regime).
  const std::vector<shape> mlp{{784, 128}, {128, 10}};
  const isgq_message_bits mlp_bits = make("isgq")->bits_per_message(random_layers(mlp, 32, 2), 32);
  CHECK(mlp_bits.total_bits() == 53544);  // docs/codecs.md, "ISGQ"
  CHECK(mlp_bits.compression_gain() > 60);
}

namespace {

// The kappa of every value of a matrix (rows × L, column-major) as the codec computes it: max|M| / K
// over the matrix, or over each example's column with scale=column.
std::vector<float> kappas_of(const float_vector& m, std::size_t rows, std::uint32_t levels, isgq_scale scale) {
  std::vector<float> kappa(m.size());
  const std::size_t segment = scale == isgq_scale::matrix ? m.size() : rows;
  for (std::size_t start = 0; start < m.size(); start += segment) {
    float max = 0;
    for (std::size_t i = start; i < start + segment; ++i) max = std::max(max, std::fabs(m[i]));
    std::fill_n(kappa.begin() + static_cast<std::ptrdiff_t>(start), segment, max / static_cast<float>(levels));
  }
  return kappa;
}

// The payload of the dithered variant rebuilt from an element-by-element reading of isgq.hpp:
// header, scales, then each matrix's indices from the message-wide Philox counters, packed in
// groups LSB-first.
std::vector<std::byte> spec_payload(std::span<const fc_factors> layers, std::uint32_t kx, std::uint32_t kd,
                                    bool per_column, const codec_context& ctx) {
  const kernels::philox_stream rng = kernels::philox_stream::make(ctx.seed, ctx.rank, ctx.iteration, ctx.stream);
  std::vector<std::byte> out(4);
  const auto batch = static_cast<std::uint32_t>(layers[0].batch);
  std::memcpy(out.data(), &batch, 4);
  std::uint64_t counter = 0;
  std::vector<std::vector<std::uint16_t>> matrices;
  for (const fc_factors& f : layers) {
    for (int which = 0; which < 2; ++which) {
      const float_vector& m = which == 0 ? f.x : f.delta;
      const std::size_t rows = which == 0 ? f.in : f.out;
      const std::uint32_t k = which == 0 ? kx : kd;
      const std::vector<float> kappa = kappas_of(m, rows, k, per_column ? isgq_scale::column : isgq_scale::matrix);
      for (std::size_t c = 0; c < (per_column ? f.batch : 1); ++c) {
        const std::size_t at = out.size();
        out.resize(at + 4);
        std::memcpy(out.data() + at, &kappa[c * rows], 4);
      }
      std::vector<std::uint16_t> codes(m.size());
      for (std::size_t i = 0; i < m.size(); ++i) {
        long q = 0;
        if (kappa[i] > 0.0f) {
          const float y = m[i] / kappa[i];
          q = std::clamp(static_cast<long>(std::floor(y + rng.uniform(counter + i))), -long(k), long(k));
        }
        codes[i] = static_cast<std::uint16_t>(q + long(k));
      }
      counter += m.size();
      matrices.push_back(std::move(codes));
    }
    // This layer's scales are out; now its two matrices' indices.
    for (std::size_t which = 0; which < 2; ++which) {
      const std::vector<std::uint16_t>& codes = matrices[matrices.size() - 2 + which];
      const std::uint64_t levels = which == 0 ? kx : kd, base = 2 * levels + 1;
      const rule r = packing_rule(levels);
      std::vector<bool> bits;
      for (std::size_t i = 0; i < codes.size(); i += r.group) {
        const std::size_t digits = std::min<std::size_t>(r.group, codes.size() - i);
        std::uint64_t word = 0, limit = 1;
        for (std::size_t d = digits; d-- > 0;) word = word * base + codes[i + d];
        for (std::size_t d = 0; d < digits; ++d) limit *= base;
        for (unsigned b = 0; b < width(limit - 1); ++b) bits.push_back((word >> b) & 1u);
      }
      std::vector<std::byte> packed((bits.size() + 7) / 8);
      for (std::size_t b = 0; b < bits.size(); ++b)
        if (bits[b]) packed[b / 8] |= std::byte{static_cast<unsigned char>(1u << (b % 8))};
      out.insert(out.end(), packed.begin(), packed.end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the dithered payload matches an element-by-element reading of the format") {
  const std::vector<shape> shapes{{40, 7}, {7, 3}};
  const auto layers = random_layers(shapes, 5, 61, 0.3);
  const codec_context ctx = ctx_at(7);
  for (const auto& [kx, kd, column] : {std::tuple{1u, 1u, false}, std::tuple{2u, 300u, false}, std::tuple{7u, 1u, true}}) {
    CAPTURE(kx);
    CAPTURE(kd);
    CAPTURE(column);
    const auto c = make("isgq:kx=" + std::to_string(kx) + ",kd=" + std::to_string(kd) +
                        (column ? ",scale=column" : ""));
    CHECK(encode(*c, layers, ctx) == spec_payload(layers, kx, kd, column, ctx));
  }
}

TEST_CASE("dithered values: the error is uniform with variance kappa²/12, and X and Δ are dithered independently") {
  // Tolerances (false-failure chance ~1e-9 each for these fixed seeds): |e| <= 1/2 + 1e-5 (exact
  // up to float rounding); the mean of N i.i.d. U(-1/2, 1/2] has sd 1/sqrt(12N), allow 6 sd; e² has
  // mean 1/12 and sd sqrt(1/80 - 1/144) = 0.0745, allow 6 sd/sqrt(N); independent errors have a
  // sample correlation of sd 1/sqrt(N), allow 6/sqrt(N). If X and Δ shared their dither the
  // correlation below would be 1.
  const std::vector<shape> shapes{{784, 784}, {784, 128}};
  auto layers = random_layers(shapes, 16, 5, 0.0);
  layers[0].delta = layers[0].x;  // the same values in X and Δ of layer 0
  layers[1].x = layers[0].x;      // and in X of layer 1
  for (std::size_t e = 0; e < 16; ++e)  // columns of different sizes, so per-column kappas differ
    for (std::size_t i = 0; i < 128; ++i) layers[1].delta[e * 128 + i] *= float(e + 1);
  for (const char* spec : {"isgq:kx=1,kd=1", "isgq:kx=7,kd=3", "isgq:kx=127,kd=127", "isgq:kx=2,kd=1,scale=column"}) {
    const std::string name(spec);
    CAPTURE(name);
    const auto c = make(spec);
    const isgq_scale scale = c->options().scale;
    const codec_context ctx = ctx_at(12);
    const std::vector<std::byte> bytes = encode(*c, layers, ctx);
    std::vector<fc_factors> got;
    REQUIRE(c->decode_factors(bytes, ctx, layers, got).is_ok());
    std::vector<std::vector<double>> errors;
    std::size_t pos = 4;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const std::size_t scales = scale == isgq_scale::matrix ? 1 : 16;
      for (int which = 0; which < 2; ++which) {
        const float_vector& truth = which == 0 ? layers[l].x : layers[l].delta;
        const float_vector& dec = which == 0 ? got[l].x : got[l].delta;
        const std::size_t rows = which == 0 ? layers[l].in : layers[l].out;
        const std::uint32_t k = which == 0 ? c->options().kx : c->options().kd;
        const std::vector<float> kappa = kappas_of(truth, rows, k, scale);
        // The payload carries exactly these kappas, one per matrix or per column.
        for (std::size_t j = 0; j < scales; ++j) {
          float sent;
          std::memcpy(&sent, bytes.data() + pos + 4 * (which * scales + j), 4);
          CHECK(sent == kappa[j * (truth.size() / scales)]);
        }
        std::vector<double> e(truth.size());
        double worst = 0, sum = 0, sum2 = 0;
        for (std::size_t i = 0; i < e.size(); ++i) {
          e[i] = (double(dec[i]) - double(truth[i])) / kappa[i];
          worst = std::max(worst, std::fabs(e[i]));
          sum += e[i];
          sum2 += e[i] * e[i];
        }
        const double n = double(e.size());
        CHECK(worst <= 0.5 + 1e-5);
        CHECK(std::fabs(sum / n) <= 6.0 / std::sqrt(12.0 * n));
        CHECK(std::fabs(sum2 / n - 1.0 / 12.0) <= 6.0 * 0.0745 / std::sqrt(n));
        errors.push_back(std::move(e));
      }
      pos += 8 * scales + matrix_bytes(layers[l].x.size(), c->options().kx) +
             matrix_bytes(layers[l].delta.size(), c->options().kd);
    }
    CHECK(pos == bytes.size());
    const auto correlation = [](const std::vector<double>& a, const std::vector<double>& b) {
      const std::size_t n = std::min(a.size(), b.size());
      double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
      for (std::size_t i = 0; i < n; ++i) {
        sa += a[i];
        sb += b[i];
        saa += a[i] * a[i];
        sbb += b[i] * b[i];
        sab += a[i] * b[i];
      }
      const double m = double(n);
      return (sab / m - sa * sb / (m * m)) /
             std::sqrt((saa / m - sa * sa / (m * m)) * (sbb / m - sb * sb / (m * m)));
    };
    const double n = double(errors[0].size());
    CHECK(std::fabs(correlation(errors[0], errors[1])) <= 6.0 / std::sqrt(n));  // X_0 vs Δ_0 (same values)
    CHECK(std::fabs(correlation(errors[0], errors[2])) <= 6.0 / std::sqrt(n));  // X_0 vs X_1 (same values)
  }
}

TEST_CASE("dithered ISGQ is unbiased, with the variance the error model predicts" * doctest::test_suite("statistics")) {
  // Each value's error is independent with variance kappa²/12 (its matrix's, or its column's
  // kappa), so with sx_e² and sd_e² those of example e's X and Δ:
  //   Var G~_oi = (1/L²) sum_e (Δ_oe² sx_e² + X_ie² sd_e² + sx_e² sd_e²),   Var G~_b,o = (1/L²) sum_e sd_e².
  // T trials (iterations 0..T-1, so independent dithers). Each entry's mean must lie within 5 of
  // its standard errors sqrt(Var/T) of G (normal tail 6e-7 per entry, 18 entries: a false failure
  // ~1e-5 for any seed; these are fixed). The sample variance of T = 4000 bounded variables has a
  // relative sd <= sqrt(2/T) ≈ 0.022 (kurtosis of a sum of products of uniforms is below 3), so
  // 20% is > 9 sd. A dither shared between X and Δ, or a missing 1/L, fails both.
  const std::vector<shape> shapes{{5, 3}};
  const std::size_t batch = 4, trials = 4000;
  auto layers = random_layers(shapes, batch, 23, 0.3);
  for (std::size_t i = 0; i < 3; ++i) layers[0].delta[3 * 3 + i] *= 4.0f;  // one large column of Δ
  const std::vector<double> exact = exact_gradient(layers);
  for (const char* spec : {"isgq:kx=1,kd=1", "isgq:kx=3,kd=2", "isgq:kx=1,kd=1,scale=column"}) {
    const std::string name(spec);
    CAPTURE(name);
    const auto c = make(spec);
    const fc_factors& f = layers[0];
    std::vector<double> sx2(batch), sd2(batch);
    const std::vector<float> kx = kappas_of(f.x, f.in, c->options().kx, c->options().scale);
    const std::vector<float> kd = kappas_of(f.delta, f.out, c->options().kd, c->options().scale);
    for (std::size_t e = 0; e < batch; ++e) {
      sx2[e] = double(kx[e * f.in]) * kx[e * f.in] / 12.0;
      sd2[e] = double(kd[e * f.out]) * kd[e * f.out] / 12.0;
    }
    std::vector<double> sum(exact.size()), sum2(exact.size());
    for (std::size_t t = 0; t < trials; ++t) {
      const codec_context ctx = ctx_at(t);
      const std::vector<float> g = decode(*c, encode(*c, layers, ctx), ctx, layers);
      for (std::size_t k = 0; k < g.size(); ++k) {
        sum[k] += g[k];
        sum2[k] += double(g[k]) * g[k];
      }
    }
    for (std::size_t i = 0; i <= f.in; ++i) {
      for (std::size_t o = 0; o < f.out; ++o) {
        const std::size_t k = i * f.out + o;
        double var = 0;
        for (std::size_t e = 0; e < batch; ++e) {
          if (i < f.in) {
            const double dl = f.delta[e * f.out + o], xv = f.x[e * f.in + i];
            var += dl * dl * sx2[e] + xv * xv * sd2[e] + sx2[e] * sd2[e];
          } else {
            var += sd2[e];
          }
        }
        var /= double(batch * batch);
        const double mean = sum[k] / double(trials);
        const double sample_var = sum2[k] / double(trials) - mean * mean;
        CAPTURE(k);
        CHECK(std::fabs(mean - exact[k]) <= 5.0 * std::sqrt(var / double(trials)));
        CHECK(sample_var == doctest::Approx(var).epsilon(0.2));
      }
    }
  }
}

TEST_CASE("MSE-ISGQ beats dither at the same K on a real MLP batch, and Alg. 1 never increases its objective" * doctest::test_suite("statistics")) {
  // A real batch: mlp 784-128-10 on 784-d synthetic clusters, batch 32, at initialization. The
  // comparison is deterministic (fixed seeds); dither's error is averaged over 4 dithers. The
  // objective is ||G - G~||² + lambda (sum(G - G~))² / N; rounds are accepted only when they do not
  // increase it as computed in double (isgq.cpp), and the float rounding of G~ moves it by ~1e-7
  // relative, hence the 1e-5 slack in the monotonicity check.
  synthetic_options so;
  so.size = 256;
  so.dim = 784;
  so.classes = 10;
  so.seed = 4;
  const dataset data = make_synthetic(so);
  const mlp model(784, {128}, 10);
  std::vector<float> params(model.num_params());
  model.init(params, 8);
  std::vector<std::size_t> batch(32);
  std::iota(batch.begin(), batch.end(), std::size_t{40});
  std::vector<fc_factors> layers;
  (void)model.loss_and_factors(params, data, batch, layers);
  const std::vector<double> exact = exact_gradient(layers);

  for (const std::uint32_t k : {1u, 3u}) {
    CAPTURE(k);
    const std::string ks = "kx=" + std::to_string(k) + ",kd=" + std::to_string(k);
    const auto dither = make("isgq:" + ks);
    std::vector<double> dither_sq(layers.size());
    for (std::uint64_t t = 0; t < 4; ++t) {
      const std::vector<float> g = decode(*dither, encode(*dither, layers, ctx_at(t)), ctx_at(t), layers);
      for (std::size_t l = 0; l < layers.size(); ++l) dither_sq[l] += error_of_layer(layers[l], exact, g).sq / 4;
    }
    std::vector<double> previous(layers.size(), std::numeric_limits<double>::infinity());
    for (std::uint32_t it = 0; it <= 3; ++it) {
      CAPTURE(it);
      const auto mse = make("isgq:variant=mse," + ks + ",iterations=" + std::to_string(it));
      const std::vector<float> g = decode(*mse, encode(*mse, layers, ctx_at(0)), ctx_at(99), layers);
      for (std::size_t l = 0; l < layers.size(); ++l) {
        CAPTURE(l);
        const layer_error e = error_of_layer(layers[l], exact, g);
        const double objective = e.sq + e.bias / double(layers[l].out * (layers[l].in + 1));  // lambda = 1
        if (it == 1)
          MESSAGE("K=" << k << " layer " << l << ": relative error mse " << std::sqrt(e.sq / e.norm_sq) << ", dither "
                       << std::sqrt(dither_sq[l] / e.norm_sq));
        CHECK(objective <= previous[l] * (1 + 1e-5));
        if (it == 1) CHECK(objective < (1 - 1e-3) * previous[l]);  // the first round improves on the plain bins
        if (it >= 1) CHECK(e.sq < dither_sq[l]);
        previous[l] = objective;
      }
    }
  }
}

TEST_CASE("gradient_from_factors is (1/L) Δ [X; 1]ᵀ, and decode is decode_factors then that product") {
  // Float sums of L products: each entry is within (L + 1) 2^-24 of the sum of |terms| / L.
  const std::vector<shape> shapes{{50, 20}, {20, 7}};
  const std::size_t batch = 9;
  const auto layers = random_layers(shapes, batch, 3);
  std::vector<float> g(total_params(layers) + 5, 42.0f);
  gradient_from_factors(layers, g);
  const std::vector<double> exact = exact_gradient(layers);
  for (const fc_factors& f : layers)
    for (std::size_t i = 0; i <= f.in; ++i)
      for (std::size_t o = 0; o < f.out; ++o) {
        double abs_sum = 0;
        for (std::size_t e = 0; e < batch; ++e)
          abs_sum += std::fabs(double(f.delta[e * f.out + o]) * (i < f.in ? double(f.x[e * f.in + i]) : 1.0));
        const std::size_t k = f.offset + i * f.out + o;
        CHECK(std::fabs(g[k] - exact[k]) <= double(batch + 1) * 0x1p-24 * abs_sum / double(batch) + 1e-30);
      }
  for (std::size_t k = total_params(layers); k < g.size(); ++k) CHECK(g[k] == 42.0f);  // untouched

  for (const char* spec : {"isgq:kx=2,kd=5", "isgq:variant=mse,kx=2,kd=2,iterations=2"}) {
    const std::string name(spec);
    CAPTURE(name);
    const auto c = make(spec);
    const std::vector<std::byte> bytes = encode(*c, layers, ctx_at(5));
    CHECK(encode(*c, layers, ctx_at(5)) == bytes);  // deterministic in (factors, ctx)
    std::vector<fc_factors> got;
    REQUIRE(c->decode_factors(bytes, ctx_at(5), layers, got).is_ok());
    std::vector<float> via_factors(g.size(), 42.0f), direct(g.size(), 42.0f);
    gradient_from_factors(got, via_factors);
    REQUIRE(c->decode(bytes, ctx_at(5), layers, direct).is_ok());
    CHECK(std::memcmp(via_factors.data(), direct.data(), 4 * g.size()) == 0);
    // Shapes are read for offset, in and out only: model::fc_shapes() style shapes decode the same.
    std::vector<fc_factors> bare(layers.size());
    for (std::size_t l = 0; l < bare.size(); ++l) {
      bare[l].offset = layers[l].offset;
      bare[l].in = layers[l].in;
      bare[l].out = layers[l].out;
    }
    std::vector<float> from_bare(g.size(), 42.0f);
    REQUIRE(c->decode(bytes, ctx_at(5), bare, from_bare).is_ok());
    CHECK(from_bare == direct);
    // The dither needs the sender's ctx: another one decodes to other (finite) values.
    std::vector<float> other(g.size(), 42.0f);
    REQUIRE(c->decode(bytes, ctx_at(6), layers, other).is_ok());
    CHECK((other != direct) == c->unbiased());
    CHECK((encode(*c, layers, ctx_at(6)) != bytes) == c->unbiased());
  }
}

TEST_CASE("encode refuses inconsistent or non-finite factors") {
  const std::vector<shape> shapes{{6, 4}, {4, 2}};
  const auto c = make("isgq");
  std::vector<std::byte> out;
  auto layers = random_layers(shapes, 3, 1);
  layers[1].batch = 2;
  CHECK_THROWS_AS(c->encode(layers, ctx_at(0), out), invariant_error);
  layers = random_layers(shapes, 3, 1);
  layers[0].x.pop_back();
  CHECK_THROWS_AS(c->encode(layers, ctx_at(0), out), invariant_error);
  layers = random_layers(shapes, 3, 1);
  layers[1].delta[2] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(c->encode(layers, ctx_at(0), out), invariant_error);
  CHECK_THROWS_AS(c->encode({}, ctx_at(0), out), invariant_error);
  CHECK(out.empty());
  // All-zero matrices (kappa = 0) encode, and decode to exact zeros.
  layers = random_layers(shapes, 3, 1);
  std::fill(layers[0].x.begin(), layers[0].x.end(), 0.0f);
  std::fill(layers[1].delta.begin(), layers[1].delta.end(), 0.0f);
  std::vector<fc_factors> got;
  REQUIRE(c->decode_factors(encode(*c, layers, ctx_at(0)), ctx_at(0), layers, got).is_ok());
  CHECK(std::all_of(got[0].x.begin(), got[0].x.end(), [](float v) { return v == 0.0f; }));
  CHECK(std::all_of(got[1].delta.begin(), got[1].delta.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("decode rejects malformed payloads with a status and never reads out of bounds") {
  // One layer 17 -> 6 at L = 1, K = 1: [u32 L][f32 kx][f32 kd][X: one 27-bit word, 4 bytes]
  // [Δ: 6 indices, one 10-bit word, 2 bytes]: 18 bytes.
  const std::vector<shape> shapes{{17, 6}};
  const auto layers = random_layers(shapes, 1, 77, 0.0);
  const auto c = make("isgq");
  const codec_context ctx = ctx_at(3);
  const std::vector<std::byte> good = encode(*c, layers, ctx);
  REQUIRE(good.size() == 18);
  std::vector<float> grad(total_params(layers));
  REQUIRE(c->decode(good, ctx, layers, grad).is_ok());

  const auto expect_corrupt = [&](std::vector<std::byte> bytes, const std::string& fragment) {
    CAPTURE(fragment);
    const status st = c->decode(bytes, ctx, layers, grad);
    CHECK(st.code() == errc::corrupt);
    CHECK(st.message().find(fragment) != std::string::npos);
  };
  const auto put32 = [](std::vector<std::byte> b, std::size_t at, std::uint32_t v) {
    std::memcpy(b.data() + at, &v, 4);
    return b;
  };
  expect_corrupt({}, "shorter than its 4-byte header");
  expect_corrupt(std::vector<std::byte>(good.begin(), good.begin() + 3), "shorter than its 4-byte header");
  expect_corrupt(put32(good, 0, 0), "batch size 0");
  expect_corrupt(put32(good, 0, 0xffffffffu), "batch size 4294967295");
  expect_corrupt(put32(good, 0, 2), "payload of 18 bytes, expected 22 for 1 layers at batch 2");
  expect_corrupt(std::vector<std::byte>(good.begin(), good.end() - 1), "payload of 17 bytes, expected 18");
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  expect_corrupt(longer, "payload of 19 bytes, expected 18");
  expect_corrupt(put32(good, 4, 0x7fc00000u), "layer 0 X: scale 0 is NaN");
  expect_corrupt(put32(good, 8, 0x7f800000u), "layer 0 delta: scale 0 is NaN, infinite");
  expect_corrupt(put32(good, 8, 0xbf800000u), "layer 0 delta: scale 0 is NaN, infinite or negative");  // -1
  expect_corrupt(put32(good, 4, 0x80000000u), "layer 0 X: scale 0 is NaN, infinite or negative");     // -0
  expect_corrupt(put32(good, 12, 0xffffffffu), "layer 0 X: packed word at index 0 is not below");
  std::vector<std::byte> padded = good;
  padded[17] |= std::byte{0x80};  // bit 15 of Δ's 10-bit word
  expect_corrupt(padded, "layer 0 delta: nonzero padding");
  // A zero scale admits only the index 0 (code K), as the dither codec.
  expect_corrupt(put32(good, 4, 0), "is nonzero with a zero scale");
  // Scales so large that the rebuilt gradient overflows.
  expect_corrupt(put32(put32(good, 4, 0x7f000000u), 8, 0x7f000000u), "overflows");

  // mse: a NaN point.
  const auto m = make("isgq:variant=mse");
  std::vector<std::byte> mse_bytes = encode(*m, layers, ctx);
  REQUIRE(m->decode(mse_bytes, ctx, layers, grad).is_ok());
  mse_bytes = put32(mse_bytes, 4 + 4 * 4, 0x7fc00000u);  // beta[1]
  const status st = m->decode(mse_bytes, ctx, layers, grad);
  CHECK(st.code() == errc::corrupt);
  CHECK(st.message().find("layer 0 delta: reconstruction point 1 is NaN") != std::string::npos);

  // Shapes that do not fit the gradient are the caller's error.
  std::vector<float> small(grad.size() - 1);
  CHECK(c->decode(good, ctx, layers, small).code() == errc::invalid);
  CHECK(c->decode(good, ctx, {}, grad).code() == errc::invalid);
  std::vector<fc_factors> two(2);
  two[0].in = two[1].in = 17;
  two[0].out = two[1].out = 6;
  two[1].offset = 5;
  std::vector<float> big(500);
  CHECK(c->decode(good, ctx, two, big).code() == errc::invalid);  // overlapping layers
  std::vector<fc_factors> empty_layer(1);
  CHECK(c->decode(good, ctx, empty_layer, big).code() == errc::invalid);

  // scale=column: a zero kappa admits only index 0 in its own column. Layer 17 -> 6 at L = 2:
  // [L][kx0 kx1][kd0 kd1][X: 34 indices, 2 words, 7 bytes][Δ: 12 indices, 3 bytes].
  const auto col = make("isgq:scale=column");
  const auto pair = random_layers(shapes, 2, 78, 0.0);
  const std::vector<std::byte> col_bytes = encode(*col, pair, ctx);
  REQUIRE(col_bytes.size() == 4 + 16 + 7 + 3);
  std::vector<float> col_grad(total_params(pair));
  REQUIRE(col->decode(col_bytes, ctx, pair, col_grad).is_ok());
  std::vector<std::byte> zeroed = put32(col_bytes, 8, 0);  // kappa of X's second column
  const status col_st = col->decode(zeroed, ctx, pair, col_grad);
  CHECK(col_st.code() == errc::corrupt);
  CHECK(col_st.message().find("is nonzero with a zero scale") != std::string::npos);
  CHECK(col->decode(put32(col_bytes, 16, 0xff800000u), ctx, pair, col_grad).code() == errc::corrupt);  // kd1 = -inf

  // Random bytes, truncations and single-bit flips of valid payloads of every variant: ok or
  // corrupt, never an exception or a crash (the sanitizer build reruns this).
  std::mt19937 gen(2024);
  const auto big_layers = random_layers(std::vector<shape>{{30, 9}, {9, 4}}, 5, 8);
  std::vector<float> g(total_params(big_layers));
  for (const auto* codec : {c.get(), m.get(), col.get()}) {
    const std::vector<std::byte> valid = encode(*codec, big_layers, ctx);
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<std::byte> bytes = valid;
      switch (trial % 3) {
        case 0:
          bytes[gen() % bytes.size()] ^= std::byte{static_cast<unsigned char>(1u << (gen() % 8))};
          break;
        case 1:
          bytes.resize(gen() % bytes.size());
          break;
        default:
          for (std::byte& b : bytes) b = std::byte{static_cast<unsigned char>(gen())};
          if (trial % 2) bytes = put32(bytes, 0, 5);  // a plausible L, so the layers get parsed
      }
      status s;
      CHECK_NOTHROW(s = codec->decode(bytes, ctx, big_layers, g));
      CHECK((s.is_ok() || s.code() == errc::corrupt));
    }
  }
}
