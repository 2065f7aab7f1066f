#include "algorithms/choco_sgd.hpp"

#include <algorithm>

#include "algorithms/algorithm_state.hpp"
#include "algorithms/mixing.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/remix.hpp"
#include "core/errors.hpp"

namespace qgossip {

choco_sgd::choco_sgd(const mixing_row& row, std::span<const float> x0, double consensus_step, bool asynchronous)
    : row_(row), consensus_step_(static_cast<float>(consensus_step)), x_(x0.begin(), x0.end()), q_(x0.size()),
      own_copy_(x0.begin(), x0.end()), copies_(row.neighbours.size(), float_vector(x0.begin(), x0.end())),
      received_(row.neighbours.size(), asynchronous) {
  QG_ENFORCE(consensus_step > 0 && consensus_step <= 1, "consensus_step=" << consensus_step);
}

std::span<const float> choco_sgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  mixing::axpy(x_, -lr, grad);         // x_{t+1/2}
  mixing::sub(q_, x_, own_copy_);      // x_{t+1/2} - x^_i
  received_.begin_round();
  own_sent_ = false;
  return q_;
}

void choco_sgd::absorb_own(std::span<const float> decoded, std::uint64_t) {
  mixing::add(own_copy_, decoded);
  own_sent_ = true;
}

void choco_sgd::absorb(int from, std::span<const float> decoded, std::uint64_t) {
  std::size_t k = neighbour_index(row_, from);
  mixing::add(copies_[k], decoded);
  received_.mark(k, from);
}

void choco_sgd::finish(std::uint64_t t) {
  received_.check_complete(row_, t);
  // x += gamma_c * sum_j W_ij (x^_j - x^_i), neighbours in ascending order (asynchronous: the
  // neighbours that sent something since the last mix).
  if (!own_sent_) return mix_without_own_copy();
  for (std::size_t k = 0; k < copies_.size(); ++k) {
    if (!received_.take_fresh(k)) continue;
    const float a = consensus_step_ * static_cast<float>(row_.weights[k]);
    mixing::axpy(x_, a, copies_[k]);
    mixing::axpy(x_, -a, own_copy_);
  }
}

// x = (1 - sum_j a_j) x + sum_j a_j x^_j, a_j = gamma_c W_ij over the fresh neighbours j, in order.
void choco_sgd::mix_without_own_copy() {
  std::vector<float> a(copies_.size(), 0.0f);
  float kept = 1.0f;
  for (std::size_t k = 0; k < copies_.size(); ++k)
    if (received_.take_fresh(k)) {
      a[k] = consensus_step_ * static_cast<float>(row_.weights[k]);
      kept -= a[k];
    }
  mixing::scale(x_, kept, x_);
  for (std::size_t k = 0; k < copies_.size(); ++k)
    if (a[k] != 0.0f) mixing::axpy(x_, a[k], copies_[k]);
}

std::vector<held_copy> choco_sgd::held_copies() const {
  std::vector<held_copy> out{{row_.rank, own_copy_}};
  for (std::size_t k = 0; k < copies_.size(); ++k) out.push_back({row_.neighbours[k], copies_[k]});
  return out;
}

void choco_sgd::restart(std::span<const float> model) {
  restart_from(model, x_, own_copy_);
  restart_row(row_, copies_, received_.entries());
}

void choco_sgd::admit(const mixing_row& next, int peer, std::span<const float> state) {
  admit_with_copy(row_, next, peer, state, x_.size(), copies_, received_.entries());
}

void choco_sgd::remix(const mixing_row& next) { remix_row(row_, next, copies_, received_.entries()); }

void choco_sgd::save_state(state_writer& out) const {
  algorithm_state::save_identity(out, name(), row_);
  out.put_floats("x", x_);
  out.put_floats("own_copy", own_copy_);
  algorithm_state::save_copies(out, "public_copy", row_, copies_);
}

void choco_sgd::load_state(state_reader& in) {
  remix_row(row_, algorithm_state::load_identity(in, name(), row_), copies_, received_.entries());
  in.get_floats("x", x_);
  in.get_floats("own_copy", own_copy_);
  algorithm_state::load_copies(in, "public_copy", row_, copies_);
}

}  // namespace qgossip
