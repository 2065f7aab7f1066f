#pragma once
// The loss screen of robust mixing (`algorithm.robust.screen: margin`; algorithms/robust_mixing.hpp,
// docs/security.md): a check of what a neighbour's copy does, where clipping only sees how far it
// lies. Each round, for each neighbour in the mix, the node evaluates the copy's mean cross-entropy
// on its check examples (kExamples of its own shard, spread evenly over it) and its own term's; a
// copy whose loss exceeds its own by more than the margin is left out of that round's mix.
// Cost: one evaluation of kExamples per neighbour per round, and one of the node's own term.
// Not thread-safe (the model's scratch; the node loop's thread).
#include <cstddef>
#include <span>
#include <vector>

#include "node/data/dataset.hpp"
#include "node/models/model.hpp"

namespace qgossip {

class loss_screen {
 public:
  static constexpr std::size_t kExamples = 128;

  // m must outlive the screen. REQUIRES: shard non-empty, of m's input and classes.
  loss_screen(const model& m, const dataset& shard);

  // loss(copy) − loss(own) on the check examples (NaN when copy's loss is not finite).
  [[nodiscard]] double gap(std::span<const float> copy, std::span<const float> own);

  [[nodiscard]] const dataset& check() const { return check_; }

 private:
  const model& model_;
  dataset check_;
  std::vector<float> own_;  // the last own term evaluated, and its loss: a round checks each
  double own_loss_ = 0;     // neighbour against the same own term
};

}  // namespace qgossip
