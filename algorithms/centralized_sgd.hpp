#pragma once
// The centralized data-parallel baselines the papers compare against: every node takes a step with
// the AVERAGE of all n nodes' gradients, so all nodes hold the same model every round.
//
//   allgather (QSGD/NUQSGD Algorithm 1): every node encodes its gradient with the run's codec and
//     sends it to every other node; each decodes all n (its own as the others decode it) and applies
//     x_{t+1} = x_t − (γ/n) Σ_ℓ ĝ_ℓ, summing in rank order so every node computes the same bits.
//   allreduce (C-PSGD, what Horovod/DDP run): the gradients are summed at full precision by a ring
//     all-reduce (gossip/ring_allreduce.hpp), which the node loop runs on outgoing()'s vector and
//     hands back through absorb_own(); x_{t+1} = x_t − (γ/n) Σ_ℓ g_ℓ.
// Neither uses the topology's mixing weights; their mixing_row lists every other rank. Their
// copies_kind() is "same_model": qgossip verify checks that every node's model hash is equal. They
// cannot go on without a node (remix throws): network.on_peer_failure: continue is for gossip. So
// they have none of the capabilities of algorithms/capabilities.hpp (asynchronous gossip, rejoining),
// nor robust mixing's rule (clip_rule_of: nullptr).
#include <vector>

#include "algorithms/algorithm.hpp"

namespace qgossip {

class allgather_sgd final : public algorithm {
 public:
  // REQUIRES: row.neighbours = every rank but row.rank.
  allgather_sgd(const mixing_row& row, std::span<const float> x0);

  std::string_view name() const override { return "allgather"; }
  bool compresses() const override { return true; }
  std::span<const float> model() const override { return x_; }
  std::span<float> adjustable_model() override { return x_; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  // No copies, but every node must hold the same model: qgossip verify compares model hashes.
  std::string_view copies_kind() const override { return "same_model"; }
  std::vector<held_copy> held_copies() const override { return {}; }
  // Throws invariant_error: every node must take part.
  void remix(const mixing_row& next) override;
  const mixing_row& row() const override { return row_; }
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

 private:
  mixing_row row_;
  int rank_;
  float lr_ = 0;
  float_vector x_;
  std::vector<float_vector> gradients_;  // decoded, by rank
  std::vector<bool> received_;
  float_vector sum_;
};

class allreduce_sgd final : public algorithm {
 public:
  allreduce_sgd(const mixing_row& row, std::span<const float> x0);

  std::string_view name() const override { return "allreduce"; }
  bool compresses() const override { return false; }
  std::span<const float> model() const override { return x_; }
  std::span<float> adjustable_model() override { return x_; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  // decoded = the sum of every node's outgoing() vector (the all-reduce's result).
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  // No copies, but every node must hold the same model: qgossip verify compares model hashes.
  std::string_view copies_kind() const override { return "same_model"; }
  std::vector<held_copy> held_copies() const override { return {}; }
  // Throws invariant_error: every node must take part.
  void remix(const mixing_row& next) override;
  const mixing_row& row() const override { return row_; }
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

 private:
  mixing_row row_;
  int n_;
  float lr_ = 0;
  bool summed_ = false;
  float_vector x_;
  float_vector sum_;
};

}  // namespace qgossip
