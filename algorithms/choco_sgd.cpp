#include "algorithms/choco_sgd.hpp"

#include <algorithm>

#include "algorithms/algorithm_state.hpp"
#include "algorithms/mixing.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/remix.hpp"
#include "core/errors.hpp"

namespace qgossip {

choco_sgd::choco_sgd(const mixing_row& row, std::span<const float> x0, const algorithm_options& options)
    : decentralized_algorithm(row, x0, options.asynchronous, options.robust, options.model_storage),
      consensus_step_(static_cast<float>(options.consensus_step)),
      per_edge_(options.asynchronous && options.per_edge_copies),
      difference_(options.difference_messages && !per_edge_),
      q_(difference_ ? 0 : x0.size()),
      copies_(row.neighbours.size(), float_vector(x0.begin(), x0.end())) {
  QG_ENFORCE(options.consensus_step > 0 && options.consensus_step <= 1,
             "consensus_step=" << options.consensus_step);
  if (per_edge_) {
    edge_copies_ = copies_;
    edge_sent_.assign(row.neighbours.size(), 0);
  } else {
    own_copy_.assign(x0.begin(), x0.end());
  }
}

std::span<const float> choco_sgd::outgoing(std::span<const float> grad, float lr, std::uint64_t) {
  if (!grad.empty() || lr != 0) mixing::axpy(x_, -lr, grad);  // x_{t+1/2} (model_storage: the program's steps)
  received_.begin_round();
  own_sent_ = false;
  std::fill(edge_sent_.begin(), edge_sent_.end(), 0);
  if (per_edge_) return x_;        // the messages: outgoing_to
  if (difference_) return {};       // the round encodes x - own_copy_ (difference_message)
  mixing::sub(q_, x_, own_copy_);  // x_{t+1/2} - x^_i
  return q_;
}

void choco_sgd::absorb_own(std::span<const float> decoded, std::uint64_t t) {
  mixing::add(own_sum(), decoded);
  absorbed_own(t);
}

std::span<float> choco_sgd::own_sum() {
  QG_ENFORCE(!per_edge_, "a copy per edge takes absorb_own_to");
  return own_copy_;
}

std::span<const float> choco_sgd::outgoing_to(int peer) {
  QG_ENFORCE(per_edge_, "one public copy: outgoing() is the message");
  mixing::sub(q_, x_, edge_copies_[neighbour_index(row_, peer)]);  // x_{t+1/2} - x^_{i->j}
  return q_;
}

void choco_sgd::absorb_own_to(int peer, std::span<const float> decoded) {
  QG_ENFORCE(per_edge_, "one public copy takes absorb_own");
  const std::size_t k = neighbour_index(row_, peer);
  mixing::add(edge_copies_[k], decoded);
  edge_sent_[k] = 1;
}

void choco_sgd::absorb(int from, std::span<const float> decoded, std::uint64_t t) {
  mixing::add(sum_of(from), decoded);
  absorbed(from, t);
}

std::span<float> choco_sgd::sum_of(int from) { return copies_[neighbour_index(row_, from)]; }

void choco_sgd::absorbed(int from, std::uint64_t) { received_.mark(neighbour_index(row_, from), from); }

// x = (1 - sum_{unsent j} a_j) x + sum_j a_j x^_j - sum_{sent j} a_j x^_{i->j}, a_j = gamma_c W_ij
// over the fresh neighbours j (synchronous: all), in ascending order: on an edge this round sent
// nothing on, the node's term is x itself (see the top of choco_sgd.hpp).
void choco_sgd::finish(std::uint64_t t) {
  received_.check_complete(row_, t);
  mix_weights_.assign(copies_.size(), 0.0f);
  for (std::size_t k = 0; k < copies_.size(); ++k)
    if (received_.take_fresh(k)) mix_weights_[k] = consensus_step_ * static_cast<float>(row_.weights[k]);
  if (clip_) clip_terms();
  float kept = 1.0f;
  for (std::size_t k = 0; k < copies_.size(); ++k)
    if (mix_weights_[k] != 0.0f && !sent_on(k)) kept -= mix_weights_[k];
  terms_.clear();  // reused: a round allocates nothing
  for (std::size_t k = 0; k < copies_.size(); ++k) {
    const float a = mix_weights_[k];
    if (a == 0.0f) continue;
    terms_.push_back({a, copies_[k]});
    if (sent_on(k)) terms_.push_back({-a, own_copy_for(k)});
  }
  mixing::add_scaled(x_, kept, terms_);
}

// Neighbour k's term is a_k (x^_k - own), own its edge's public copy of this node when this round
// sent on it, else x itself.
void choco_sgd::clip_terms() {
  std::vector<double>& distances = clip_->distances;
  std::vector<float>& scales = clip_->scales;
  distances.clear();
  in_mix_.clear();
  for (std::size_t k = 0; k < copies_.size(); ++k) {
    if (mix_weights_[k] == 0.0f) continue;
    distances.push_back(
        clip_->rule.checked_distance(copies_[k], sent_on(k) ? std::span<const float>(own_copy_for(k)) : x_));
    in_mix_.push_back(k);
  }
  scales.resize(distances.size());
  clip_->rule.scales(distances, scales);
  for (std::size_t i = 0; i < in_mix_.size(); ++i) mix_weights_[in_mix_[i]] *= scales[i];
}

std::vector<held_copy> choco_sgd::held_copies() const {
  std::vector<held_copy> out;
  if (per_edge_)
    for (std::size_t k = 0; k < edge_copies_.size(); ++k)
      out.push_back({row_.rank, edge_copies_[k], row_.neighbours[k]});
  else
    out.push_back({row_.rank, own_copy_});
  for (std::size_t k = 0; k < copies_.size(); ++k) out.push_back({row_.neighbours[k], copies_[k]});
  return out;
}

void choco_sgd::restart(std::span<const float> model) {
  if (per_edge_)
    restart_from(model, x_);
  else
    restart_from(model, x_, own_copy_);
  restart_row(row_, copies_, edge_copies_, edge_sent_, received_.entries());
}

void choco_sgd::admit(const mixing_row& next, int peer, std::span<const float> state) {
  if (!per_edge_) return admit_with_copy(row_, next, peer, state, x_.size(), copies_, received_.entries());
  // This node's copy for the new edge starts at x: what public_state() gave the peer.
  admit_with_copy(row_, next, peer, state, x_.size(), copies_, received_.entries(),
                  entry_for(edge_copies_, float_vector(x_.begin(), x_.end())),
                  entry_for(edge_sent_, char{0}));
}

void choco_sgd::remix(const mixing_row& next) {
  if (per_edge_)
    remix_row(row_, next, copies_, edge_copies_, edge_sent_, received_.entries());
  else
    remix_row(row_, next, copies_, received_.entries());
}

void choco_sgd::save_state(state_writer& out) const {
  save_head(out);
  if (per_edge_)
    algorithm_state::save_copies(out, "own_copy_for", row_, edge_copies_);
  else
    out.put_floats("own_copy", own_copy_);
  algorithm_state::save_copies(out, "public_copy", row_, copies_);
}

void choco_sgd::load_state(state_reader& in) {
  load_head(in);
  if (per_edge_)
    algorithm_state::load_copies(in, "own_copy_for", row_, edge_copies_);
  else
    in.get_floats("own_copy", own_copy_);
  algorithm_state::load_copies(in, "public_copy", row_, copies_);
}

}  // namespace qgossip
