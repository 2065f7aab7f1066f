// topology::problems() and validate(), one failure at a time: each matrix below breaks exactly one
// requirement, so the test also shows the checks do not fire on each other's cases.
#include "topology/topology.hpp"

#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "tests/topology/test_util.hpp"

namespace qgossip {
namespace {

using test::config_error_of;
using test::contains;

std::vector<topology_check> failed(const topology& t) {
  std::vector<topology_check> out;
  for (const auto& p : t.problems()) out.push_back(p.check);
  return out;
}

// validate() must throw a config_error containing `expected`, and that must be the only failed check.
void expect_only(const topology& t, topology_check check, const std::string& expected) {
  CHECK(failed(t) == std::vector{check});
  std::string message = config_error_of([&] { t.validate(); });
  CHECK(contains(message, "invalid topology: " + expected));
}

Eigen::MatrixXd uniform(const graph& g) { return make_weights(g, weight_kind::uniform); }

TEST_CASE("a valid topology exposes its graph and weights") {
  topology t = make_topology(ring(5), weight_kind::uniform);
  CHECK(t.n() == 5);
  CHECK(std::vector<int>(t.neighbours(0).begin(), t.neighbours(0).end()) == std::vector{1, 4});
  CHECK(t.weight(0, 4) == doctest::Approx(1.0 / 3));
  CHECK(t.weight(0, 2) == 0.0);
  CHECK(t.self_weight(2) == doctest::Approx(1.0 / 3));
  CHECK(t.problems().empty());
  CHECK_THROWS_AS((void)t.weight(0, 5), invariant_error);
}

TEST_CASE("disconnected graph: names a node unreachable from 0") {
  graph g = edge_list(5, std::vector<edge>{{0, 1}, {1, 2}, {3, 4}});
  expect_only(topology(g, make_weights(g, weight_kind::metropolis_hastings)), topology_check::connected,
              "the graph is disconnected: node 3 is not reachable from node 0");
  CHECK_THROWS_AS(make_topology(g, weight_kind::uniform), config_error);
}

TEST_CASE("asymmetric W: names both entries and their values") {
  // A circulant: rows and columns sum to 1, support is the whole (complete) graph, but W != W^T.
  Eigen::MatrixXd w(3, 3);
  w << 0.5, 0.3, 0.2,  //
      0.2, 0.5, 0.3,   //
      0.3, 0.2, 0.5;
  expect_only(topology(complete(3), w), topology_check::symmetric, "W is not symmetric: W[0][1] = 0.3 but W[1][0] = 0.2");
}

TEST_CASE("negative or non-finite entry") {
  Eigen::MatrixXd w(3, 3);
  w << 1.2, -0.1, -0.1,  //
      -0.1, 0.55, 0.55,  //
      -0.1, 0.55, 0.55;
  expect_only(topology(complete(3), w), topology_check::nonnegative, "W[0][1] = -0.1 is negative");

  Eigen::MatrixXd nan = uniform(ring(4));
  nan(2, 2) = std::numeric_limits<double>::quiet_NaN();
  topology t(ring(4), nan);
  CHECK(contains(config_error_of([&] { t.validate(); }), "W[2][2] = nan is not finite"));
}

TEST_CASE("row or column not summing to 1") {
  Eigen::MatrixXd w = uniform(ring(4));
  w(2, 2) -= 0.1;
  expect_only(topology(ring(4), w), topology_check::doubly_stochastic, "row 2 of W sums to 0.9 (expected 1 within 1e-09)");

  // Just inside the tolerance passes.
  Eigen::MatrixXd close = uniform(ring(4));
  close(1, 1) += 0.5e-9;
  CHECK(topology(ring(4), close).problems().empty());
}

TEST_CASE("column sums are checked too") {
  // A column sum can differ from its row's only when W is asymmetric, so this case fails `symmetric`
  // as well. Rows sum to 1; column 0 sums to 1.2.
  Eigen::MatrixXd w(2, 2);
  w << 0.6, 0.4,  //
      0.6, 0.4;
  topology t(ring(2), w);
  CHECK(failed(t) == std::vector{topology_check::symmetric, topology_check::doubly_stochastic});
  CHECK(contains(config_error_of([&] { t.validate(); }), "column 0 of W sums to 1.2"));
}

TEST_CASE("weight between nodes that are not neighbours") {
  Eigen::MatrixXd w = uniform(ring(4));  // edges 0-1, 1-2, 2-3, 3-0
  w(0, 2) = w(2, 0) = 0.1;
  w(0, 0) -= 0.1;
  w(2, 2) -= 0.1;
  expect_only(topology(ring(4), w), topology_check::weights_on_edges,
              "W[0][2] = 0.1 but nodes 0 and 2 are not neighbours");
}

TEST_CASE("zero weight on an edge is rejected") {
  Eigen::MatrixXd w = uniform(ring(4));
  w(1, 2) = w(2, 1) = 0.0;
  w(1, 1) += 1.0 / 3;
  w(2, 2) += 1.0 / 3;
  expect_only(topology(ring(4), w), topology_check::edges_weighted, "W[1][2] = 0 on edge (1, 2)");
}

TEST_CASE("wrong matrix size skips the entry checks but still checks the graph") {
  expect_only(topology(ring(3), Eigen::MatrixXd::Identity(4, 4)), topology_check::matrix_size,
              "W is 4x4 but the graph has 3 nodes");
  graph split = edge_list(3, std::vector<edge>{{0, 1}});
  topology t(split, Eigen::MatrixXd::Identity(2, 2));
  CHECK(failed(t) == std::vector{topology_check::matrix_size, topology_check::connected});
  std::string message = config_error_of([&] { t.validate(); });
  CHECK(contains(message, "W is 2x2 but the graph has 3 nodes; the graph is disconnected: node 2"));
}

}  // namespace
}  // namespace qgossip
