// Spectra checked against closed forms derived independently of the code under test.
// Tolerance 1e-9 (1e-12 where the exact value is 0): a symmetric eigensolver is backward stable, so
// for n <= 64 and entries <= 1 its eigenvalue errors are O(n * 1e-16), far below either bound.
#include "topology/report.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include <doctest/doctest.h>

#include "tests/topology/test_util.hpp"

namespace qgossip {
namespace {

using test::contains;

topology_report analyze_uniform(graph g) { return analyze(make_topology(std::move(g), weight_kind::uniform)); }

TEST_CASE("ring with 1/3 weights: rho = 1/3 + 2/3 cos(2 pi / n)") {
  for (int n = 3; n <= 20; ++n) {
    CAPTURE(n);
    topology t = make_topology(ring(n), weight_kind::uniform);
    for (int i = 0; i < n; ++i) {
      CHECK(std::abs(t.self_weight(i) - 1.0 / 3) < 1e-15);
      for (int j : t.neighbours(i)) CHECK(std::abs(t.weight(i, j) - 1.0 / 3) < 1e-15);
    }
    topology_report r = analyze(t);
    double expected = 1.0 / 3 + 2.0 / 3 * std::cos(2 * std::numbers::pi / n);
    CHECK(std::abs(r.rho - expected) < 1e-9);
    CHECK(std::abs(r.spectral_gap - (1 - expected)) < 1e-9);
    CHECK(r.connected);
    CHECK(r.symmetric);
    CHECK(r.doubly_stochastic);
    CHECK(r.problems.empty());
    CHECK(r.edges == n);
    CHECK(r.min_degree == 2);
    CHECK(r.max_degree == 2);
  }
}

TEST_CASE("complete graph with uniform weights: W = J/n and rho = 0") {
  for (int n : {2, 5, 16}) {
    CAPTURE(n);
    topology t = make_topology(complete(n), weight_kind::uniform);
    CHECK((t.matrix().array() - 1.0 / n).abs().maxCoeff() < 1e-15);
    topology_report r = analyze(t);
    CHECK(std::abs(r.rho) < 1e-12);
    CHECK(std::abs(r.mu - 1.0) < 1e-12);  // every lambda_i = 0 for i >= 2
    CHECK(std::abs(r.dcd_alpha2_max - 0.25) < 1e-9);
  }
}

TEST_CASE("4x4 torus with 1/5 weights: rho from the 2-D Fourier modes") {
  const int rows = 4, cols = 4;
  // Eigenvalues of the torus with uniform 1/5 weights: 1/5 + 2/5 cos(2 pi a / r) + 2/5 cos(2 pi b / c).
  double rho = 0, mu = 0;
  for (int a = 0; a < rows; ++a) {
    for (int b = 0; b < cols; ++b) {
      if (a == 0 && b == 0) continue;  // lambda_1 = 1
      double lambda = 0.2 + 0.4 * std::cos(2 * std::numbers::pi * a / rows) + 0.4 * std::cos(2 * std::numbers::pi * b / cols);
      rho = std::max(rho, std::abs(lambda));
      mu = std::max(mu, std::abs(lambda - 1));
    }
  }
  topology_report r = analyze_uniform(torus(rows, cols));
  CHECK(std::abs(r.rho - rho) < 1e-9);
  CHECK(std::abs(r.mu - mu) < 1e-9);
  CHECK(std::abs(r.lambda_n - (0.2 - 0.8)) < 1e-9);  // a = b = 2
  CHECK(r.edges == 32);
}

TEST_CASE("star with uniform weights: W = I - L/n, Laplacian eigenvalues 0, 1 (n-2 times), n") {
  for (int n : {3, 4, 9}) {
    CAPTURE(n);
    topology_report r = analyze_uniform(star(n));
    CHECK(std::abs(r.lambda2 - (1 - 1.0 / n)) < 1e-9);
    CHECK(std::abs(r.lambda_n) < 1e-9);
    CHECK(std::abs(r.rho - (1 - 1.0 / n)) < 1e-9);
    CHECK(std::abs(r.mu - 1.0) < 1e-9);
    CHECK(r.min_degree == 1);
    CHECK(r.max_degree == n - 1);
  }
}

TEST_CASE("hypercube with uniform weights: eigenvalues 1 - 2k/(d+1), k = 0..d") {
  for (int d = 1; d <= 6; ++d) {
    CAPTURE(d);
    topology_report r = analyze_uniform(hypercube(d));
    CHECK(std::abs(r.rho - (d - 1.0) / (d + 1)) < 1e-9);
    CHECK(std::abs(r.mu - 2.0 * d / (d + 1)) < 1e-9);
  }
}

TEST_CASE("DCD bound: (1 - rho)^2 / (4 mu^2), and the strict condition around it") {
  topology_report r = analyze_uniform(ring(8));
  double bound = (1 - r.rho) * (1 - r.rho) / (4 * r.mu * r.mu);
  CHECK(r.dcd_alpha2_max == doctest::Approx(bound).epsilon(1e-12));
  CHECK(dcd_condition_holds(r, 0.0));
  CHECK(dcd_condition_holds(r, 0.99 * bound));
  CHECK_FALSE(dcd_condition_holds(r, 1.01 * bound));
  // Metropolis-Hastings on the same regular graph is the same matrix.
  topology_report mh = analyze(make_topology(ring(8), weight_kind::metropolis_hastings));
  CHECK(std::abs(mh.rho - r.rho) < 1e-12);
}

TEST_CASE("one node: rho = mu = 0, any compressor satisfies the DCD condition") {
  topology_report r = analyze_uniform(complete(1));
  CHECK(r.rho == 0.0);
  CHECK(r.mu == 0.0);
  CHECK(std::isinf(r.dcd_alpha2_max));
  CHECK(dcd_condition_holds(r, 1e6));
  CHECK(contains(format_report(r), "topology: 1 node, 0 edges"));
  CHECK(contains(format_report(r), "compression bound: any alpha^2 (mu = 0)"));
}

TEST_CASE("invalid topologies are reported, not thrown") {
  // Disconnected: lambda_2 = 1, so rho = 1 and no compressor (not even none) satisfies the condition.
  graph split = edge_list(4, std::vector<edge>{{0, 1}, {2, 3}});
  topology_report r = analyze(topology(split, make_weights(split, weight_kind::uniform)));
  CHECK_FALSE(r.connected);
  CHECK(r.symmetric);
  CHECK(std::abs(r.rho - 1) < 1e-12);
  CHECK(r.dcd_alpha2_max == 0.0);
  CHECK_FALSE(dcd_condition_holds(r, 0.0));
  std::string text = format_report(r);
  CHECK(contains(text, "FAILED: the graph is disconnected: node 2"));
  CHECK(contains(text, "compression bound: none satisfies it (rho = 1)"));

  // Asymmetric: no spectrum.
  Eigen::MatrixXd w(2, 2);
  w << 0.6, 0.4,  //
      0.6, 0.4;
  topology_report bad = analyze(topology(ring(2), w));
  CHECK_FALSE(bad.symmetric);
  CHECK_FALSE(bad.doubly_stochastic);
  CHECK(std::isnan(bad.rho));
  CHECK_FALSE(dcd_condition_holds(bad, 0.0));
  CHECK(contains(format_report(bad), "spectrum: not computed"));
}

TEST_CASE("format_report shows the checks, the spectrum and the DCD bound") {
  std::string text = format_report(analyze_uniform(torus(4, 4)));
  CHECK(contains(text, "topology: 16 nodes, 32 edges, degree 4\n"));
  CHECK(contains(text, "doubly stochastic       ok\n"));
  CHECK_FALSE(contains(text, "FAILED"));
  CHECK(contains(text, "rho = max(|lambda_2|, |lambda_n|) = 0.6; spectral gap 1 - rho = 0.4"));
  CHECK(contains(text, "mu = max_{i>=2} |lambda_i - 1| = 1.6"));
  CHECK(contains(text, "alpha^2 < 0.015625"));  // 0.4^2 / (4 * 1.6^2)
  CHECK(contains(format_report(analyze_uniform(star(5))), "degree 1..4"));
}

}  // namespace
}  // namespace qgossip
