#pragma once
// What the decentralized algorithms (D-PSGD and naive, DCD-PSGD, ECD-PSGD, CHOCO-SGD) share: each
// mixes its model with its neighbours' messages over one row of W, so each keeps that row, its model
// x, which neighbours' messages it has absorbed (round_receipts) and robust mixing's rule, and each
// gossips asynchronously and rejoins (algorithms/capabilities.hpp). This base holds that state and
// the members that read it the same way in all four; the update rules, and every vector they keep
// per neighbour (inboxes, replicas, estimates, public copies), stay in the algorithms' own files, as
// gloo's Algorithm base holds the context every collective shares. Not thread-safe, as algorithm.
#include <cstddef>
#include <optional>
#include <span>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "algorithms/clipped_mix.hpp"
#include "algorithms/receipts.hpp"
#include "algorithms/robust_mixing.hpp"
#include "core/aligned.hpp"
#include "core/state_io.hpp"

namespace qgossip {

class decentralized_algorithm : public algorithm, public async_mixing, public rejoinable {
 public:
  std::span<const float> model() const final { return x_; }
  const mixing_row& row() const final { return row_; }
  // async_mixing
  void neighbour_finished(int from) final;

  // Robust mixing (options.robust on): the rule the mix clips each neighbour's term with, and its
  // last round; nullptr when off. clip_rule_of and clip_stats_of (algorithm.hpp) return them.
  clip_rule* clip() { return clip_ ? &clip_->rule : nullptr; }
  const clip_stats* clipping() const { return clip_ ? &clip_->rule.last() : nullptr; }

 protected:
  // Node row.rank starting at x0; asynchronous: algorithm_options::asynchronous (round_receipts).
  // storage: where x lives (algorithm_options::model_storage, a program's parameters; x0 is copied
  // into it unless it is x0 itself); empty: in a vector of the algorithm's own.
  decentralized_algorithm(const mixing_row& row, std::span<const float> x0, bool asynchronous,
                          const robust_options& robust, std::span<float> storage = {});

  // ECD-PSGD's next x: takes v's values as x and leaves x's old values in v (a swap of the two
  // vectors). REQUIRES: x in a vector of the algorithm's own (QG_ENFORCE).
  void swap_model(float_vector& v);

  // What mix_neighbours (clipped_mix.hpp) takes: the rule and its scratch, or nullptr when off.
  clipped_mixing* clipped_mix() { return clip_ ? &*clip_ : nullptr; }

  // The head of every decentralized algorithm's saved state (algorithm_state.hpp): its name, rank
  // and the row in use, then x. load_head adopts the saved row through remix(), which drops the
  // copies of neighbours the row no longer lists, and throws state_error as load_identity does.
  void save_head(state_writer& out) const;
  void load_head(state_reader& in);

  // State below is written by the algorithm's own rules (remix_row and admit_row in remix.hpp write
  // row_ and received_.entries() together with the algorithm's per-neighbour vectors).
  mixing_row row_;
  float_vector own_x_;    // x, unless it lives in borrowed storage (then empty)
  std::span<float> x_;    // x: own_x_, or the storage given
  round_receipts received_;
  std::optional<clipped_mixing> clip_;  // robust mixing (options.robust on)
};

}  // namespace qgossip
