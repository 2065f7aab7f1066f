#include "algorithms/decentralized.hpp"

#include "algorithms/algorithm_state.hpp"
#include "algorithms/neighbour_index.hpp"
#include "core/errors.hpp"

#include <algorithm>

namespace qgossip {

decentralized_algorithm::decentralized_algorithm(const mixing_row& row, std::span<const float> x0,
                                                 bool asynchronous, const robust_options& robust,
                                                 std::span<float> storage)
    : algorithm(communication::neighbours),
      row_(row),
      own_x_(storage.empty() ? float_vector(x0.begin(), x0.end()) : float_vector()),
      x_(storage.empty() ? std::span<float>(own_x_) : storage),
      received_(row.neighbours.size(), asynchronous) {
  QG_ENFORCE(x_.size() == x0.size(), "model storage of " << x_.size() << " values for a model of " << x0.size());
  if (x_.data() != x0.data()) std::copy(x0.begin(), x0.end(), x_.begin());
  if (robust.on) clip_.emplace(robust);
}

void decentralized_algorithm::swap_model(float_vector& v) {
  QG_ENFORCE(x_.data() == own_x_.data() && v.size() == own_x_.size(), "swap_model: x in borrowed storage");
  own_x_.swap(v);
  x_ = own_x_;
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
