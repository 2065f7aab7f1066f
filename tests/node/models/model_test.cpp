// Models: the documented parameter layout, initialization, gradients against finite differences of
// an independent double-precision reference, chunked evaluation, and learning with plain SGD.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "node/data/batch_sampler.hpp"
#include "node/models/external_model.hpp"
#include "node/models/mlp.hpp"
#include "node/models/model_factory.hpp"
#include "node/models/softmax_regression.hpp"
#include "node/data/synthetic.hpp"

using namespace qgossip;

namespace {

model_spec spec(const std::string& kind, std::vector<std::size_t> hidden) {
  model_spec s;
  const auto k = parse_name<model_kind>(kind);
  REQUIRE(k.has_value());
  s.kind = *k;
  s.hidden = std::move(hidden);
  return s;
}


// An independent, naive double-precision forward pass over the layout model.hpp documents:
// widths {in, hidden..., classes}; per layer W (out × in, column-major, entry (o, i) at i·out + o)
// then b; ReLU after every layer but the last; mean softmax cross-entropy.
struct reference {
  std::vector<std::size_t> widths;

  std::vector<double> logits(const std::vector<double>& p, std::span<const float> x) const {
    std::vector<double> a(x.begin(), x.end());
    std::size_t offset = 0;
    for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
      const std::size_t in = widths[l], out = widths[l + 1];
      std::vector<double> z(out);
      for (std::size_t o = 0; o < out; ++o) {
        z[o] = p[offset + out * in + o];
        for (std::size_t i = 0; i < in; ++i) z[o] += p[offset + i * out + o] * a[i];
        if (l + 2 < widths.size()) z[o] = std::max(z[o], 0.0);
      }
      offset += out * in + out;
      a = std::move(z);
    }
    return a;
  }
  double loss(const std::vector<double>& p, const dataset& d, std::span<const std::size_t> batch) const {
    double sum = 0;
    for (std::size_t i : batch) {
      const auto z = logits(p, d.row(i));
      const double m = *std::max_element(z.begin(), z.end());
      double s = 0;
      for (double v : z) s += std::exp(v - m);
      sum += m + std::log(s) - z[d.labels[i]];
    }
    return sum / static_cast<double>(batch.size());
  }
};

dataset small_data(std::size_t size, std::size_t dim, std::size_t classes, std::uint64_t seed) {
  synthetic_options o;
  o.size = size;
  o.dim = dim;
  o.classes = classes;
  o.seed = seed;
  return make_synthetic(o);
}

std::vector<std::size_t> iota_n(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{0});
  return v;
}

// Compares the model's float gradient with central differences of the double reference.
// Why these numbers: in double with eps = 1e-6 the difference quotient's rounding error is
// ~1e-16·|L|/eps ≈ 1e-10 and its truncation error ~eps²·|L'''| ≈ 1e-12; a ReLU kink is crossed only
// if a pre-activation lies within ~1e-6 of 0 (fixed seeds, and it did not). The model computes in
// float, accumulating ~1e-7 relative error per operation over sums of ≤ 30 terms. So
// |g − fd| ≤ 1e-5 + 1e-3·|fd| holds with two orders of magnitude to spare, while a wrong layout or
// a wrong factor (e.g. a missing 1/batch) is off by O(|g|).
void check_gradient(const model& m, const reference& ref, const dataset& d,
                    std::span<const std::size_t> batch, std::uint64_t seed) {
  std::vector<float> params(m.num_params()), grad(m.num_params());
  m.init(params, seed);
  // Non-zero biases so their gradients meet non-trivial activations.
  for (std::size_t l = 0; l + 1 < ref.widths.size(); ++l) {
    const std::size_t b0 = m.layer_bounds()[l] + ref.widths[l] * ref.widths[l + 1];
    for (std::size_t k = b0; k < m.layer_bounds()[l + 1]; ++k) params[k] = 0.05f * float(k % 7) - 0.1f;
  }
  const double loss = m.loss_and_grad(params, d, batch, grad);
  std::vector<double> p(params.begin(), params.end());
  CHECK(loss == doctest::Approx(ref.loss(p, d, batch)).epsilon(1e-5));
  const double eps = 1e-6;
  int bad = 0;
  for (std::size_t j = 0; j < p.size(); ++j) {
    const double keep = p[j];
    p[j] = keep + eps;
    const double up = ref.loss(p, d, batch);
    p[j] = keep - eps;
    const double down = ref.loss(p, d, batch);
    p[j] = keep;
    const double fd = (up - down) / (2 * eps);
    if (std::abs(grad[j] - fd) > 1e-5 + 1e-3 * std::abs(fd)) {
      if (++bad <= 5) MESSAGE("param " << j << ": model " << grad[j] << " finite difference " << fd);
    }
  }
  CHECK(bad == 0);
}

// Plain SGD over all of `train` for `epochs` epochs.
void sgd(const model& m, std::vector<float>& params, const dataset& train, double lr, std::size_t batch,
         int epochs, std::uint64_t seed) {
  std::vector<float> grad(params.size());
  const auto shard = iota_n(train.size);
  batch_sampler sampler(shard, batch, seed);
  while (sampler.epoch() < epochs) {
    (void)m.loss_and_grad(params, train, sampler.next(), grad);
    for (std::size_t k = 0; k < params.size(); ++k) params[k] -= static_cast<float>(lr) * grad[k];
  }
}

}  // namespace

TEST_CASE("layer bounds and names follow the documented layout") {
  const auto m = make_model(spec("mlp", {128}), 784, 10);
  CHECK(m->layer_bounds() == std::vector<std::size_t>{0, 100480, 101770});
  CHECK(m->num_params() == 101770);
  CHECK(m->describe() == "mlp 784-128-10");
  CHECK(m->input_dim() == 784);
  CHECK(m->classes() == 10);
  const auto s = make_model(spec("softmax", {}), 784, 10);
  CHECK(s->layer_bounds() == std::vector<std::size_t>{0, 7850});
  CHECK(s->describe() == "softmax 784-10");
  const auto deep = make_model(spec("mlp", {64, 32}), 20, 3);
  CHECK(deep->layer_bounds() == std::vector<std::size_t>{0, 1344, 3424, 3523});
  CHECK(deep->describe() == "mlp 20-64-32-3");
}

TEST_CASE("bad model specs are configuration errors") {
  CHECK_FALSE(parse_name<model_kind>("mpl").has_value());  // the config loader names the kinds
  CHECK(name_list<model_kind>() == "mlp, softmax, lenet5, resnet20, torchscript, external");
  CHECK_THROWS_AS((void)make_model(spec("softmax", {10}), 5, 3), config_error);
  CHECK_THROWS_AS((void)make_model(spec("mlp", {}), 5, 3), config_error);
  CHECK_THROWS_AS((void)make_model(spec("mlp", {10, 0}), 5, 3), config_error);
  CHECK_THROWS_AS((void)make_model(spec("mlp", {10}), 0, 3), config_error);
  CHECK_THROWS_AS((void)make_model(spec("softmax", {}), 5, 1), config_error);
  CHECK_THROWS_AS((void)make_model(spec("softmax", {}), 5, 257), config_error);
  CHECK_THROWS_AS((void)make_model(spec("external", {}), 5, 3), config_error);  // a program attaches it
}

TEST_CASE("an external model is its size alone, and never computes (the node starts from the program's own)") {
  const external_model m(3);
  CHECK(m.num_params() == 3);
  CHECK(m.layer_bounds() == std::vector<std::size_t>{0, 3});
  std::vector<float> params(3, 0.0f);
  CHECK_THROWS_AS(m.init(params, 42), invariant_error);
  std::vector<float> grad(3);
  const dataset none;
  const std::vector<std::size_t> batch{0};
  CHECK_THROWS_AS((void)m.loss_and_grad(params, none, batch, grad), invariant_error);
  CHECK_THROWS_AS((void)m.evaluate(params, none, model::kAllExamples), invariant_error);
}

TEST_CASE("init he is deterministic, He/Glorot scaled, with zero biases") {
  model_spec he = spec("mlp", {256});
  he.init = init_kind::he;
  const auto m = make_model(he, 400, 10);
  std::vector<float> a(m->num_params()), b(m->num_params()), c(m->num_params());
  m->init(a, 1);
  m->init(b, 1);
  m->init(c, 2);
  CHECK(a == b);
  CHECK(a != c);
  const auto& bounds = m->layer_bounds();
  // Layer 0: 256 × 400 weights ~ N(0, 2/400). The sample std of 102400 draws is within 1% of
  // sqrt(2/400) (relative standard error 1/sqrt(2·102400) = 0.2%).
  double ss = 0;
  for (std::size_t k = 0; k < 256 * 400; ++k) ss += double(a[k]) * a[k];
  CHECK(std::sqrt(ss / (256 * 400)) == doctest::Approx(std::sqrt(2.0 / 400)).epsilon(0.01));
  for (std::size_t k = 256 * 400; k < bounds[1]; ++k) CHECK(a[k] == 0.0f);
  // Output layer: 10 × 256 ~ N(0, 2/266); 2560 draws, relative standard error 1.4%, so 7% is 5 sigma.
  ss = 0;
  for (std::size_t k = bounds[1]; k < bounds[1] + 2560; ++k) ss += double(a[k]) * a[k];
  CHECK(std::sqrt(ss / 2560) == doctest::Approx(std::sqrt(2.0 / 266)).epsilon(0.07));
  for (std::size_t k = bounds[1] + 2560; k < bounds[2]; ++k) CHECK(a[k] == 0.0f);
}

TEST_CASE("init pytorch (the default) is torch.nn.Linear's: weights and biases uniform on ±1/sqrt(fan_in)") {
  const auto m = make_model(spec("mlp", {256}), 400, 10);
  std::vector<float> a(m->num_params()), b(m->num_params());
  m->init(a, 1);
  m->init(b, 1);
  CHECK(a == b);
  const auto& bounds = m->layer_bounds();
  // Layer 0 (weights and biases, 102656 draws) and layer 1 (2570 draws): every value inside the
  // bound, and the sample variance within 5 standard errors of bound²/3 (uniform's variance; the
  // relative standard error of a sample variance of n uniforms is sqrt(0.8/n): 0.28% and 1.8%).
  for (std::size_t l = 0; l < 2; ++l) {
    const double bound = 1.0 / std::sqrt(l == 0 ? 400.0 : 256.0);
    double ss = 0;
    bool inside = true;
    for (std::size_t k = bounds[l]; k < bounds[l + 1]; ++k) {
      ss += double(a[k]) * a[k];
      inside = inside && std::abs(a[k]) <= bound;
    }
    const double n = double(bounds[l + 1] - bounds[l]);
    CHECK(inside);
    CHECK(ss / n == doctest::Approx(bound * bound / 3).epsilon(5 * std::sqrt(0.8 / n)));
  }
  CHECK_FALSE(parse_name<init_kind>("xavier").has_value());  // the config loader names he and pytorch
  CHECK(name_list<init_kind>() == "he, pytorch");
}

TEST_CASE("softmax regression gradient matches finite differences") {
  const dataset d = small_data(40, 6, 4, 1);
  const softmax_regression m(6, 4);
  const std::vector<std::size_t> batch{3, 17, 17, 0, 39, 8, 21, 5};
  check_gradient(m, reference{{6, 4}}, d, batch, 11);
}

TEST_CASE("MLP gradient matches finite differences") {
  SUBCASE("one hidden layer") {
    const dataset d = small_data(60, 7, 3, 2);
    const mlp m(7, {5}, 3);
    const std::vector<std::size_t> batch{1, 2, 3, 5, 8, 13, 21, 34, 55};
    check_gradient(m, reference{{7, 5, 3}}, d, batch, 12);
  }
  SUBCASE("two hidden layers, larger") {
    const dataset d = small_data(100, 30, 5, 3);
    const mlp m(30, {16, 8}, 5);
    const auto batch = iota_n(20);
    check_gradient(m, reference{{30, 16, 8, 5}}, d, batch, 13);
  }
  SUBCASE("a single example") {
    const dataset d = small_data(10, 4, 2, 4);
    const mlp m(4, {3}, 2);
    const std::vector<std::size_t> batch{7};
    check_gradient(m, reference{{4, 3, 2}}, d, batch, 14);
  }
}

TEST_CASE("reused scratch buffers do not leak between calls of different batch sizes") {
  const dataset d = small_data(200, 12, 3, 5);
  for (const model_spec& spec : {spec("softmax", {}), spec("mlp", {9, 6})}) {
    CAPTURE(spec.kind);
    const auto reused = make_model(spec, 12, 3);
    std::vector<float> p(reused->num_params()), g(p.size()), g_fresh(p.size());
    reused->init(p, 3);
    const auto big = iota_n(150);
    const std::vector<std::size_t> small{4, 9, 1};
    (void)reused->loss_and_grad(p, d, big, g);
    (void)reused->evaluate(p, d);
    const double loss = reused->loss_and_grad(p, d, small, g);
    const auto fresh = make_model(spec, 12, 3);
    CHECK(fresh->loss_and_grad(p, d, small, g_fresh) == loss);
    CHECK(g == g_fresh);
  }
}

TEST_CASE("evaluate over several chunks agrees with the reference") {
  const dataset d = small_data(2500, 8, 4, 6);  // chunks of 1000, 1000 and 500
  const reference ref{{8, 10, 4}};
  const mlp m(8, {10}, 4);
  std::vector<float> params(m.num_params());
  m.init(params, 21);
  const std::vector<double> p(params.begin(), params.end());
  std::size_t correct = 0;
  for (std::size_t i = 0; i < d.size; ++i) {
    const auto z = ref.logits(p, d.row(i));
    if (std::max_element(z.begin(), z.end()) - z.begin() == d.labels[i]) ++correct;
  }
  const eval_result r = m.evaluate(params, d);
  CHECK(r.examples == 2500);
  // Loss: float logits vs double ones, relative 1e-5 is ~100 float roundings of margin.
  CHECK(r.loss == doctest::Approx(ref.loss(p, d, iota_n(2500))).epsilon(1e-5));
  // Accuracy: float and double agree on the arg-max unless two logits tie within ~1e-6;
  // with these fixed seeds none does.
  CHECK(r.accuracy == doctest::Approx(double(correct) / 2500).epsilon(1e-12));
  const eval_result part = m.evaluate(params, d, 1500);
  CHECK(part.examples == 1500);
  CHECK(part.loss == doctest::Approx(ref.loss(p, d, iota_n(1500))).epsilon(1e-5));
}

TEST_CASE("plain SGD drives the loss down and separable data gets classified") {
  // Four Gaussian classes in 20 dimensions, centres ~N(0, 1) per coordinate, noise 1: the centres
  // are ~6.3 apart, so the Bayes error is ~Φ(-3.16)·3 ≈ 0.2%. A separate test set from the same
  // centres measures accuracy.
  synthetic_options o;
  o.size = 4000;
  o.dim = 20;
  o.classes = 4;
  o.seed = 100;
  o.centre_seed = 7;
  const dataset train = make_synthetic(o);
  o.size = 2000;
  o.seed = 200;
  const dataset test = make_synthetic(o);

  for (const model_spec& spec : {spec("softmax", {}), spec("mlp", {32})}) {
    CAPTURE(spec.kind);
    const auto m = make_model(spec, 20, 4);
    std::vector<float> params(m->num_params());
    m->init(params, 1);
    const eval_result before = m->evaluate(params, train);
    sgd(*m, params, train, 0.1, 32, 3, 5);
    const eval_result after = m->evaluate(params, train);
    const eval_result held_out = m->evaluate(params, test);
    MESSAGE(m->describe() << ": train loss " << before.loss << " -> " << after.loss << ", test accuracy "
                          << held_out.accuracy);
    // Deterministic (fixed seeds, no threads), so nothing can flake; the thresholds sit well away
    // from what this build reaches (softmax 2.80 -> 0.040, accuracy 0.989; mlp 1.47 -> 0.027,
    // 0.988) so another compiler's or ISA's rounding cannot cross them, while an untrained model
    // (loss ~ln 4 = 1.39 or more, accuracy ~0.25) or a broken gradient is far on the other side.
    CHECK(before.loss > 1.0);
    CHECK(after.loss < 0.1);
    CHECK(held_out.accuracy > 0.95);
  }
}

// --- Gradient factors (loss_and_factors, for ISGQ) ---

namespace {

// Rebuilds each layer's gradient from its factors in double, (1/L) Δ Xᵀ and (1/L) Δ 1, and compares
// it with the float gradient loss_and_grad writes, layer by layer, in the Frobenius norm.
// Why 1e-4: both sides are float computations of the same sums. An entry of loss_and_grad's product
// carries at most ~L·2^-24 relative error of its sum of |terms|; a hidden layer's Δ goes through
// one more float product (inner size = the next layer's width ≤ 128) on both paths, and Δ itself
// differs only by the scaling 1/L (exact for L = 32, one rounding otherwise). So the relative
// difference is ≲ (32 + 128 + 10)·6e-8 ≈ 1e-5 even where terms cancel to a tenth of their sum,
// while a wrong factor (a stale X overwritten by back-propagation, a Δ scaled by 1/L, a transposed
// layout) is off by O(1). Measured on this build: 4e-8 to 1e-7.
template <class Factored>  // mlp or softmax_regression: a model and a factored_model
void check_factors(const Factored& m, const dataset& d, std::span<const std::size_t> batch, std::uint64_t seed) {
  std::vector<float> params(m.num_params()), grad(m.num_params());
  m.init(params, seed);
  for (std::size_t k = 0; k < params.size(); ++k)  // non-zero biases (and a nudge everywhere)
    params[k] += 0.01f * float(int(k % 11) - 5);
  const double loss = m.loss_and_grad(params, d, batch, grad);
  std::vector<fc_factors> factors;
  CHECK(m.loss_and_factors(params, d, batch, factors) == loss);  // the same forward pass, bit for bit

  const std::vector<fc_factors> shapes = m.fc_shapes();
  REQUIRE(factors.size() == shapes.size());
  REQUIRE(factors.size() + 1 == m.layer_bounds().size());
  const std::size_t n = batch.size();
  for (std::size_t l = 0; l < factors.size(); ++l) {
    CAPTURE(l);
    const fc_factors& f = factors[l];
    CHECK(f.offset == m.layer_bounds()[l]);
    CHECK(shapes[l].offset == f.offset);
    CHECK(shapes[l].in == f.in);
    CHECK(shapes[l].out == f.out);
    CHECK(shapes[l].batch == 0);
    CHECK(f.offset + f.out * (f.in + 1) == m.layer_bounds()[l + 1]);
    CHECK(f.batch == n);
    REQUIRE(f.x.size() == f.in * n);
    REQUIRE(f.delta.size() == f.out * n);
    if (l == 0) {
      for (std::size_t e = 0; e < n; ++e)
        CHECK(std::equal(f.x.begin() + e * f.in, f.x.begin() + (e + 1) * f.in, d.row(batch[e]).begin()));
    } else {
      CHECK(std::all_of(f.x.begin(), f.x.end(), [](float v) { return v >= 0.0f; }));  // ReLU outputs
    }
    double diff = 0, norm = 0;
    for (std::size_t o = 0; o < f.out; ++o) {
      for (std::size_t i = 0; i <= f.in; ++i) {  // i == in: the bias, whose input is 1
        double g = 0;
        for (std::size_t e = 0; e < n; ++e)
          g += double(f.delta[e * f.out + o]) * (i < f.in ? double(f.x[e * f.in + i]) : 1.0);
        g /= double(n);
        const double model_g = grad[f.offset + i * f.out + o];
        diff += (g - model_g) * (g - model_g);
        norm += model_g * model_g;
      }
    }
    CHECK(norm > 0);
    CHECK(std::sqrt(diff) <= 1e-4 * std::sqrt(norm));
  }
  // The output layer's Δ is each example's own softmax − onehot: its columns sum to 0, and the
  // label's entry is the only negative one.
  const fc_factors& last = factors.back();
  for (std::size_t e = 0; e < n; ++e) {
    double sum = 0;
    for (std::size_t c = 0; c < last.out; ++c) {
      const float v = last.delta[e * last.out + c];
      sum += v;
      CHECK((v < 0.0f) == (c == d.labels[batch[e]]));
    }
    CHECK(std::abs(sum) < 1e-6);
  }
}

}  // namespace

TEST_CASE("loss_and_factors reproduces loss_and_grad's loss and gradient") {
  SUBCASE("mlp 784-128-10 at batch 32") {
    const dataset d = small_data(300, 784, 10, 8);
    const mlp m(784, {128}, 10);
    std::vector<std::size_t> batch(32);
    for (std::size_t e = 0; e < batch.size(); ++e) batch[e] = (e * 37 + 5) % 300;
    check_factors(m, d, batch, 31);
  }
  SUBCASE("mlp with two hidden layers, batch 7 (1/L is not exact)") {
    const dataset d = small_data(100, 30, 5, 9);
    const mlp m(30, {16, 8}, 5);
    const std::vector<std::size_t> batch{3, 1, 4, 1, 5, 92, 65};
    check_factors(m, d, batch, 32);
  }
  SUBCASE("softmax 784-10 at batch 25") {
    const dataset d = small_data(200, 784, 10, 10);
    const softmax_regression m(784, 10);
    const auto batch = iota_n(25);
    check_factors(m, d, batch, 33);
  }
}

TEST_CASE("loss_and_factors reuses its output and follows the batch size") {
  const dataset d = small_data(200, 12, 3, 11);
  const mlp m(12, {9, 6}, 3);
  std::vector<float> params(m.num_params());
  m.init(params, 4);
  std::vector<fc_factors> reused, fresh;
  (void)m.loss_and_factors(params, d, iota_n(150), reused);
  const std::vector<std::size_t> small{4, 9, 1};
  const double loss = m.loss_and_factors(params, d, small, reused);
  CHECK(mlp(12, {9, 6}, 3).loss_and_factors(params, d, small, fresh) == loss);
  REQUIRE(reused.size() == fresh.size());
  for (std::size_t l = 0; l < reused.size(); ++l) {
    CHECK(reused[l].batch == 3);
    CHECK(reused[l].x == fresh[l].x);
    CHECK(reused[l].delta == fresh[l].delta);
  }
}
