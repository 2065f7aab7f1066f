#include "topology/report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include <Eigen/Eigenvalues>

namespace qgossip {

namespace {

// Above the eigensolver's rounding for n <= kMaxNodes (about n * 1e-16) and far below the true gap
// of any connected graph that size (a 4096-ring with 1/3 weights has 1 - rho ~ 8e-7).
constexpr double kRhoSnap = 1e-12;

bool passed(const std::vector<topology_problem>& problems, topology_check check) {
  return std::none_of(problems.begin(), problems.end(), [check](const auto& p) { return p.check == check; });
}

}  // namespace

topology_report analyze(const topology& t) {
  const graph& g = t.graph();
  topology_report r;
  r.n = g.n();
  r.edges = g.num_edges();
  r.min_degree = g.min_degree();
  r.max_degree = g.max_degree();
  r.problems = t.problems();
  r.connected = passed(r.problems, topology_check::connected);
  bool sized = passed(r.problems, topology_check::matrix_size);
  r.symmetric = sized && passed(r.problems, topology_check::symmetric);
  r.doubly_stochastic = sized && passed(r.problems, topology_check::doubly_stochastic);

  if (!r.symmetric) {  // the self-adjoint solver would read only the lower triangle
    constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
    r.rho = r.lambda2 = r.lambda_n = r.mu = r.spectral_gap = r.dcd_alpha2_max = kNan;
    return r;
  }
  if (r.n >= 2) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(t.matrix(), Eigen::EigenvaluesOnly);
    Eigen::VectorXd ascending = solver.eigenvalues();  // lambda_n first, lambda_1 last
    r.lambda2 = ascending(r.n - 2);
    r.lambda_n = ascending(0);
    r.rho = std::max(std::abs(r.lambda2), std::abs(r.lambda_n));
    // An exact 1 (disconnected, or bipartite with a zero diagonal) comes out as 1 - 1e-16 or so:
    // snap it, so the bound is 0 rather than 1e-32 and the condition fails as it should.
    if (std::abs(r.rho - 1.0) < kRhoSnap) r.rho = 1.0;
    r.mu = (ascending.head(r.n - 1).array() - 1.0).abs().maxCoeff();
  }
  r.spectral_gap = 1.0 - r.rho;
  if (r.rho >= 1.0)
    r.dcd_alpha2_max = 0.0;  // (1 - rho)^2 > 0 fails even without compression
  else if (r.mu == 0.0)
    r.dcd_alpha2_max = std::numeric_limits<double>::infinity();
  else
    r.dcd_alpha2_max = (1.0 - r.rho) * (1.0 - r.rho) / (4.0 * r.mu * r.mu);
  return r;
}

bool dcd_condition_holds(const topology_report& report, double alpha2) {
  double margin = (1.0 - report.rho) * (1.0 - report.rho) - 4.0 * report.mu * report.mu * alpha2;
  return margin > 0.0;  // false for NaN
}

std::string format_report(const topology_report& r) {
  std::ostringstream os;
  os << std::setprecision(6);
  os << "topology: " << r.n << (r.n == 1 ? " node, " : " nodes, ") << r.edges << (r.edges == 1 ? " edge" : " edges")
     << ", degree " << r.min_degree;
  if (r.max_degree != r.min_degree) os << ".." << r.max_degree;
  os << "\nchecks:\n";
  for (topology_check check : kAllTopologyChecks) {
    os << "  " << std::left << std::setw(24) << to_string(check);
    auto it = std::find_if(r.problems.begin(), r.problems.end(), [check](const auto& p) { return p.check == check; });
    os << (it == r.problems.end() ? "ok" : "FAILED: " + it->message) << "\n";
  }
  if (std::isnan(r.rho)) {
    os << "spectrum: not computed (W must be a symmetric n x n matrix)\n";
    return os.str();
  }
  os << "spectrum of W (lambda_1 >= lambda_2 >= ... >= lambda_n; lambda_1 = 1 when W is doubly stochastic):\n"
     << "  lambda_2 = " << r.lambda2 << ", lambda_n = " << r.lambda_n << "\n"
     << "  rho = max(|lambda_2|, |lambda_n|) = " << r.rho << "; spectral gap 1 - rho = " << r.spectral_gap
     << (r.rho < 1.0 ? "\n" : " (nodes never reach consensus)\n")
     << "  mu = max_{i>=2} |lambda_i - 1| = " << r.mu << "\n"
     << "DCD-PSGD compression bound: ";
  if (r.rho >= 1.0)
    os << "none satisfies it (rho = 1)\n";
  else if (std::isinf(r.dcd_alpha2_max))
    os << "any alpha^2 (mu = 0)\n";
  else
    os << "alpha^2 < " << r.dcd_alpha2_max << "\n";
  os << "  DCD-PSGD converges only if (1 - rho)^2 - 4 mu^2 alpha^2 > 0, where alpha^2 is the\n"
     << "  compressor's worst relative error sup ||Z - C(Z)||^2 / ||Z||^2; a compressor with a\n"
     << "  larger alpha^2 can make DCD-PSGD diverge on this topology.\n";
  return os.str();
}

}  // namespace qgossip
