#include "node/optim/local_step.hpp"

#include <doctest/doctest.h>

#include <vector>

#include "core/errors.hpp"

using namespace qgossip;

TEST_CASE("local step: plain SGD passes the gradient through untouched") {
  local_step s(3, 0.0, 0.0);
  std::vector<float> g{1, -2, 3}, x{5, 5, 5};
  auto d = s.apply(g, x);
  CHECK(d.data() == g.data());
  CHECK(std::vector<float>(d.begin(), d.end()) == std::vector<float>{1, -2, 3});
}

TEST_CASE("local step: weight decay adds lambda x; heavy-ball accumulates beta m + g") {
  local_step s(2, 0.5, 0.25);
  std::vector<float> x{2, -4};
  std::vector<float> g1{1, 1};
  auto d1 = s.apply(g1, x);  // g' = (1.5, 0); m1 = g'
  CHECK(d1[0] == 1.5f);
  CHECK(d1[1] == 0.0f);
  std::vector<float> g2{0, 2};
  auto d2 = s.apply(g2, x);  // g' = (0.5, 1); m2 = 0.5 m1 + g' = (1.25, 1)
  CHECK(d2[0] == 1.25f);
  CHECK(d2[1] == 1.0f);
  // With a constant gradient the direction tends to g / (1 - beta) = 2 g.
  local_step c(1, 0.5, 0.0);
  std::vector<float> zero{0}, one{1};
  float last = 0;
  for (int t = 0; t < 60; ++t) {
    std::vector<float> g{1};
    last = c.apply(g, zero)[0];
  }
  CHECK(last == doctest::Approx(2.0f).epsilon(1e-6));
}

TEST_CASE("local step: bad settings are invariant errors") {
  CHECK_THROWS_AS(local_step(1, 1.0, 0.0), invariant_error);
  CHECK_THROWS_AS(local_step(1, 0.0, -1.0), invariant_error);
}
