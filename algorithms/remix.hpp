#pragma once
// The one implementation of the bookkeeping of algorithm::remix (algorithm.hpp) and rejoinable::admit
// (capabilities.hpp): checking a new row against the current one, and keeping, in every
// per-neighbour vector an algorithm holds (copies, inboxes, received flags), the entries of the
// neighbours that stay, in row order, or inserting the admitted neighbour's. Used by remix(),
// admit(), restart(), and by load_state() when a checkpoint carries a row with fewer neighbours
// than the topology's.
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

// What is wrong with `next` as current plus the neighbour `peer` (admit), or "": next must be a
// valid row (as for remix) whose neighbours are current's and peer, which current does not hold.
std::string admit_problem(const mixing_row& current, const mixing_row& next, int peer);
// Where peer's entries go in every per-neighbour vector. Throws invariant_error with
// admit_problem's text when next is not current plus peer.
std::size_t admitted_position(const mixing_row& current, const mixing_row& next, int peer);
// The row of a node with no neighbours yet (a joiner before admit): self weight 1.
mixing_row alone(int rank);
// full's weights for the neighbours in keep (a subset of full's, ascending), the rest of the mass
// on the node itself: the rows a joiner passes through while it admits its neighbours one by one.
mixing_row restricted_row(const mixing_row& full, std::span<const int> keep);

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

// rejoinable::restart: drops every per-neighbour entry; the row becomes the node alone.
template <class... PerNeighbour>
void restart_row(mixing_row& row, PerNeighbour&... per_neighbour) {
  (per_neighbour.clear(), ...);
  row = alone(row.rank);
}

// rejoinable::restart's model: `into` (x, and a public state equal to it) becomes model. Throws
// invariant_error for a model of another size.
template <class... Vectors>
void restart_from(std::span<const float> model, Vectors&... into) {
  QG_ENFORCE(((model.size() == into.size()) && ...), "a model of " << model.size() << " values for one of another size");
  (std::copy(model.begin(), model.end(), into.begin()), ...);
}

// rejoinable::admit of an algorithm that holds a copy of each neighbour (copies, indexed like row):
// peer's copy is its state, its receipt entry new, and each of `more` (entry_for pairs: other
// per-neighbour vectors) gets its given entry. Throws invariant_error for a state whose size is not
// model_size, or a row that is not the current one plus peer.
template <class Copies, class Entries, class... More>
void admit_with_copy(mixing_row& row, const mixing_row& next, int peer, std::span<const float> state,
                     std::size_t model_size, Copies& copies, Entries& entries, More&&... more) {
  QG_ENFORCE(state.size() == model_size,
             "the state of rank " << peer << " has " << state.size() << " values, the model " << model_size);
  admit_row(row, next, peer, entry_for(copies, typename Copies::value_type(state.begin(), state.end())),
            entry_for(entries, {}), std::forward<More>(more)...);
}

// One (per-neighbour vector, the admitted neighbour's entry) pair for admit_row.
template <class Vector>
std::pair<Vector&, typename Vector::value_type> entry_for(Vector& v, typename Vector::value_type value) {
  return {v, std::move(value)};
}

// rejoinable::admit: validates next as row plus peer, inserts `value` at peer's position in each
// (vector, value) pair, then adopts next. Nothing changes when it throws.
template <class... Pairs>
void admit_row(mixing_row& row, const mixing_row& next, int peer, Pairs&&... vector_and_value) {
  const std::size_t k = admitted_position(row, next, peer);
  QG_ENFORCE(((vector_and_value.first.size() == row.neighbours.size()) && ...),
             "a per-neighbour vector does not match the row's " << row.neighbours.size() << " neighbours");
  (vector_and_value.first.insert(vector_and_value.first.begin() + static_cast<std::ptrdiff_t>(k),
                                 std::move(vector_and_value.second)),
   ...);
  row = next;
}

}  // namespace qgossip
