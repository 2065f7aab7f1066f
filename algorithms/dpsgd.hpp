#pragma once
// D-PSGD (full precision) and naive compressed D-PSGD (docs/algorithms.md):
//   x_{t+1}^i = W_ii x_t^i + sum_{j in N(i)} W_ij m_t^j - gamma g_t^i
// where the message m^j is x_t^j itself (D-PSGD) or its compression C(x_t^j) (naive). Naive is
// kept as the baseline the paper shows stalling (Fig. 1): the error of C(x) never shrinks.
#include <vector>

#include "algorithms/decentralized.hpp"

namespace qgossip {

class dpsgd final : public decentralized_algorithm {
 public:
  // compressed = false: D-PSGD; true: naive compressed D-PSGD.
  dpsgd(const mixing_row& row, std::span<const float> x0, bool compressed, bool asynchronous = false,
        const robust_options& robust = {});

  std::string_view name() const override { return compressed_ ? "naive" : "dpsgd"; }
  bool compresses() const override { return compressed_; }
  std::span<float> adjustable_model() override { return x_; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float>, std::uint64_t) override {}
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  std::string_view copies_kind() const override { return ""; }
  std::vector<held_copy> held_copies() const override { return {}; }
  void remix(const mixing_row& next) override;
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

  // async_mixing
  bool may_skip_message() const override { return true; }
  // rejoinable: neighbours hold no copy (x goes afresh every round)
  std::span<const float> public_state() const override { return {}; }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;

 private:
  bool compressed_;
  float_vector step_;                // gamma * g_t, kept until finish()
  std::vector<float_vector> inbox_;  // m_t^j by neighbour index
};

}  // namespace qgossip
