#include "topology/weights.hpp"

#include <vector>

#include <doctest/doctest.h>

#include "tests/topology/test_util.hpp"
#include "topology/topology.hpp"

namespace qgossip {
namespace {

using test::config_error_of;
using test::contains;

// Every row and column sums to 1 within 1e-12: a handful of double additions of values <= 1.
void check_doubly_stochastic(const Eigen::MatrixXd& w) {
  for (Eigen::Index k = 0; k < w.rows(); ++k) {
    CHECK(w.row(k).sum() == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(w.col(k).sum() == doctest::Approx(1.0).epsilon(1e-12));
  }
  CHECK(w.minCoeff() >= 0.0);
  CHECK(w == w.transpose());
}

TEST_CASE("uniform weights: 1/(max_degree+1) on edges, the rest on the diagonal") {
  Eigen::MatrixXd w = make_weights(ring(6), weight_kind::uniform);
  for (int i = 0; i < 6; ++i) {
    CHECK(w(i, i) == doctest::Approx(1.0 / 3));
    CHECK(w(i, (i + 1) % 6) == doctest::Approx(1.0 / 3));
    CHECK(w(i, (i + 3) % 6) == 0.0);
  }
  check_doubly_stochastic(w);

  // A star's hub has degree n-1, so every edge weighs 1/n and leaves keep 1 - 1/n.
  Eigen::MatrixXd s = make_weights(star(5), weight_kind::uniform);
  CHECK(s(0, 0) == doctest::Approx(0.2));
  CHECK(s(0, 3) == doctest::Approx(0.2));
  CHECK(s(3, 3) == doctest::Approx(0.8));
  check_doubly_stochastic(s);
}

TEST_CASE("Metropolis-Hastings weights are doubly stochastic on an irregular graph") {
  // Degrees: 0:3, 1:2, 2:3, 3:1, 4:2, 5:1 (a triangle with a tail and a pendant).
  std::vector<edge> edges{{0, 1}, {1, 2}, {0, 2}, {0, 3}, {2, 4}, {4, 5}};
  graph g = edge_list(6, edges);
  Eigen::MatrixXd w = make_weights(g, weight_kind::metropolis_hastings);
  check_doubly_stochastic(w);
  CHECK(w(0, 1) == doctest::Approx(1.0 / 4));  // 1/(1 + max(3, 2))
  CHECK(w(4, 5) == doctest::Approx(1.0 / 3));  // 1/(1 + max(2, 1))
  CHECK(w(5, 5) == doctest::Approx(2.0 / 3));
  CHECK(w(0, 0) == doctest::Approx(1.0 - 3.0 / 4));
  CHECK(w(1, 3) == 0.0);
  CHECK(topology(g, w).problems().empty());

  // The uniform rule on the same graph is valid too, but wastes the low-degree nodes' mixing.
  CHECK(make_weights(g, weight_kind::uniform)(5, 5) == doctest::Approx(3.0 / 4));
}

TEST_CASE("explicit weights are taken as given, after a size check") {
  graph g = ring(3);
  Eigen::MatrixXd given = Eigen::MatrixXd::Constant(3, 3, 1.0 / 3);
  CHECK(make_weights(g, weight_kind::explicit_matrix, given) == given);

  auto wrong = config_error_of([&] { (void)make_weights(g, weight_kind::explicit_matrix, Eigen::MatrixXd::Zero(3, 4)); });
  CHECK(contains(wrong, "explicit weights are 3x4 but the graph has 3 nodes (expected 3x3)"));
  CHECK(contains(config_error_of([&] { (void)make_weights(g, weight_kind::explicit_matrix); }), "are 0x0"));
  CHECK(contains(config_error_of([&] { (void)make_weights(g, weight_kind::uniform, given); }),
                 "a weight matrix is given but weights are 'uniform'"));
}

TEST_CASE("weight kinds round-trip through their config names") {
  CHECK(parse_name<weight_kind>("uniform") == weight_kind::uniform);
  CHECK(parse_name<weight_kind>("metropolis_hastings") == weight_kind::metropolis_hastings);
  CHECK(parse_name<weight_kind>("explicit") == weight_kind::explicit_matrix);
  CHECK_FALSE(parse_name<weight_kind>("explicit_matrix").has_value());
}

}  // namespace
}  // namespace qgossip
