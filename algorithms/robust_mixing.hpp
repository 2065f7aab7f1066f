#pragma once
// Robust mixing: self-centred clipping (docs/security.md, "A hostile key holder"; ClippedGossip: He,
// Karimireddy and Jaggi, 2022; the radius rule: Gaucher, Dieuleveut and Hendrikx, 2025). Where an
// algorithm mixes x_i + Σ_j a_j · z_j, with z_j what it holds of neighbour j less its own term
// (CHOCO-SGD: j's public copy less its own), it mixes x_i + Σ_j a_j · CLIP(z_j, τ_i) instead,
// CLIP(z, τ) = min(1, τ/‖z‖) · z. Whatever bytes a neighbour sends, its term then has norm at most
// a_j · τ_i, and nothing travels on the wire for it.
//
// τ_i is fixed (`clip: τ`) or chosen each round (`clip: auto`) as the (b+1)-th largest of the
// distances ‖z_j‖ of the neighbours in that round's mix, b = `tolerate`: with at most b hostile
// neighbours, τ_i is at most the largest honest distance, so a hostile neighbour pulls no further
// than the farthest honest one could. With fewer than b+1 neighbours in the mix τ_i = 0: none can be
// told from a hostile one, and the node keeps its own model. A distance that is not finite (a copy
// that overflowed) gets scale 0.
//
// The screen (`screen: margin`, node/run/loss_screen.hpp): distances say how far a copy lies, not
// what it does. A copy that is an honest model of a poisoned objective (label flipping) lies as near
// as an honest one. With a screen set, a neighbour's copy whose loss on the node's check examples
// exceeds the node's own term's by more than the margin (nats) counts as one that overflowed: it is
// left out of the round's mix (its weight stays on the node's own term) and takes one of the
// `tolerate` places, so the others are clipped as if it were a hostile neighbour shown.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace qgossip {

struct robust_options {
  bool on = false;            // off: every algorithm mixes as without it, bit for bit
  std::optional<double> tau{};  // a fixed radius; nullopt: auto, the (tolerate+1)-th largest distance
  int tolerate = 1;           // b: hostile neighbours the auto radius tolerates
  std::optional<double> screen{};  // the loss screen's margin (nats); nullopt: no screen
};

// What the last round's clipping did, for the node's CSV.
struct clip_stats {
  double tau = 0;               // the radius used
  double clipped_fraction = 0;  // of the neighbours in the mix, the fraction whose term was shortened
  double largest_distance = 0;  // the largest ‖z_j‖ (finite ones; infinity when one was not)
  double screened_fraction = 0;  // of the neighbours in the mix, the fraction the screen left out
  double loss_gap = 0;           // with a screen: the largest loss(copy) − loss(own term) it saw
};

// The loss screen's check: loss(copy) − loss(own) on the node's check examples.
using loss_gap_fn = std::function<double(std::span<const float> copy, std::span<const float> own)>;

class clip_rule {
 public:
  explicit clip_rule(const robust_options& o);
  // distances[k] = ‖z_k‖ of the k-th neighbour in the mix; writes scale[k] = min(1, τ/‖z_k‖) (1 for
  // z_k = 0, 0 for a distance that is not finite). REQUIRES: the spans have the same size.
  void scales(std::span<const double> distances, std::span<float> scale);
  [[nodiscard]] const clip_stats& last() const { return last_; }
  // Neighbours this node dropped for sending what does not decode (proven hostile) and that are
  // still out: with at most `tolerate` hostile neighbours, at most tolerate − removed remain, so the
  // auto radius tolerates that many (not below 0). A node left with one neighbour after dropping
  // its hostile one keeps mixing with it instead of training alone.
  void set_removed_hostile(int removed) { removed_ = std::max(0, removed); }
  [[nodiscard]] int tolerated() const { return std::max(0, options_.tolerate - removed_); }

  // The loss screen (options' screen set): the node's check, set once the model and data exist.
  void set_screen(loss_gap_fn gap) { gap_ = std::move(gap); }
  // ‖copy − own‖, or infinity when the screen is set and copy's loss gap exceeds the margin (the
  // neighbour is then left out, as a copy that overflowed). The algorithms call it for each
  // neighbour in the mix, then scales() for that round.
  [[nodiscard]] double checked_distance(std::span<const float> copy, std::span<const float> own);

 private:
  robust_options options_;
  int removed_ = 0;
  loss_gap_fn gap_;
  std::vector<char> screened_;      // this round's, so far, in the order of checked_distance's calls
  double largest_gap_ = -INFINITY;  // this round's, so far
  clip_stats last_;
  std::vector<double> sorted_;  // scratch
};

// ‖a − b‖₂, summed in double (a copy's entries may be near FLT_MAX).
[[nodiscard]] double distance(std::span<const float> a, std::span<const float> b);

}  // namespace qgossip
