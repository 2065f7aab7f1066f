#pragma once
// What `qgossip topology` prints and what a node logs at start-up: the validation checks and the
// spectrum of W that governs convergence (docs/algorithms.md).
//   eigenvalues of W sorted descending: lambda_1 (= 1 for a valid W) >= lambda_2 >= ... >= lambda_n
//   rho = max(|lambda_2|, |lambda_n|), spectral gap 1 - rho: consensus shrinks like rho^t
//   mu  = max_{i>=2} |lambda_i - 1|
//   DCD-PSGD converges only if (1 - rho)^2 - 4 mu^2 alpha^2 > 0, where
//   alpha^2 = sup ||Z - C(Z)||^2 / ||Z||^2 is the compressor's relative error; dcd_alpha2_max is the
//   supremum of the alpha^2 that satisfy it (the condition is strict: alpha^2 must stay below it).
// rho within 1e-12 of 1 is reported as exactly 1 (the eigensolver's rounding, not a real gap).
// When n == 1 there is no lambda_2: lambda2 = lambda_n = 0 is reported, so rho = 0 and mu = 0.
// The spectrum needs a symmetric n x n W; otherwise rho, lambda2, lambda_n, mu, spectral_gap and
// dcd_alpha2_max are NaN. Costs O(n^3): 0.25 s at n = 1024, 25 s at n = kMaxNodes.
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace qgossip {

struct topology_report {
  int n = 0;
  int edges = 0;
  int min_degree = 0, max_degree = 0;
  bool connected = false, symmetric = false, doubly_stochastic = false;
  double rho = 0;
  double lambda2 = 0, lambda_n = 0;
  double mu = 0;
  double spectral_gap = 0;    // 1 - rho
  double dcd_alpha2_max = 0;  // (1 - rho)^2 / (4 mu^2); +inf when mu == 0 and rho < 1; 0 when rho >= 1
  std::vector<topology_problem> problems;  // topology::problems(): empty iff the topology is valid
};

// Works on invalid topologies too (that is what the report is for).
topology_report analyze(const topology& t);

// (1 - rho)^2 - 4 mu^2 alpha2 > 0. False when the spectrum is NaN.
bool dcd_condition_holds(const topology_report& report, double alpha2);

// Multi-line, human-readable; ends with a newline.
std::string format_report(const topology_report& report);

}  // namespace qgossip
