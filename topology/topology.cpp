#include "topology/topology.hpp"

#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "core/errors.hpp"

namespace qgossip {

std::string_view to_string(topology_check check) {
  switch (check) {
    case topology_check::matrix_size: return "matrix size";
    case topology_check::connected: return "connected";
    case topology_check::symmetric: return "symmetric";
    case topology_check::nonnegative: return "nonnegative";
    case topology_check::doubly_stochastic: return "doubly stochastic";
    case topology_check::weights_on_edges: return "weights on edges only";
    case topology_check::edges_weighted: return "every edge weighted";
  }
  QG_ENFORCE(false, "topology_check " << static_cast<int>(check));
  return {};
}

double topology::weight(int i, int j) const {
  QG_ENFORCE(0 <= i && i < w_.rows() && 0 <= j && j < w_.cols(),
             "i=" << i << " j=" << j << " W is " << w_.rows() << "x" << w_.cols());
  return w_(i, j);
}

namespace {

// 12 significant digits: enough to show any difference above kWeightTolerance for entries <= 1.
std::ostringstream entry_stream() {
  std::ostringstream os;
  os.precision(12);
  return os;
}

std::optional<std::string> first_row_or_column_off_one(const Eigen::MatrixXd& w) {
  for (const char* what : {"row", "column"}) {
    bool rows = what[0] == 'r';
    for (Eigen::Index k = 0; k < w.rows(); ++k) {
      double sum = rows ? w.row(k).sum() : w.col(k).sum();
      if (!(std::abs(sum - 1.0) <= kWeightTolerance)) {
        auto os = entry_stream();
        os << what << " " << k << " of W sums to " << sum << " (expected 1 within " << kWeightTolerance << ")";
        return os.str();
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<topology_problem> topology::problems() const {
  std::vector<topology_problem> out;
  auto report = [&out](topology_check check, const std::ostringstream& os) { out.push_back({check, os.str()}); };
  const int n = graph_.n();

  const bool sized = w_.rows() == n && w_.cols() == n;
  if (!sized) {
    std::ostringstream os;
    os << "W is " << w_.rows() << "x" << w_.cols() << " but the graph has " << n << " nodes";
    report(topology_check::matrix_size, os);
  }
  if (auto node = graph_.first_unreachable()) {
    std::ostringstream os;
    os << "the graph is disconnected: node " << *node << " is not reachable from node 0";
    report(topology_check::connected, os);
  }
  if (!sized) return out;  // the checks below index W by node

  // Each check stops at its first offender (row-major order): one named entry is what a user needs.
  auto first = [n](auto is_bad) -> std::optional<std::pair<int, int>> {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (is_bad(i, j)) return std::pair{i, j};
    return std::nullopt;
  };
  // A NaN compares false here: `nonnegative` reports it.
  if (auto e = first([&](int i, int j) { return std::abs(w_(i, j) - w_(j, i)) > kWeightTolerance; })) {
    auto os = entry_stream();
    auto [i, j] = *e;
    os << "W is not symmetric: W[" << i << "][" << j << "] = " << w_(i, j) << " but W[" << j << "][" << i
       << "] = " << w_(j, i);
    report(topology_check::symmetric, os);
  }
  if (auto e = first([&](int i, int j) { return !std::isfinite(w_(i, j)) || w_(i, j) < 0; })) {
    auto os = entry_stream();
    auto [i, j] = *e;
    os << "W[" << i << "][" << j << "] = " << w_(i, j) << (std::isfinite(w_(i, j)) ? " is negative" : " is not finite");
    report(topology_check::nonnegative, os);
  }
  if (auto message = first_row_or_column_off_one(w_)) out.push_back({topology_check::doubly_stochastic, *message});
  if (auto e = first([&](int i, int j) { return i != j && w_(i, j) != 0.0 && !graph_.has_edge(i, j); })) {
    auto os = entry_stream();
    auto [i, j] = *e;
    os << "W[" << i << "][" << j << "] = " << w_(i, j) << " but nodes " << i << " and " << j
       << " are not neighbours";
    report(topology_check::weights_on_edges, os);
  }
  for (auto [i, j] : graph_.edges()) {
    if (w_(i, j) == 0.0 || w_(j, i) == 0.0) {
      if (w_(i, j) != 0.0) std::swap(i, j);
      std::ostringstream os;
      os << "W[" << i << "][" << j << "] = 0 on edge (" << i << ", " << j << "): node " << i
         << " would ignore neighbour " << j << "; remove the edge from the graph instead";
      report(topology_check::edges_weighted, os);
      break;
    }
  }
  return out;
}

void topology::validate() const {
  auto found = problems();
  if (found.empty()) return;
  std::string message = "invalid topology: ";
  for (std::size_t k = 0; k < found.size(); ++k) message += (k ? "; " : "") + found[k].message;
  throw config_error(message);
}

topology make_topology(graph g, weight_kind kind, const Eigen::MatrixXd& explicit_matrix) {
  Eigen::MatrixXd w = make_weights(g, kind, explicit_matrix);
  topology t(std::move(g), std::move(w));
  t.validate();
  return t;
}

}  // namespace qgossip
