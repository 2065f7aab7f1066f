#pragma once
// ECD-PSGD, Tang et al. Algorithm 2 (extrapolation compression). Node i keeps estimates x~_j for
// j in N(i) and for itself, all starting at x_1:
//   x_{t+1} = W_ii x~_i + sum_j W_ij x~_j - gamma g_t
//   z_t     = (1 - t/2) x_t + (t/2) x_{t+1}      computed as x_t + (t/2)(x_{t+1} - x_t)
//   send C(z_t); for every j in N(i) and i:  x~_j = (1 - 2/t) x~_j + (2/t) C(z_j)
// Since every holder of x~_i applies the same decoded C(z_i) in the same way, node i's own
// estimate equals its neighbours' estimate of i bit for bit (tested end to end).
#include <vector>

#include "algorithms/decentralized.hpp"

namespace qgossip {

class ecd_psgd final : public decentralized_algorithm {
 public:
  ecd_psgd(const mixing_row& row, std::span<const float> x0, bool asynchronous = false,
           const robust_options& robust = {});

  std::string_view name() const override { return "ecd"; }
  bool compresses() const override { return true; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float> decoded, std::uint64_t t) override;
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  std::string_view copies_kind() const override { return "estimate"; }
  std::vector<held_copy> held_copies() const override;
  void remix(const mixing_row& next) override;
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

  // async_mixing: the own estimate moves only with the node's message, so every round sends it
  bool may_skip_message() const override { return false; }
  // rejoinable: neighbours hold an estimate of this node
  std::span<const float> public_state() const override { return own_estimate_; }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;

 private:
  void update_estimate(float_vector& estimate, std::span<const float> decoded, std::uint64_t t) const;

  float_vector next_;
  float_vector z_;
  float_vector own_estimate_;
  std::vector<float_vector> estimates_;  // x~_j by neighbour index
};

}  // namespace qgossip
