#include "algorithms/ecd_psgd.hpp"

#include <algorithm>

#include "algorithms/algorithm_state.hpp"
#include "algorithms/clipped_mix.hpp"
#include "algorithms/mixing.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/remix.hpp"

namespace qgossip {

ecd_psgd::ecd_psgd(const mixing_row& row, std::span<const float> x0, bool asynchronous,
                   const robust_options& robust)
    : decentralized_algorithm(row, x0, asynchronous, robust),
      next_(x0.size()),
      z_(x0.size()),
      own_estimate_(x0.begin(), x0.end()),
      estimates_(row.neighbours.size(), float_vector(x0.begin(), x0.end())) {}

std::span<const float> ecd_psgd::outgoing(std::span<const float> grad, float lr, std::uint64_t t) {
  QG_ENFORCE(t >= 1, "ECD-PSGD rounds count from 1");
  // Asynchronous: a neighbour that sent nothing since the last mix leaves its weight on the node's own estimate.
  const std::vector<bool> fresh = take_fresh(received_, estimates_.size());
  mix_neighbours(next_, own_estimate_, estimates_, row_, fresh, clipped_mix());
  mixing::axpy(next_, -lr, grad);
  // z = x + (t/2)(x_next - x): the same value as (1 - t/2)x + (t/2)x_next, without the
  // cancellation of two large terms when t is large.
  mixing::sub(z_, next_, x_);
  mixing::scale(z_, 0.5f * static_cast<float>(t), z_);
  mixing::add(z_, x_);
  swap_model(next_);
  received_.begin_round();
  return z_;
}

void ecd_psgd::update_estimate(float_vector& estimate, std::span<const float> decoded, std::uint64_t t) const {
  const float b = 2.0f / static_cast<float>(t);
  mixing::blend(estimate, 1.0f - b, b, decoded);
}

void ecd_psgd::absorb_own(std::span<const float> decoded, std::uint64_t t) { update_estimate(own_estimate_, decoded, t); }

void ecd_psgd::absorb(int from, std::span<const float> decoded, std::uint64_t t) {
  std::size_t k = neighbour_index(row_, from);
  update_estimate(estimates_[k], decoded, t);
  received_.mark(k, from);
}

void ecd_psgd::finish(std::uint64_t t) {
  received_.check_complete(row_, t);
}

std::vector<held_copy> ecd_psgd::held_copies() const {
  std::vector<held_copy> out{{row_.rank, own_estimate_}};
  for (std::size_t k = 0; k < estimates_.size(); ++k) out.push_back({row_.neighbours[k], estimates_[k]});
  return out;
}

void ecd_psgd::restart(std::span<const float> model) {
  restart_from(model, x_, own_estimate_);
  restart_row(row_, estimates_, received_.entries());
}

void ecd_psgd::admit(const mixing_row& next, int peer, std::span<const float> state) {
  admit_with_copy(row_, next, peer, state, x_.size(), estimates_, received_.entries());
}

void ecd_psgd::remix(const mixing_row& next) { remix_row(row_, next, estimates_, received_.entries()); }

void ecd_psgd::save_state(state_writer& out) const {
  save_head(out);
  out.put_floats("own_estimate", own_estimate_);
  algorithm_state::save_copies(out, "estimate", row_, estimates_);
}

void ecd_psgd::load_state(state_reader& in) {
  load_head(in);
  in.get_floats("own_estimate", own_estimate_);
  algorithm_state::load_copies(in, "estimate", row_, estimates_);
}

}  // namespace qgossip
