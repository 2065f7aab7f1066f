#include "algorithms/dcd_psgd.hpp"

#include <algorithm>

#include "algorithms/algorithm_state.hpp"
#include "algorithms/clipped_mix.hpp"
#include "algorithms/mixing.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/remix.hpp"

namespace qgossip {

dcd_psgd::dcd_psgd(const mixing_row& row, std::span<const float> x0, bool asynchronous,
                   const robust_options& robust)
    : decentralized_algorithm(row, x0, asynchronous, robust), z_(x0.size()),
      replicas_(row.neighbours.size(), float_vector(x0.begin(), x0.end())) {}

std::span<const float> dcd_psgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  // z = (W_ii x + sum_j W_ij x^_j - gamma g) - x, built in z_ (asynchronous: a neighbour that sent
  // nothing since the last mix leaves its weight W_ij on x).
  const std::vector<bool> fresh = take_fresh(received_, replicas_.size());
  mix_neighbours(z_, x_, replicas_, row_, fresh, clipped_mix());
  mixing::axpy(z_, -lr, grad);
  mixing::axpy(z_, -1.0f, x_);
  received_.begin_round();
  return z_;
}

void dcd_psgd::absorb_own(std::span<const float> decoded, std::uint64_t) { mixing::add(x_, decoded); }

void dcd_psgd::absorb(int from, std::span<const float> decoded, std::uint64_t t) {
  mixing::add(sum_of(from), decoded);
  absorbed(from, t);
}

std::span<float> dcd_psgd::sum_of(int from) { return replicas_[neighbour_index(row_, from)]; }

void dcd_psgd::absorbed(int from, std::uint64_t) { received_.mark(neighbour_index(row_, from), from); }

void dcd_psgd::finish(std::uint64_t t) {
  received_.check_complete(row_, t);
}

std::vector<held_copy> dcd_psgd::held_copies() const {
  std::vector<held_copy> out;
  for (std::size_t k = 0; k < replicas_.size(); ++k) out.push_back({row_.neighbours[k], replicas_[k]});
  return out;
}

void dcd_psgd::restart(std::span<const float> model) {
  restart_from(model, x_);
  restart_row(row_, replicas_, received_.entries());
}

void dcd_psgd::admit(const mixing_row& next, int peer, std::span<const float> state) {
  admit_with_copy(row_, next, peer, state, x_.size(), replicas_, received_.entries());
}

void dcd_psgd::remix(const mixing_row& next) { remix_row(row_, next, replicas_, received_.entries()); }

void dcd_psgd::save_state(state_writer& out) const {
  save_head(out);
  algorithm_state::save_copies(out, "replica", row_, replicas_);
}

void dcd_psgd::load_state(state_reader& in) {
  load_head(in);
  algorithm_state::load_copies(in, "replica", row_, replicas_);
}

}  // namespace qgossip
