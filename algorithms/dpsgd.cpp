#include "algorithms/dpsgd.hpp"

#include <algorithm>

#include "algorithms/clipped_mix.hpp"
#include "algorithms/mixing.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/remix.hpp"

namespace qgossip {

dpsgd::dpsgd(const mixing_row& row, std::span<const float> x0, bool compressed, bool asynchronous,
             const robust_options& robust)
    : decentralized_algorithm(row, x0, asynchronous, robust), compressed_(compressed), step_(x0.size()),
      // Every node starts at x0: before a neighbour's first message, x0 is its model.
      inbox_(row.neighbours.size(), float_vector(x0.begin(), x0.end())) {}

std::span<const float> dpsgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  mixing::scale(step_, lr, grad);
  received_.begin_round();
  return x_;
}

void dpsgd::absorb(int from, std::span<const float> decoded, std::uint64_t) {
  std::size_t k = neighbour_index(row_, from);
  std::copy(decoded.begin(), decoded.end(), inbox_[k].begin());
  received_.mark(k, from);
}

void dpsgd::finish(std::uint64_t t) {
  received_.check_complete(row_, t);
  // Every input of the sum was fixed before this point, so x_ may be overwritten in place.
  // Asynchronous: a neighbour that sent nothing since the last mix leaves its weight on x.
  const std::vector<bool> fresh = take_fresh(received_, inbox_.size());
  mix_neighbours(x_, x_, inbox_, row_, fresh, clipped_mix());
  mixing::axpy(x_, -1.0f, step_);
}

void dpsgd::restart(std::span<const float> model) {
  restart_from(model, x_);
  restart_row(row_, inbox_, received_.entries());
}

// D-PSGD holds no copy: the new neighbour's inbox starts at this node's x (it is filled by the
// neighbour's next message before it is used).
void dpsgd::admit(const mixing_row& next, int peer, std::span<const float>) {
  admit_row(row_, next, peer, entry_for(inbox_, float_vector(x_.begin(), x_.end())), entry_for(received_.entries(), {}));
}

void dpsgd::remix(const mixing_row& next) { remix_row(row_, next, inbox_, received_.entries()); }

void dpsgd::save_state(state_writer& out) const { save_head(out); }

void dpsgd::load_state(state_reader& in) { load_head(in); }

}  // namespace qgossip
