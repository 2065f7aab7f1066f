#pragma once
// CHOCO-SGD (Koloskova et al. 2019), which converges with *biased* compressors (top-k, sign) at
// compression where DCD/ECD fail. Node i keeps public copies x^_j for j in N(i) and for itself,
// all starting at x_1, and a consensus step size gamma_c:
//   x_{t+1/2} = x_t - gamma g_t
//   q_t       = C(x_{t+1/2} - x^_i)            sent to every neighbour
//   x^_j     += q_j    for j in N(i) and i     (each holder applies the same decoded q_j)
//   x_{t+1}   = x_{t+1/2} + gamma_c sum_{j in N(i)} W_ij (x^_j - x^_i)
// Invariant (tested): node i's copy x^_j equals node j's own x^_j bit for bit.
// A public copy per edge (per_edge_copies: asynchronous rounds that skip busy links; docs/
// algorithms.md, "A busy uplink"): node i keeps x^_{i->j}, the copy of itself that neighbour j
// holds, sends j the message q_{i->j} = C(x_{t+1/2} - x^_{i->j}) when the link to j is free, and
// mixes each edge against that edge's copy:
//   x_{t+1}   = x_{t+1/2} + gamma_c sum_{fresh j} W_ij (x^_j - x^_{i->j})
// so a busy link falls behind alone while the others carry every round. Where both ends mix with
// the same copies (every edge sent and received each round, as in synchronous gossip) the edge's
// terms at i and at j are opposite (W is symmetric), so the mean of the models moves only with
// the gradients, as with one public copy; messages in flight break that, as they do with one.
// A round that sent nothing on an edge leaves that edge's copy (or, with one public copy, x^_i)
// behind x, so its mix takes x itself as the node's term on that edge:
//   x_{t+1}   = x_{t+1/2} + gamma_c sum_{fresh j} W_ij (x^_j - x_{t+1/2})
// a convex combination; the stale copy would push x by the same difference round after round.
#include <cstddef>
#include <vector>

#include "algorithms/decentralized.hpp"
#include "algorithms/mixing.hpp"

namespace qgossip {

class choco_sgd final : public decentralized_algorithm,
                        public per_edge_messages,
                        public additive_messages,
                        public difference_message {
 public:
  // REQUIRES: 0 < options.consensus_step <= 1.
  choco_sgd(const mixing_row& row, std::span<const float> x0, const algorithm_options& options);

  std::string_view name() const override { return "choco"; }
  bool compresses() const override { return true; }
  std::span<float> adjustable_model() override { return x_; }
  bool half_step_only() const override { return true; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  std::string_view copies_kind() const override { return "public_copy"; }
  std::vector<held_copy> held_copies() const override;
  void remix(const mixing_row& next) override;
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

  // async_mixing
  bool may_skip_message() const override { return true; }
  // per_edge_messages: built with options.per_edge_copies (and asynchronous)
  bool sends_per_edge() const override { return per_edge_; }
  std::span<const float> outgoing_to(int peer) override;
  void absorb_own_to(int peer, std::span<const float> decoded) override;
  // additive_messages: the public copies; the own one only with one public copy
  bool own_adds() const override { return !per_edge_; }
  std::span<float> own_sum() override;
  void absorbed_own(std::uint64_t) override { own_sent_ = true; }
  std::span<float> sum_of(int from) override;
  void absorbed(int from, std::uint64_t t) override;
  // difference_message: built with options.difference_messages and one public copy
  bool sends_difference() const override { return difference_; }
  std::span<const float> minuend() const override { return x_; }
  std::span<const float> subtrahend() const override { return own_copy_; }
  // rejoinable. With a copy per edge, public_state is the model: a neighbour that (re)joins gets x,
  // and this node's copy for its edge becomes x (admit).
  std::span<const float> public_state() const override { return per_edge_ ? std::span<const float>(x_) : std::span<const float>(own_copy_); }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;

 private:
  // Robust mixing: scales mix_weights_[k] by min(1, τ/‖x^_k − own term‖) (robust_mixing.hpp).
  void clip_terms();

  // Neighbour k's edge: the copy of this node that k holds, and whether this round sent on it.
  const float_vector& own_copy_for(std::size_t k) const { return per_edge_ ? edge_copies_[k] : own_copy_; }
  bool sent_on(std::size_t k) const { return per_edge_ ? edge_sent_[k] != 0 : own_sent_; }

  // x_ (decentralized_algorithm) holds x_{t+1/2} between outgoing() and finish().
  float consensus_step_;
  bool per_edge_;
  std::vector<mixing::scaled> terms_;  // finish's terms, in order (kept between rounds: no allocation)
  const bool difference_;  // the message left to the round as x - own_copy_ (no q_)
  float_vector q_;         // the difference to compress (per edge, or not difference_)
  float_vector own_copy_;  // one public copy (empty with a copy per edge)
  bool own_sent_ = true;   // absorb_own came this round (asynchronous: not when the round sent nothing)
  // A copy per edge, by neighbour index: x^_{i->j}, and whether this round sent on the edge.
  std::vector<float_vector> edge_copies_;
  std::vector<char> edge_sent_;
  std::vector<float_vector> copies_;  // x^_j by neighbour index
  std::vector<float> mix_weights_;    // finish(): scratch, gamma_c W_ij of each fresh neighbour
  std::vector<std::size_t> in_mix_;   // clip_terms(): the neighbour of each term
};

}  // namespace qgossip
