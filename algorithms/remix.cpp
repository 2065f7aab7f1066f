#include "algorithms/remix.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace qgossip {

namespace {

// What is wrong with next on its own: another rank, neighbours not strictly ascending, a weight
// missing, negative or not finite, a self weight outside [0, 1], or a row that does not sum to 1.
std::string row_problem(int rank, const mixing_row& next) {
  std::ostringstream os;
  os.precision(17);
  if (next.rank != rank) {
    os << "the new row is rank " << next.rank << "'s, this node is rank " << rank;
    return os.str();
  }
  if (next.weights.size() != next.neighbours.size()) {
    os << "the new row has " << next.weights.size() << " weights for " << next.neighbours.size() << " neighbours";
    return os.str();
  }
  double sum = next.self_weight;
  for (std::size_t k = 0; k < next.neighbours.size(); ++k) {
    const int j = next.neighbours[k];
    if (k > 0 && j <= next.neighbours[k - 1]) {
      os << "the new row's neighbours are not strictly ascending at rank " << j;
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

}  // namespace

std::string remix_problem(const mixing_row& current, const mixing_row& next) {
  if (std::string problem = row_problem(current.rank, next); !problem.empty()) return problem;
  for (int j : next.neighbours)
    if (!std::binary_search(current.neighbours.begin(), current.neighbours.end(), j))
      return "rank " + std::to_string(j) + " is not a current neighbour of rank " + std::to_string(current.rank);
  return {};
}

std::string admit_problem(const mixing_row& current, const mixing_row& next, int peer) {
  if (std::string problem = row_problem(current.rank, next); !problem.empty()) return problem;
  if (peer == current.rank || std::binary_search(current.neighbours.begin(), current.neighbours.end(), peer))
    return "rank " + std::to_string(peer) + " is already in rank " + std::to_string(current.rank) + "'s row";
  std::vector<int> expected = current.neighbours;
  expected.insert(std::lower_bound(expected.begin(), expected.end(), peer), peer);
  if (next.neighbours != expected)
    return "the new row's neighbours are not the current ones and rank " + std::to_string(peer);
  return {};
}

std::size_t admitted_position(const mixing_row& current, const mixing_row& next, int peer) {
  const std::string problem = admit_problem(current, next, peer);
  QG_ENFORCE(problem.empty(), problem);
  return static_cast<std::size_t>(std::lower_bound(current.neighbours.begin(), current.neighbours.end(), peer) -
                                  current.neighbours.begin());
}

mixing_row restricted_row(const mixing_row& full, std::span<const int> keep) {
  mixing_row out = alone(full.rank);
  for (int j : keep) {
    const auto it = std::lower_bound(full.neighbours.begin(), full.neighbours.end(), j);
    QG_ENFORCE(it != full.neighbours.end() && *it == j, "rank " << j << " is not in rank " << full.rank << "'s row");
    out.neighbours.push_back(j);
    out.weights.push_back(full.weights[static_cast<std::size_t>(it - full.neighbours.begin())]);
    out.self_weight -= out.weights.back();
  }
  return out;
}

mixing_row alone(int rank) { return mixing_row{.rank = rank, .self_weight = 1.0, .neighbours = {}, .weights = {}}; }

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
