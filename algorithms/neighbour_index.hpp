#pragma once
// Position of a neighbour's rank in a mixing row (neighbours are sorted ascending).
#include <algorithm>
#include <cstddef>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"

namespace qgossip {

inline std::size_t neighbour_index(const mixing_row& row, int rank) {
  auto it = std::lower_bound(row.neighbours.begin(), row.neighbours.end(), rank);
  QG_ENFORCE(it != row.neighbours.end() && *it == rank, "rank " << rank << " is not a neighbour of " << row.rank);
  return static_cast<std::size_t>(it - row.neighbours.begin());
}

}  // namespace qgossip
