// The loss screen (node/run/loss_screen.hpp): its check examples and the loss gap it reports, on a
// separable two-class set where a model, its negation (labels flipped) and zero have known losses.
// Deterministic: no sampling.
#include "node/run/loss_screen.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "node/models/softmax_regression.hpp"

using namespace qgossip;

namespace {

// 300 examples in 2-d: class 1 when the first feature is positive.
dataset separable() {
  dataset d;
  d.size = 300;
  d.dim = 2;
  d.classes = 2;
  for (std::size_t i = 0; i < d.size; ++i) {
    const float a = (static_cast<float>(i % 10) - 4.5f) / 4.5f;
    d.features.insert(d.features.end(), {a, 0.5f});
    d.labels.push_back(a > 0 ? 1 : 0);
  }
  return d;
}

// W (2 classes x 2 inputs, column-major) and b: logits (−s·x0, s·x0).
std::vector<float> model_of(float s) { return {-s, s, 0, 0, 0, 0}; }

}  // namespace

TEST_CASE("loss_screen: check examples spread over the shard, and the gap of a copy to the node's own term") {
  const softmax_regression m(2, 2);
  const dataset shard = separable();
  loss_screen screen(m, shard);
  REQUIRE(screen.check().size == loss_screen::kExamples);
  for (std::size_t i = 0; i < screen.check().size; ++i)  // every (300/128)-th example, in order
    CHECK(screen.check().labels[i] == shard.labels[i * shard.size / loss_screen::kExamples]);

  const std::vector<float> zero(6, 0.0f), good = model_of(8), flipped = model_of(-8);
  // zero: ln 2 on every example; good: near 0; flipped (trained on the other labels): far above.
  CHECK(screen.gap(zero, zero) == 0.0);
  const double down = screen.gap(good, zero);
  CHECK(down < -0.5);
  CHECK(down > -std::log(2.0) - 1e-6);
  const double up = screen.gap(flipped, good);
  CHECK(up > 3.0);  // what a margin of 1 leaves out
  CHECK(screen.gap(good, good) == 0.0);
  // The own term's loss is remembered between calls with the same values only.
  CHECK(screen.gap(flipped, zero) == doctest::Approx(up + down));
  std::vector<float> broken = good;
  broken[0] = NAN;
  CHECK(std::isnan(screen.gap(broken, good)));
}

TEST_CASE("loss_screen: a shard smaller than the check takes all its examples") {
  const softmax_regression m(2, 2);
  dataset small = separable().subset(std::vector<std::size_t>{0, 5, 9});
  loss_screen screen(m, small);
  CHECK(screen.check().size == 3);
  CHECK(screen.check().labels == small.labels);
}
