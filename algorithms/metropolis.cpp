#include "algorithms/metropolis.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "core/errors.hpp"

namespace qgossip {

mixing_row metropolis_row(int rank, std::vector<int> neighbours, std::vector<int> degrees) {
  QG_ENFORCE(neighbours.size() == degrees.size(), neighbours.size() << " neighbours, " << degrees.size() << " degrees");
  std::vector<std::size_t> order(neighbours.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return neighbours[a] < neighbours[b]; });
  const int own_degree = static_cast<int>(neighbours.size());
  mixing_row row;
  row.rank = rank;
  double off = 0.0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int j = neighbours[order[k]], d = degrees[order[k]];
    QG_ENFORCE(j >= 0 && j != rank, "rank " << rank << " cannot have neighbour " << j);
    QG_ENFORCE(row.neighbours.empty() || row.neighbours.back() != j, "neighbour " << j << " listed twice");
    QG_ENFORCE(d >= 1, "neighbour " << j << " has degree " << d << ", but it is a neighbour of " << rank);
    row.neighbours.push_back(j);
    off += row.weights.emplace_back(1.0 / (1 + std::max(own_degree, d)));
  }
  row.self_weight = 1.0 - off;
  return row;
}

}  // namespace qgossip
