#include "topology/weights.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "core/errors.hpp"

namespace qgossip {

namespace {

// Off-diagonal weights from `edge_weight(i, j)`, then each diagonal entry takes what its row lacks.
// Summing the row in neighbour order makes W_ii the same on every node that computes it.
template <typename EdgeWeight>
Eigen::MatrixXd fill(const graph& g, EdgeWeight edge_weight) {
  Eigen::MatrixXd w = Eigen::MatrixXd::Zero(g.n(), g.n());
  for (int i = 0; i < g.n(); ++i) {
    double off = 0.0;
    for (int j : g.neighbours(i)) off += w(i, j) = edge_weight(i, j);
    w(i, i) = 1.0 - off;
  }
  return w;
}

}  // namespace

Eigen::MatrixXd make_weights(const graph& g, weight_kind kind, const Eigen::MatrixXd& explicit_matrix) {
  if (kind != weight_kind::explicit_matrix && explicit_matrix.size() != 0)
    throw config_error("a weight matrix is given but weights are '" + std::string(name_of(kind)) +
                       "' (use 'explicit' to apply it)");
  switch (kind) {
    case weight_kind::uniform: {
      double w = 1.0 / (g.max_degree() + 1);
      return fill(g, [w](int, int) { return w; });
    }
    case weight_kind::metropolis_hastings:
      return fill(g, [&g](int i, int j) { return 1.0 / (1 + std::max(g.degree(i), g.degree(j))); });
    case weight_kind::explicit_matrix:
      if (explicit_matrix.rows() != g.n() || explicit_matrix.cols() != g.n()) {
        std::ostringstream os;
        os << "explicit weights are " << explicit_matrix.rows() << "x" << explicit_matrix.cols()
           << " but the graph has " << g.n() << " nodes (expected " << g.n() << "x" << g.n() << ")";
        throw config_error(os.str());
      }
      return explicit_matrix;
  }
  QG_ENFORCE(false, "weight_kind " << static_cast<int>(kind));
  return {};
}

}  // namespace qgossip
