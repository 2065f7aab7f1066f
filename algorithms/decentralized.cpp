#include "algorithms/decentralized.hpp"

#include "algorithms/algorithm_state.hpp"
#include "algorithms/neighbour_index.hpp"

namespace qgossip {

decentralized_algorithm::decentralized_algorithm(const mixing_row& row, std::span<const float> x0,
                                                 bool asynchronous, const robust_options& robust)
    : algorithm(communication::neighbours),
      row_(row),
      x_(x0.begin(), x0.end()),
      received_(row.neighbours.size(), asynchronous) {
  if (robust.on) clip_.emplace(robust);
}

void decentralized_algorithm::neighbour_finished(int from) {
  received_.mark_final(neighbour_index(row_, from));
}

void decentralized_algorithm::save_head(state_writer& out) const {
  algorithm_state::save_identity(out, name(), row_);
  out.put_floats("x", x_);
}

void decentralized_algorithm::load_head(state_reader& in) {
  remix(algorithm_state::load_identity(in, name(), row_));
  in.get_floats("x", x_);
}

clip_rule* clip_rule_of(algorithm& alg) {
  auto* mixer = dynamic_cast<decentralized_algorithm*>(&alg);
  return mixer != nullptr ? mixer->clip() : nullptr;
}

const clip_stats* clip_stats_of(const algorithm& alg) {
  const auto* mixer = dynamic_cast<const decentralized_algorithm*>(&alg);
  return mixer != nullptr ? mixer->clipping() : nullptr;
}

}  // namespace qgossip
