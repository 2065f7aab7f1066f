#pragma once
// CHOCO-SGD (Koloskova et al. 2019), which converges with *biased* compressors (top-k, sign) at
// compression where DCD/ECD fail. Node i keeps public copies x^_j for j in N(i) and for itself,
// all starting at x_1, and a consensus step size gamma_c:
//   x_{t+1/2} = x_t - gamma g_t
//   q_t       = C(x_{t+1/2} - x^_i)            sent to every neighbour
//   x^_j     += q_j    for j in N(i) and i     (each holder applies the same decoded q_j)
//   x_{t+1}   = x_{t+1/2} + gamma_c sum_{j in N(i)} W_ij (x^_j - x^_i)
// Invariant (tested): node i's copy x^_j equals node j's own x^_j bit for bit.
// Asynchronous, a round that sent nothing (a busy uplink: may_skip_message; docs/algorithms.md, "A
// busy uplink") leaves x^_i behind x, so its mix takes x itself as the node's term:
//   x_{t+1}   = x_{t+1/2} + gamma_c sum_{fresh j} W_ij (x^_j - x_{t+1/2})
// a convex combination; the stale x^_i would push x by the same difference round after round.
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/receipts.hpp"

namespace qgossip {

class choco_sgd final : public algorithm {
 public:
  // REQUIRES: 0 < consensus_step <= 1.
  choco_sgd(const mixing_row& row, std::span<const float> x0, double consensus_step, bool asynchronous = false);

  std::string_view name() const override { return "choco"; }
  bool compresses() const override { return true; }
  std::span<const float> model() const override { return x_; }
  std::span<float> adjustable_model() override { return x_; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  bool may_skip_message() const override { return true; }
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  void neighbour_finished(int from) override { received_.mark_final(neighbour_index(row_, from)); }
  std::string_view copies_kind() const override { return "public_copy"; }
  std::vector<held_copy> held_copies() const override;
  void remix(const mixing_row& next) override;
  std::span<const float> public_state() const override { return own_copy_; }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;
  const mixing_row& row() const override { return row_; }
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

 private:
  // finish() of a round that sent nothing (see the top of this file).
  void mix_without_own_copy();

  mixing_row row_;
  float consensus_step_;
  float_vector x_;       // x_{t+1/2} between outgoing() and finish()
  float_vector q_;       // the difference to compress
  float_vector own_copy_;
  bool own_sent_ = true;  // absorb_own came this round (asynchronous: not when the round sent nothing)
  std::vector<float_vector> copies_;  // x^_j by neighbour index
  round_receipts received_;
};

}  // namespace qgossip
