#pragma once
// D-PSGD (full precision) and naive compressed D-PSGD (docs/algorithms.md):
//   x_{t+1}^i = W_ii x_t^i + sum_{j in N(i)} W_ij m_t^j - gamma g_t^i
// where the message m^j is x_t^j itself (D-PSGD) or its compression C(x_t^j) (naive). Naive is
// kept as the baseline the paper shows stalling (Fig. 1): the error of C(x) never shrinks.
#include <optional>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "algorithms/clipped_mix.hpp"
#include "algorithms/neighbour_index.hpp"
#include "algorithms/receipts.hpp"

namespace qgossip {

class dpsgd final : public algorithm, public async_mixing, public rejoinable {
 public:
  // compressed = false: D-PSGD; true: naive compressed D-PSGD.
  dpsgd(const mixing_row& row, std::span<const float> x0, bool compressed, bool asynchronous = false,
        const robust_options& robust = {});

  std::string_view name() const override { return compressed_ ? "naive" : "dpsgd"; }
  bool compresses() const override { return compressed_; }
  std::span<const float> model() const override { return x_; }
  std::span<float> adjustable_model() override { return x_; }
  std::span<const float> outgoing(std::span<const float> grad, float lr, std::uint64_t t) override;
  void absorb_own(std::span<const float>, std::uint64_t) override {}
  void absorb(int from, std::span<const float> decoded, std::uint64_t t) override;
  void finish(std::uint64_t t) override;
  std::string_view copies_kind() const override { return ""; }
  std::vector<held_copy> held_copies() const override { return {}; }
  void remix(const mixing_row& next) override;
  const mixing_row& row() const override { return row_; }
  void save_state(state_writer& out) const override;
  void load_state(state_reader& in) override;

  // async_mixing
  void neighbour_finished(int from) override { received_.mark_final(neighbour_index(row_, from)); }
  bool may_skip_message() const override { return true; }
  // rejoinable: neighbours hold no copy (x goes afresh every round)
  std::span<const float> public_state() const override { return {}; }
  void restart(std::span<const float> model) override;
  void admit(const mixing_row& next, int peer, std::span<const float> state) override;

  const clip_stats* clipping() const override { return clip_ ? &clip_->rule.last() : nullptr; }
  clip_rule* clip() override { return clip_ ? &clip_->rule : nullptr; }

 private:
  mixing_row row_;
  bool compressed_;
  float_vector x_;
  float_vector step_;                  // gamma * g_t, kept until finish()
  std::vector<float_vector> inbox_;    // m_t^j by neighbour index
  round_receipts received_;
  std::optional<clipped_mixing> clip_;  // robust mixing (options.robust on)
};

}  // namespace qgossip
