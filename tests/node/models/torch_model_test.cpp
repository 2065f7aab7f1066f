// node/models/torch: LeNet-5 and ResNet-20 on libtorch (CPU): exact parameter counts, the flat
// layout (every parameter and gradient a view into the flat tensors), gradients against finite
// differences, seeded init, training, averaged BatchNorm buffers, and the factory's errors.
// Built only when CMake found Torch (target qgossip_torch). Includes no torch header.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/models/factored_model.hpp"
#include "node/models/model_factory.hpp"
#include "node/models/torch/lenet5.hpp"
#include "node/models/torch/resnet20.hpp"
#include "node/models/torch/torch_model.hpp"

using namespace qgossip;

namespace {

constexpr image_shape kMnist{1, 28, 28};
constexpr image_shape kCifar{3, 32, 32};

// n images of `shape` with N(0, 1) pixels; labels cycle through the classes and, when `signal`,
// shift channel 0 of class c by signal·(c == 0 ? 1 : -1) (2 classes separable by that channel's mean).
dataset images(std::size_t n, const image_shape& shape, std::size_t classes, std::uint64_t seed,
               float signal = 0) {
  dataset d;
  d.size = n;
  d.dim = shape.size();
  d.classes = classes;
  d.shape = shape;
  d.features.resize(n * d.dim);
  d.labels.resize(n);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t plane = shape.height * shape.width;
  for (std::size_t i = 0; i < n; ++i) {
    d.labels[i] = static_cast<std::uint8_t>(i % classes);
    for (std::size_t j = 0; j < d.dim; ++j) {
      const float shift = j < plane ? signal * (d.labels[i] == 0 ? 1.0f : -1.0f) : 0.0f;
      d.features[i * d.dim + j] = normal(rng) + shift;
    }
  }
  return d;
}

std::vector<std::size_t> iota_n(std::size_t n, std::size_t from = 0) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

std::vector<float> initialized(const model& m, std::uint64_t seed) {
  std::vector<float> p(m.num_params());
  m.init(p, seed);
  return p;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Population standard deviation of params[begin, end).
double std_dev(const std::vector<float>& p, std::size_t begin, std::size_t end) {
  double sum = 0, sq = 0;
  for (std::size_t i = begin; i < end; ++i) sum += p[i], sq += double(p[i]) * p[i];
  const double n = double(end - begin);
  return std::sqrt(sq / n - (sum / n) * (sum / n));
}

}  // namespace

TEST_CASE("torch models: exact parameter counts, one layer per tensor") {
  const torch_options cpu;
  const auto mnist = make_lenet5(kMnist, 10, cpu);
  // conv1 6·1·25 + 6, conv2 16·6·25 + 16, fc 400·120 + 120, 120·84 + 84, 84·10 + 10.
  CHECK(mnist->num_params() == 61706);
  CHECK(mnist->layer_bounds() ==
        std::vector<std::size_t>{0, 150, 156, 2556, 2572, 50572, 50692, 60772, 60856, 61696, 61706});
  CHECK(make_lenet5(kCifar, 10, cpu)->num_params() == 62006);  // conv1 6·3·25 + 6: 300 more
  CHECK(mnist->describe() == "lenet5 (torch, cpu)");
  CHECK(mnist->input_dim() == 784);

  // convs 432 + 6·2304 + (4608 + 5·9216) + (18432 + 5·36864) = 267,696; BN 2·(16 + 6·16 + 6·32 +
  // 6·64) = 1,376; fc 64·10 + 10 = 650.
  const auto resnet = make_resnet20(kCifar, 10, cpu);
  CHECK(resnet->num_params() == 269722);
  CHECK(resnet->num_trainable() == 269722);
  CHECK(resnet->layer_bounds().size() == 60);  // 19 convs, 19 BN (weight, bias), fc weight, bias
  CHECK(resnet->describe() == "resnet20 (torch, cpu)");

  torch_options average;
  average.average_buffers = true;
  const auto averaged = make_resnet20(kCifar, 10, average);
  CHECK(averaged->num_trainable() == 269722);
  CHECK(averaged->num_params() == 269722 + 1376);     // + running means and variances
  CHECK(averaged->layer_bounds().size() == 60 + 38);  // one bound per float buffer
  CHECK(averaged->describe() == "resnet20 (torch, cpu, buffers averaged)");
  CHECK(mnist->transfers().bytes == 0);
}

TEST_CASE("torch models: every parameter and its gradient are views into the flat tensors") {
  const auto m = make_lenet5(kMnist, 10, {});
  const auto check_views = [&] {
    const auto places = m->placements();
    REQUIRE(places.size() + 1 == m->layer_bounds().size());
    for (std::size_t i = 0; i < places.size(); ++i) {
      CAPTURE(i);
      CHECK(places[i].offset == std::ptrdiff_t(m->layer_bounds()[i]));
      CHECK(places[i].grad_offset == std::ptrdiff_t(m->layer_bounds()[i]));
      CHECK(places[i].numel == m->layer_bounds()[i + 1] - m->layer_bounds()[i]);
      CHECK(places[i].contiguous);
    }
  };
  check_views();
  const dataset d = images(40, kMnist, 10, 1);
  std::vector<float> p = initialized(*m, 1), g(m->num_params());
  (void)m->loss_and_grad(p, d, iota_n(8), g);
  check_views();  // backward accumulated into the views: it did not replace them

  // The module reads the caller's vector: a huge bias on class 3 makes every prediction 3.
  const eval_result before = m->evaluate(p, d);
  p[m->layer_bounds()[9] + 3] = 1000.0f;  // fc3's bias, class 3
  const eval_result after = m->evaluate(p, d);
  CHECK(after.accuracy == doctest::Approx(0.1));  // 4 of the 40 labels are 3
  CHECK(after.loss > before.loss + 100);
  CHECK(m->evaluate(p, d).loss == after.loss);  // same parameters, same bits

  // With buffers averaged, the running statistics are views too (and have no gradient).
  torch_options average;
  average.average_buffers = true;
  const auto r = make_resnet20({3, 8, 8}, 2, average);
  const auto places = r->placements();
  REQUIRE(places.size() + 1 == r->layer_bounds().size());
  for (std::size_t i = 0; i < places.size(); ++i) {
    CAPTURE(i);
    CHECK(places[i].offset == std::ptrdiff_t(r->layer_bounds()[i]));
    CHECK((r->layer_bounds()[i] < r->num_trainable()) == (places[i].grad_offset >= 0));
  }
}

// Central differences of evaluate() (float forward, loss accumulated in double; LeNet-5 has no
// BatchNorm or dropout, so eval mode computes the training loss) against loss_and_grad's float
// gradient, with step h = 1e-3. Tolerance, checked by trying h from 1e-1 down to 1e-4 on this setup:
//  - rounding: the loss carries |δL| ≲ 1e-8 (at h = 1e-4 the quotients still agree to 3e-5, so
//    2|δL|/2h ≤ 3e-5 there), which at h = 1e-3 is ≲ 1e-5; the float gradient itself is good to
//    ~1e-6 relative;
//  - truncation and kinks: ReLU and max pooling are not smooth; a pre-activation within h of a kink
//    bends the quotient. At h = 1e-2 that cost up to 7e-4, at h = 1e-3 the largest error seen over
//    all checked coordinates is 4e-5.
// So |g − fd| ≤ 2e-4 + 2e-3·|fd| holds with a margin of 5x, while each tensor's largest entry
// (|g| ≥ 1e-2 here) is checked, so a wrong layout or a wrong factor (a missing 1/batch) fails by
// 50x. Along the normalized gradient the directional derivative is |g| ≈ 0.8, matched to 6e-5
// relative (allowed: 5e-4).
TEST_CASE("torch models: LeNet-5 gradients match finite differences") {
  const auto m = make_lenet5({1, 12, 12}, 4, {});
  const dataset d = images(16, {1, 12, 12}, 4, 2);
  const std::vector<std::size_t> batch{3, 7, 8, 12, 15};
  const dataset sub = d.subset(batch);
  std::vector<float> p = initialized(*m, 3), g(m->num_params());
  const double loss = m->loss_and_grad(p, d, batch, g);
  CHECK(loss == doctest::Approx(m->evaluate(p, sub).loss).epsilon(1e-6));

  const double h = 1e-3;
  const auto fd = [&](const std::vector<float>& dir) {
    std::vector<float> plus(p), minus(p);
    for (std::size_t i = 0; i < p.size(); ++i) plus[i] += float(h * dir[i]), minus[i] -= float(h * dir[i]);
    return (m->evaluate(plus, sub).loss - m->evaluate(minus, sub).loss) / (2 * h);
  };
  const auto check_coordinate = [&](std::size_t i) {
    std::vector<float> e(p.size(), 0.0f);
    e[i] = 1.0f;
    const double numeric = fd(e);
    CAPTURE(i);
    CHECK(std::abs(g[i] - numeric) <= 2e-4 + 2e-3 * std::abs(numeric));
  };
  const auto& bounds = m->layer_bounds();
  std::mt19937_64 rng(5);
  for (std::size_t l = 0; l + 1 < bounds.size(); ++l) {
    CAPTURE(l);
    const auto first = g.begin() + std::ptrdiff_t(bounds[l]),
               last = g.begin() + std::ptrdiff_t(bounds[l + 1]);
    const auto largest =
        std::max_element(first, last, [](float a, float b) { return std::abs(a) < std::abs(b); });
    CHECK(std::abs(*largest) >= 1e-2f);
    check_coordinate(std::size_t(largest - g.begin()));
    check_coordinate(bounds[l] + rng() % (bounds[l + 1] - bounds[l]));
  }
  double norm = 0;
  for (float v : g) norm += double(v) * v;
  norm = std::sqrt(norm);
  std::vector<float> dir(g);
  for (float& v : dir) v = float(v / norm);
  CHECK(fd(dir) == doctest::Approx(norm).epsilon(5e-4));
}

TEST_CASE("torch models: init is a function of the seed") {
  const auto a = make_lenet5(kMnist, 10, {});
  const auto b = make_lenet5(kMnist, 10, {});
  CHECK(same_bits(initialized(*a, 7), initialized(*b, 7)));
  CHECK(same_bits(initialized(*a, 7), initialized(*a, 7)));
  CHECK_FALSE(same_bits(initialized(*a, 7), initialized(*a, 8)));
  // PyTorch's default init: conv1's weights uniform in ±1/sqrt(fan_in) = ±0.2.
  const std::vector<float> p = initialized(*a, 7);
  const auto w1 = std::minmax_element(p.begin(), p.begin() + 150);
  CHECK(*w1.first >= -0.2f);
  CHECK(*w1.second <= 0.2f);
  CHECK(*w1.second - *w1.first > 0.3f);

  const auto r = make_resnet20(kCifar, 10, {});
  const std::vector<float> q = initialized(*r, 7);
  CHECK(same_bits(q, initialized(*r, 7)));
  CHECK_FALSE(same_bits(q, initialized(*r, 8)));
  const auto& rb = r->layer_bounds();
  // Kaiming-normal: the last conv (64·64·9 weights, fan_in 576) has std sqrt(2/576) = 0.0589.
  REQUIRE(rb[55] - rb[54] == 64 * 64 * 9);  // layer3.2.conv2: tensor 3 + 8·6 + 3
  CHECK(std_dev(q, rb[54], rb[55]) == doctest::Approx(std::sqrt(2.0 / 576)).epsilon(0.02));
  // BN weight 1, bias 0 (bn1 follows conv1).
  CHECK(std::all_of(q.begin() + std::ptrdiff_t(rb[1]), q.begin() + std::ptrdiff_t(rb[2]),
                    [](float v) { return v == 1; }));
  CHECK(std::all_of(q.begin() + std::ptrdiff_t(rb[2]), q.begin() + std::ptrdiff_t(rb[3]),
                    [](float v) { return v == 0; }));
}

TEST_CASE("torch models: ResNet-20 learns CIFAR-shaped data on the CPU") {
  const auto m = make_resnet20(kCifar, 2, {});
  const dataset d = images(64, kCifar, 2, 5, 0.5f);
  std::vector<float> p = initialized(*m, 11), g(m->num_params());
  std::vector<double> losses;
  for (int step = 0; step < 15; ++step) {
    const auto batch = iota_n(32, std::size_t(step % 2) * 32);
    m->set_step_size(0.1);
    losses.push_back(m->loss_and_grad(p, d, batch, g));
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= 0.1f * g[i];
  }
  const double first = (losses[0] + losses[1]) / 2, last = (losses[13] + losses[14]) / 2;
  CAPTURE(first);
  CAPTURE(last);
  CHECK(last < 0.5 * first);
  CHECK(m->evaluate(p, d).examples == 64);
}

TEST_CASE("torch models: averaged BatchNorm statistics follow plain SGD to the forward's values") {
  torch_options average;
  average.average_buffers = true;
  const image_shape shape{3, 8, 8};
  const auto avg = make_resnet20(shape, 2, average);
  const auto local = make_resnet20(shape, 2, {});
  const dataset d = images(16, shape, 2, 9, 0.5f);
  const std::vector<std::size_t> batch = iota_n(16);
  std::vector<float> p = initialized(*avg, 4), g(avg->num_params());
  std::vector<float> pl = initialized(*local, 4), gl(local->num_params());
  const std::size_t n = avg->num_trainable();
  REQUIRE(std::equal(pl.begin(), pl.end(), p.begin()));  // the parameters come first, then the buffers
  const std::vector<float> before(p.begin() + std::ptrdiff_t(n), p.end());
  CHECK(before == local->module_buffers());  // fresh BN: means 0, variances 1

  avg->set_step_size(0.1);
  const double loss = avg->loss_and_grad(p, d, batch, g);
  CHECK(loss == local->loss_and_grad(pl, d, batch, gl));
  CHECK(std::equal(gl.begin(), gl.end(), g.begin()));  // the same gradient for the parameters
  // The local model's running statistics are what the forward computed: x − 0.1·g lands there.
  const std::vector<float> stats = local->module_buffers();
  REQUIRE(stats.size() == p.size() - n);
  double worst = 0;
  for (std::size_t i = 0; i < stats.size(); ++i)
    worst = std::max(worst, double(std::abs(p[n + i] - 0.1f * g[n + i] - stats[i])));
  CHECK(worst < 1e-5);
  CHECK(std::any_of(g.begin() + std::ptrdiff_t(n), g.end(), [](float v) { return v != 0; }));

  // evaluate reads the statistics from the vector: different variances, different loss.
  std::vector<float> q(p);
  for (std::size_t i = n; i < q.size(); ++i) q[i] = 4.0f;
  CHECK(avg->evaluate(q, d).loss != avg->evaluate(p, d).loss);
}

// Issue 32: a cosine schedule ends at step size 0, and every libtorch model died there (an
// invariant lr > 0). A step of size 0 is valid: the parameters' gradient is the ordinary one, and
// the averaged buffers' pseudo-gradient is 0, so x − 0·g leaves the whole vector where it was.
TEST_CASE("torch models: a step size of 0 is valid and moves nothing, the averaged buffers included") {
  torch_options average;
  average.average_buffers = true;
  const image_shape shape{3, 8, 8};
  const auto avg = make_resnet20(shape, 2, average);
  const auto plain = make_lenet5(kMnist, 10, {});
  const dataset d = images(16, shape, 2, 9, 0.5f);
  std::vector<float> p = initialized(*avg, 4), g(avg->num_params()), g_positive(avg->num_params());
  const std::size_t n = avg->num_trainable();

  avg->set_step_size(0.1);
  const double loss_positive = avg->loss_and_grad(p, d, iota_n(16), g_positive);
  avg->set_step_size(0.0);
  CHECK(avg->loss_and_grad(p, d, iota_n(16), g) == loss_positive);
  CHECK(std::equal(g.begin(), g.begin() + std::ptrdiff_t(n), g_positive.begin()));
  CHECK(std::all_of(g.begin() + std::ptrdiff_t(n), g.end(), [](float v) { return v == 0; }));
  CHECK(std::all_of(g.begin(), g.end(), [](float v) { return std::isfinite(v); }));

  plain->set_step_size(0.0);  // no buffers averaged: nothing reads it, nothing refuses it
  const dataset md = images(8, kMnist, 10, 3);
  std::vector<float> pm = initialized(*plain, 2), gm(plain->num_params());
  CHECK(std::isfinite(plain->loss_and_grad(pm, md, iota_n(8), gm)));
}

// model.dtype bf16: the module computes in bf16 on the node's float32 vectors. x_1 is the fp32
// module's init rounded to bf16 (every value's low 16 bits zero, within half a bf16 ulp, 2^-8
// relative), the parameters and gradients are views of bf16 flat tensors, the gradient is the fp32
// one up to bf16's rounding (the seeded batch's relative difference below 10 %, measured 6.2 %: bf16
// keeps 8 bits and LeNet's layers of products lose some), and it learns the task as fp32 does.
TEST_CASE("torch models: a bf16 model computes in bf16 on the node's float32 vectors") {
  torch_options bf16;
  bf16.dtype = model_dtype::bf16;
  const auto m = make_lenet5(kMnist, 2, bf16);
  const auto m32 = make_lenet5(kMnist, 2, {});
  CHECK(m->describe() == "lenet5 (torch, cpu, bf16)");
  std::vector<float> p = initialized(*m, 5);
  const std::vector<float> p32 = initialized(*m32, 5);
  REQUIRE(p.size() == p32.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &p[i], sizeof bits);
    REQUIRE((bits & 0xFFFFu) == 0);
    REQUIRE(std::abs(p[i] - p32[i]) <= std::abs(p32[i]) / 256);
  }
  const auto* t = dynamic_cast<const torch_model*>(m.get());
  REQUIRE(t != nullptr);
  const auto bounds = m->layer_bounds();
  const auto placements = t->placements();
  for (std::size_t i = 0; i < placements.size(); ++i) {
    CHECK(placements[i].offset == std::ptrdiff_t(bounds[i]));
    CHECK(placements[i].grad_offset == std::ptrdiff_t(bounds[i]));
  }

  const dataset d = images(64, kMnist, 2, 5, 0.5f);
  std::vector<float> g(p.size()), g32(p.size());
  (void)m->loss_and_grad(p, d, iota_n(32), g);
  (void)m32->loss_and_grad(p, d, iota_n(32), g32);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < g.size(); ++i) diff += double(g[i] - g32[i]) * (g[i] - g32[i]), norm += double(g32[i]) * g32[i];

  CHECK(std::sqrt(diff / norm) < 0.1);

  // 30 steps of SGD from the same x_1 on each: bf16 ends within 0.05 of fp32's loss.
  const auto train = [&](const model& net, std::vector<float> x) {
    std::vector<float> grad(x.size());
    double last = 0;
    for (int step = 0; step < 30; ++step) {
      last = net.loss_and_grad(x, d, iota_n(32, std::size_t(step % 2) * 32), grad);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] -= 0.05f * grad[i];
    }
    return std::pair{last, net.evaluate(x, d).accuracy};
  };
  const auto [loss16, acc16] = train(*m, p);
  const auto [loss32, acc32] = train(*m32, p);
  CAPTURE(loss16);
  CAPTURE(loss32);
  CHECK(loss32 < 0.6);
  CHECK(loss16 < loss32 + 0.05);
  CHECK(acc16 >= acc32 - 0.05);
}

TEST_CASE("torch models: evaluate works in chunks and agrees with loss_and_grad") {
  const auto m = make_lenet5(kMnist, 10, {});
  const dataset d = images(1200, kMnist, 10, 6);
  const std::vector<float> p = initialized(*m, 2);
  const eval_result all = m->evaluate(p, d);  // chunks of 500, 500, 200
  CHECK(all.examples == 1200);
  const eval_result head = m->evaluate(p, d.subset(iota_n(700)));
  const eval_result tail = m->evaluate(p, d.subset(iota_n(500, 700)));
  CHECK(all.loss == doctest::Approx((700 * head.loss + 500 * tail.loss) / 1200).epsilon(1e-9));
  CHECK(all.accuracy == doctest::Approx((700 * head.accuracy + 500 * tail.accuracy) / 1200));
  CHECK(m->evaluate(p, d, 300).examples == 300);
  std::vector<float> g(m->num_params());
  CHECK(m->loss_and_grad(p, d, iota_n(50), g) == doctest::Approx(m->evaluate(p, d, 50).loss).epsilon(1e-6));
}

TEST_CASE("torch models: the factory builds them and refuses bad specs") {
  CHECK(have_torch());
  model_spec spec;
  spec.kind = model_kind::resnet20;
  const auto r = make_model(spec, 3072, 10, kCifar);
  CHECK(r->num_params() == 269722);
  spec.kind = model_kind::lenet5;
  CHECK(make_model(spec, 784, 10, kMnist)->num_params() == 61706);
  CHECK(dynamic_cast<const factored_model*>(r.get()) == nullptr);  // no gradient factors: no ISGQ

  const auto fails = [&](model_spec s, std::size_t dim, const image_shape& shape, const std::string& part) {
    CAPTURE(part);
    try {
      (void)make_model(s, dim, 10, shape);
      FAIL("no error");
    } catch (const config_error& e) {
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  fails(spec, 20, {}, "needs image data");
  fails(spec, 3 * 64 * 64, {3, 64, 64}, "at most 32x32, got 3x64x64");
  spec.kind = model_kind::resnet20;
  fails(spec, 20, {}, "needs image data");
  spec.device = device_kind::automatic;  // the node resolves it before building
  fails(spec, 3072, kCifar, "device must be cpu or cuda");
  spec.device = device_kind::cpu;
  spec.threads = 0;
  fails(spec, 3072, kCifar, "threads must be >= 1");
  spec.threads = 1;
  spec.dtype = model_dtype::fp16;
  fails(spec, 3072, kCifar, "dtype fp16 needs device cuda");
  spec.dtype = model_dtype::bf16;
  spec.buffers = buffers_kind::average;
  fails(spec, 3072, kCifar, "with averaged buffers: their pseudo-gradient needs fp32");
  spec.buffers = buffers_kind::local;
  spec.dtype = model_dtype::fp32;
  spec.kind = model_kind::torchscript;
  fails(spec, 3072, kCifar, "needs a path");
  spec.kind = model_kind::resnet20;
  spec.device = device_kind::cuda;
  try {
    (void)make_model(spec, 3072, 10, kCifar);  // fine where a GPU is visible
  } catch (const config_error& e) {
    CHECK(std::string(e.what()).find("no CUDA support or no GPU is visible") != std::string::npos);
  }
}

// Not run by default: test_torch_models -ns -tc='*per training step*' prints ms per step.
TEST_CASE("torch models: milliseconds per training step" * doctest::skip()) {
  const auto time_steps = [](const model& m, const dataset& d, std::size_t batch_size) {
    std::vector<float> p = initialized(m, 1), g(m.num_params());
    const auto batch = iota_n(batch_size);
    (void)m.loss_and_grad(p, d, batch, g);  // warm-up
    const int steps = 10;
    const auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) (void)m.loss_and_grad(p, d, batch, g);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
           steps;
  };
  const auto r = make_resnet20(kCifar, 10, {});
  const auto l = make_lenet5(kMnist, 10, {});
  const double resnet_ms = time_steps(*r, images(32, kCifar, 10, 1), 32);
  const double lenet_ms = time_steps(*l, images(64, kMnist, 10, 1), 64);
  MESSAGE("resnet20 batch 32: " << resnet_ms << " ms/step; lenet5 1x28x28 batch 64: " << lenet_ms
                                << " ms/step");
}
