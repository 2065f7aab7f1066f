#pragma once
// Helpers the algorithms share for save_state / load_state (algorithm.hpp): every algorithm's state
// starts with its name, rank and neighbour list, so a checkpoint is never loaded into an algorithm
// of another kind or place in the graph.
#include <cstdint>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/state_io.hpp"

namespace qgossip::algorithm_state {

inline std::vector<std::uint64_t> ranks_of(const mixing_row& row) {
  return std::vector<std::uint64_t>(row.neighbours.begin(), row.neighbours.end());
}

inline void save_identity(state_writer& out, std::string_view name, const mixing_row& row) {
  out.put_string("algorithm", name);
  out.put_u64("rank", static_cast<std::uint64_t>(row.rank));
  out.put_u64s("neighbours", ranks_of(row));
}

inline void load_identity(state_reader& in, std::string_view name, const mixing_row& row) {
  in.expect_string("algorithm", name);
  in.expect_u64("rank", static_cast<std::uint64_t>(row.rank));
  if (in.get_u64s("neighbours") != ranks_of(row))
    in.fail("the saved neighbour list differs from this node's (another topology)");
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
