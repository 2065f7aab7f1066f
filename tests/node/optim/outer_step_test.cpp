#include "node/optim/outer_step.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace qgossip;

TEST_CASE("outer step: lr 1, momentum 0 hands back the pseudo-gradient x_t - x_{t,H}") {
  outer_step o(3, outer_spec{});
  CHECK(outer_spec{}.is_identity());
  std::vector<float> start{1, 2, 3}, end{0.5f, 2.5f, 3};
  auto s = o.apply(start, end);
  CHECK(std::vector<float>(s.begin(), s.end()) == std::vector<float>{0.5f, -0.5f, 0});
}

TEST_CASE("outer step: Nesterov s = lr (d + mu m), m = mu m + d, by hand over three rounds") {
  outer_step o(1, outer_spec{.lr = 0.5, .momentum = 0.5, .nesterov = true});
  std::vector<float> start{0};
  std::vector<float> end{-2};  // d = 2 each round
  CHECK(o.apply(start, end)[0] == doctest::Approx(0.5 * (2 + 0.5 * 2)));    // m = 2
  CHECK(o.apply(start, end)[0] == doctest::Approx(0.5 * (2 + 0.5 * 3)));    // m = 3
  CHECK(o.apply(start, end)[0] == doctest::Approx(0.5 * (2 + 0.5 * 3.5)));  // m = 3.5
}

TEST_CASE("outer step: heavy ball s = lr m") {
  outer_step o(1, outer_spec{.lr = 2, .momentum = 0.5, .nesterov = false});
  std::vector<float> start{1}, end{0};  // d = 1
  CHECK(o.apply(start, end)[0] == doctest::Approx(2 * 1.0));
  CHECK(o.apply(start, end)[0] == doctest::Approx(2 * 1.5));
}

TEST_CASE("outer step: momentum is linear in d, so the mean of the nodes' steps is the step of the mean") {
  // Three nodes with different pseudo-gradients: averaging their outer steps equals one outer
  // step driven by the averaged pseudo-gradient (DiLoCo's global update).
  const outer_spec spec{.lr = 0.7, .momentum = 0.9, .nesterov = true};
  std::vector<outer_step> nodes(3, outer_step(2, spec));
  outer_step mean_node(2, spec);
  const std::vector<std::vector<float>> ends{{0.1f, -0.3f}, {0.4f, 0.2f}, {-0.2f, 0.5f}};
  const std::vector<float> start{0, 0};
  for (int round = 0; round < 5; ++round) {
    std::vector<double> mean_step(2, 0.0);
    std::vector<float> mean_end(2, 0.0f);
    for (std::size_t k = 0; k < 3; ++k) {
      auto s = nodes[k].apply(start, ends[k]);
      for (std::size_t i = 0; i < 2; ++i) {
        mean_step[i] += s[i] / 3.0;
        mean_end[i] += ends[k][i] / 3.0f;
      }
    }
    auto m = mean_node.apply(start, mean_end);
    for (std::size_t i = 0; i < 2; ++i) CHECK(m[i] == doctest::Approx(mean_step[i]).epsilon(1e-5));
  }
}

// Checkpoints: the outer momentum carries over; a fresh outer_step that loads it steps exactly as
// the saved one; one that does not, differs.
TEST_CASE("outer step: save_state then load_state into a fresh instance continues bit for bit") {
  const outer_spec spec{.lr = 0.7, .momentum = 0.9, .nesterov = true};
  outer_step a(2, spec);
  for (int i = 0; i < 4; ++i) {
    std::vector<float> start{1.0f, -2.0f}, end{0.9f - 0.1f * static_cast<float>(i), -1.5f};
    (void)a.apply(start, end);
  }
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();
  outer_step b(2, spec), control(2, spec);
  state_reader r(saved, "outer_step");
  b.load_state(r);
  r.expect_end();
  std::vector<float> start{0.3f, 0.4f}, end{0.1f, 0.7f};
  const auto sa = a.apply(start, end);
  const std::vector<float> va(sa.begin(), sa.end());
  const auto sb = b.apply(start, end);
  CHECK(std::vector<float>(sb.begin(), sb.end()) == va);
  const auto sc = control.apply(start, end);
  CHECK(std::vector<float>(sc.begin(), sc.end()) != va);
}

TEST_CASE("outer step: load_state refuses another lr, momentum, kind or dimension") {
  outer_step a(2, outer_spec{.lr = 0.7, .momentum = 0.9, .nesterov = true});
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();
  for (const outer_spec& other : {outer_spec{.lr = 0.5, .momentum = 0.9, .nesterov = true},
                                  outer_spec{.lr = 0.7, .momentum = 0.8, .nesterov = true},
                                  outer_spec{.lr = 0.7, .momentum = 0.9, .nesterov = false}}) {
    outer_step b(2, other);
    state_reader r(saved, "outer_step");
    CHECK_THROWS_WITH_AS(b.load_state(r), doctest::Contains("saved outer step"), state_error);
  }
  outer_step wider(3, outer_spec{.lr = 0.7, .momentum = 0.9, .nesterov = true});
  state_reader r(saved, "outer_step");
  CHECK_THROWS_WITH_AS(wider.load_state(r), doctest::Contains("holds 2 floats, expected 3"), state_error);
}
