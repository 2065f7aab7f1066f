#pragma once
// DCD-PSGD, Tang et al. Algorithm 1 (difference compression). Node i keeps a replica x^_j of every
// neighbour j and sends the compressed change of its own model:
//   x_{t+1/2} = W_ii x_t + sum_j W_ij x^_j - gamma g_t
//   z_t       = x_{t+1/2} - x_t
//   x_{t+1}   = x_t + C(z_t)          (the decoded message, exactly as receivers apply it)
//   on receipt from j:  x^_j += C(z_j)
// Invariant (tested end to end): node i's replica of j equals j's own x bit for bit, every round.
#include <vector>

#include "algorithms/decentralized.hpp"

namespace qgossip {

class dcd_psgd final : public decentralized_algorithm, public additive_messages {
 public:
  dcd_psgd(const mixing_row& row, std::span<const float> x0, bool asynchronous = false,
           const robust_options& robust = {});

  std::string_view name() const override { return "dcd"; }
  bool compresses() const override { return true; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  std::string_view copies_kind() const override { return "replica"; }
  std::vector<held_copy> held_copies() const override;
  void remix(const mixing_row& next) override;
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

  // async_mixing: x moves only with the node's message, so every round sends it
  bool may_skip_message() const override { return false; }
  // additive_messages: the own message adds into x, a neighbour's into its replica
  bool own_adds() const override { return true; }
  std::span<float> own_sum() override { return x_; }
  void absorbed_own(std::uint64_t) override {}
  std::span<float> sum_of(int from) override;
  void absorbed(int from, std::uint64_t t) override;
  // rejoinable: neighbours hold a replica of x
  std::span<const float> public_state() const override { return x_; }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;

 private:
  float_vector z_;
  std::vector<float_vector> replicas_;  // x^_j by neighbour index
};

}  // namespace qgossip
