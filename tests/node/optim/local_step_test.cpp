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

// Checkpoints: the momentum buffer carries over; a fresh local_step that loads it steps exactly as
// the saved one; one that does not, differs.
TEST_CASE("local step: save_state then load_state into a fresh instance continues bit for bit") {
  const std::vector<float> x{0.5f, -1.0f, 2.0f};
  local_step a(3, 0.9, 1e-3);
  for (int i = 0; i < 5; ++i) {
    std::vector<float> g{0.1f * static_cast<float>(i), -0.3f, 0.7f};
    (void)a.apply(g, x);
  }
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();

  local_step b(3, 0.9, 1e-3), control(3, 0.9, 1e-3);
  state_reader r(saved, "local_step");
  b.load_state(r);
  r.expect_end();
  for (int i = 5; i < 9; ++i) {
    std::vector<float> ga{0.1f * static_cast<float>(i), -0.3f, 0.7f}, gb = ga, gc = ga;
    const auto da = a.apply(ga, x);
    const auto db = b.apply(gb, x);
    const auto dc = control.apply(gc, x);
    CHECK(std::vector<float>(db.begin(), db.end()) == std::vector<float>(da.begin(), da.end()));
    CHECK(std::vector<float>(dc.begin(), dc.end()) != std::vector<float>(da.begin(), da.end()));
  }
}

TEST_CASE("local step: load_state refuses another momentum or dimension") {
  local_step a(3, 0.9, 0.0);
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();
  local_step other_momentum(3, 0.5, 0.0);
  state_reader r1(saved, "local_step");
  CHECK_THROWS_WITH_AS(other_momentum.load_state(r1), doctest::Contains("saved momentum"), state_error);
  local_step other_dim(4, 0.9, 0.0);
  state_reader r2(saved, "local_step");
  CHECK_THROWS_WITH_AS(other_dim.load_state(r2), doctest::Contains("holds 3 floats, expected 4"), state_error);
}

// torch.optim.SGD's p.add_(d, alpha=−η) rounds once per element (a fused multiply-add); so does
// descend. With η = d = 1 + 2⁻¹² the product 1 + 2⁻¹¹ + 2⁻²⁴ is not a float: rounded first (two
// roundings) the step from 2 gives 1 − 2⁻¹¹, rounded once 1 − 2⁻¹¹ − 2⁻²⁴, which is a float.
TEST_CASE("local step: descend rounds x − lr·d once, as torch's SGD step does") {
  const float e = 1.0f + 0x1p-12f;
  std::vector<float> x{2.0f, 2.0f}, d{e, 0.0f};
  local_step::descend(x, e, d);
  CHECK(x[0] == 1.0f - 0x1p-11f - 0x1p-24f);
  CHECK(x[1] == 2.0f);
  // Weight decay g + λ·x likewise (torch's d_p.add(p, alpha=λ)): −2 + e·e, rounded once.
  local_step s(1, 0.0, static_cast<double>(e));
  std::vector<float> g{-2.0f}, at{e};
  const auto dir = s.apply(g, at);
  CHECK(dir[0] == -1.0f + 0x1p-11f + 0x1p-24f);
}
