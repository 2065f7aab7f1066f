#pragma once
// A topology: the communication graph plus the mixing matrix W (dense; n is at most kMaxNodes).
// What the algorithms need (docs/algorithms.md): W symmetric, doubly stochastic, nonnegative, W_ij > 0
// exactly on the graph's edges (plus any diagonal), and the graph connected. validate() checks all
// of it; a topology made by make_topology() has passed it.
// A zero weight on an edge is rejected rather than tolerated: that neighbour would be sent messages
// it never uses, so the edge belongs out of the graph.
// Thread-safety: immutable after construction, so const access from any thread is safe.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Core>

#include "topology/graph.hpp"
#include "topology/weights.hpp"

namespace qgossip {

// Tolerance for symmetry (|W_ij - W_ji|) and for row and column sums (|sum - 1|).
inline constexpr double kWeightTolerance = 1e-9;

// The checks validate() runs, in the order it runs them.
enum class topology_check {
  matrix_size,        // W is n x n (when not, the other checks on W are skipped)
  connected,          // every node is reachable from node 0
  symmetric,          // W_ij == W_ji within kWeightTolerance
  nonnegative,        // every W_ij is finite and >= 0
  doubly_stochastic,  // every row and every column sums to 1 within kWeightTolerance
  weights_on_edges,   // W_ij == 0 for i != j that are not neighbours
  edges_weighted,     // W_ij != 0 on every edge
};
inline constexpr topology_check kAllTopologyChecks[] = {
    topology_check::matrix_size, topology_check::connected,         topology_check::symmetric,
    topology_check::nonnegative, topology_check::doubly_stochastic, topology_check::weights_on_edges,
    topology_check::edges_weighted};
// "matrix size", "connected", ...: a label for reports.
std::string_view to_string(topology_check check);

struct topology_problem {
  topology_check check;
  std::string message;  // names the first offending node or entry, e.g. "W[2][5] = 0.3 but W[5][2] = 0.25"
};

class topology {
 public:
  // Stores both as given; call validate() (or use make_topology) before trusting them.
  topology(qgossip::graph g, Eigen::MatrixXd w) : graph_(std::move(g)), w_(std::move(w)) {}

  int n() const { return graph_.n(); }
  const qgossip::graph& graph() const { return graph_; }
  std::span<const int> neighbours(int i) const { return graph_.neighbours(i); }
  // REQUIRES: 0 <= i, j < n and W is n x n (QG_ENFORCE).
  double weight(int i, int j) const;
  double self_weight(int i) const { return weight(i, i); }
  const Eigen::MatrixXd& matrix() const { return w_; }

  // One entry per failed check, naming its first offender; empty when valid.
  std::vector<topology_problem> problems() const;
  // Throws config_error listing every problem (separated by "; ") when there is any.
  void validate() const;

 private:
  qgossip::graph graph_;
  Eigen::MatrixXd w_;
};

// make_weights() then validate(): throws config_error from either.
topology make_topology(graph g, weight_kind kind, const Eigen::MatrixXd& explicit_matrix = Eigen::MatrixXd());

}  // namespace qgossip
