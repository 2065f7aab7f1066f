#pragma once
// The one implementation of algorithm::remix's bookkeeping (algorithm.hpp): checking a new row
// against the current one, and keeping, in every per-neighbour vector an algorithm holds (copies,
// inboxes, received flags), the entries of the neighbours that stay, in row order. Used by remix()
// and by load_state() when a checkpoint carries a row with fewer neighbours than the topology's.
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"

namespace qgossip {

// What is wrong with `next` as a remix of `current`, or "" when nothing is: it must have the same
// rank, strictly ascending neighbours that are all current neighbours, one finite non-negative
// weight per neighbour, a self weight in [0, 1], and self_weight + Σ weights within 1e-9 of 1.
std::string remix_problem(const mixing_row& current, const mixing_row& next);

// For each of next's neighbours, its position in current.neighbours (ascending). Throws
// invariant_error with remix_problem's text when next is not a valid remix of current.
std::vector<std::size_t> surviving_positions(const mixing_row& current, const mixing_row& next);

// Keeps v[keep[0]], v[keep[1]], ... in that order and drops the rest. REQUIRES: keep strictly
// ascending, every entry < v.size() (so each move reads an entry not yet overwritten).
template <class Vector>
void keep_entries(Vector& v, std::span<const std::size_t> keep) {
  for (std::size_t i = 0; i < keep.size(); ++i) {
    QG_ENFORCE(keep[i] < v.size() && (i == 0 || keep[i] > keep[i - 1]), "position " << keep[i]);
    if (keep[i] != i) v[i] = std::move(v[keep[i]]);
  }
  v.resize(keep.size());
}

// algorithm::remix: validates next against row, keeps the surviving neighbours' entries of every
// per-neighbour vector (each indexed like row.neighbours), then adopts next. Nothing changes when
// it throws.
template <class... PerNeighbour>
void remix_row(mixing_row& row, const mixing_row& next, PerNeighbour&... per_neighbour) {
  const std::vector<std::size_t> keep = surviving_positions(row, next);
  QG_ENFORCE(((per_neighbour.size() == row.neighbours.size()) && ...),
             "a per-neighbour vector does not match the row's " << row.neighbours.size() << " neighbours");
  (keep_entries(per_neighbour, keep), ...);
  row = next;
}

}  // namespace qgossip
