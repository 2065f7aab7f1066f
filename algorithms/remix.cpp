#include "algorithms/remix.hpp"

#include <cmath>
#include <sstream>

namespace qgossip {

std::string remix_problem(const mixing_row& current, const mixing_row& next) {
  std::ostringstream os;
  os.precision(17);
  if (next.rank != current.rank) {
    os << "the new row is rank " << next.rank << "'s, this node is rank " << current.rank;
    return os.str();
  }
  if (next.weights.size() != next.neighbours.size()) {
    os << "the new row has " << next.weights.size() << " weights for " << next.neighbours.size() << " neighbours";
    return os.str();
  }
  std::size_t at = 0;  // walks current.neighbours alongside next.neighbours
  double sum = next.self_weight;
  for (std::size_t k = 0; k < next.neighbours.size(); ++k) {
    const int j = next.neighbours[k];
    if (k > 0 && j <= next.neighbours[k - 1]) {
      os << "the new row's neighbours are not strictly ascending at rank " << j;
      return os.str();
    }
    while (at < current.neighbours.size() && current.neighbours[at] < j) ++at;
    if (at == current.neighbours.size() || current.neighbours[at] != j) {
      os << "rank " << j << " is not a current neighbour of rank " << current.rank;
      return os.str();
    }
    if (!std::isfinite(next.weights[k]) || next.weights[k] < 0) {
      os << "the weight for rank " << j << " is " << next.weights[k];
      return os.str();
    }
    sum += next.weights[k];
  }
  if (!std::isfinite(next.self_weight) || next.self_weight < 0 || next.self_weight > 1) {
    os << "the self weight is " << next.self_weight << ", outside [0, 1]";
    return os.str();
  }
  if (!(std::fabs(sum - 1.0) <= 1e-9)) {
    os << "the new row sums to " << sum << ", not 1";
    return os.str();
  }
  return {};
}

std::vector<std::size_t> surviving_positions(const mixing_row& current, const mixing_row& next) {
  const std::string problem = remix_problem(current, next);
  QG_ENFORCE(problem.empty(), problem);
  std::vector<std::size_t> keep;
  keep.reserve(next.neighbours.size());
  std::size_t at = 0;
  for (int j : next.neighbours) {
    while (current.neighbours[at] != j) ++at;  // present: remix_problem checked
    keep.push_back(at);
  }
  return keep;
}

}  // namespace qgossip
