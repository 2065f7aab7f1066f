#pragma once
// Helpers the algorithms share for save_state / load_state (algorithm.hpp): every gossip algorithm's
// state starts with its name, rank and mixing row, so a checkpoint is never loaded into an algorithm
// of another kind or place in the graph, and a node that dropped a neighbour resumes with the row
// it had.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/remix.hpp"
#include "core/state_io.hpp"

namespace qgossip::algorithm_state {

inline std::vector<std::uint64_t> ranks_of(const mixing_row& row) {
  return std::vector<std::uint64_t>(row.neighbours.begin(), row.neighbours.end());
}

// The algorithm's name, its rank and the row in use (which differs from the topology's after a
// remix): neighbours, their weights and the self weight.
inline void save_identity(state_writer& out, std::string_view name, const mixing_row& row) {
  out.put_string("algorithm", name);
  out.put_u64("rank", static_cast<std::uint64_t>(row.rank));
  out.put_u64s("neighbours", ranks_of(row));
  out.put_doubles("weights", row.weights);
  out.put_f64("self_weight", row.self_weight);
}

// Reads what save_identity wrote and returns the saved row, which the caller adopts with remix_row
// (remix.hpp) before reading its copies. Throws state_error for another algorithm or rank, or a saved
// row that is not a valid remix of `row` (the object's: the topology's in a fresh object): a
// neighbour `row` lacks (another topology), or bad weights. A checkpoint written before rows were
// saved has no "weights" after "neighbours": its list must equal row's, and row is returned as is.
inline mixing_row load_identity(state_reader& in, std::string_view name, const mixing_row& row) {
  in.expect_string("algorithm", name);
  in.expect_u64("rank", static_cast<std::uint64_t>(row.rank));
  const std::vector<std::uint64_t> ranks = in.get_u64s("neighbours");
  state_reader probe = in;  // the reader has no peek: try the newer field on a copy
  std::vector<double> weights;
  try {
    weights = probe.get_doubles("weights");
  } catch (const state_error&) {
    if (ranks != ranks_of(row)) in.fail("the saved neighbour list differs from this node's (another topology)");
    return row;
  }
  in = probe;
  mixing_row saved;
  saved.rank = row.rank;
  saved.weights = std::move(weights);
  saved.self_weight = in.get_f64("self_weight");
  for (std::uint64_t r : ranks) {
    if (r > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) in.fail("saved neighbour " + std::to_string(r));
    saved.neighbours.push_back(static_cast<int>(r));
  }
  if (const std::string problem = remix_problem(row, saved); !problem.empty())
    in.fail("the saved neighbour list differs from this node's by more than dropped neighbours (another topology), or "
            "its weights are bad: " + problem);
  return saved;
}

// Copies, one per neighbour in row order, saved as "<field>[<rank>]".
template <class Vectors>
void save_copies(state_writer& out, std::string_view field, const mixing_row& row, const Vectors& copies) {
  for (std::size_t k = 0; k < copies.size(); ++k)
    out.put_floats(std::string(field) + "[" + std::to_string(row.neighbours[k]) + "]", copies[k]);
}

template <class Vectors>
void load_copies(state_reader& in, std::string_view field, const mixing_row& row, Vectors& copies) {
  for (std::size_t k = 0; k < copies.size(); ++k)
    in.get_floats(std::string(field) + "[" + std::to_string(row.neighbours[k]) + "]", copies[k]);
}

}  // namespace qgossip::algorithm_state
