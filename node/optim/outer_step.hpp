#pragma once
// The outer optimizer of local-step training (train.local_steps > 1; docs/algorithms.md, "Local steps
// between gossip rounds"). After H local steps from x_t a node has the change u = x_{t,H} − x_t,
// i.e. the pseudo-gradient Δ = −u. The outer step turns Δ into the step s the algorithm applies
// where its rule has γ·g (it is handed s with γ = 1):
//   m_t = μ·m_{t−1} + Δ,  s = η·(Δ + μ·m_t)  (Nesterov)  or  s = η·m_t  (heavy ball),  m_0 = 0.
// η = 1, μ = 0 gives s = Δ: the plain local-step rule. Each node keeps its own m. Because the
// mixing matrix keeps the node average and m is linear in Δ, the node-average model moves exactly
// as DiLoCo's global model does (its outer Nesterov on the averaged pseudo-gradient), while every
// message stays what the algorithm sends, so DCD replicas and CHOCO copies stay exact.
// Not thread-safe; one per node.
#include <cstddef>
#include <span>

#include "core/aligned.hpp"
#include "core/state_io.hpp"

namespace qgossip {

struct outer_spec {
  double lr = 1.0;        // η, > 0
  double momentum = 0.0;  // μ, in [0, 1)
  bool nesterov = true;   // Nesterov (DiLoCo's choice) or heavy ball; irrelevant when μ = 0
  [[nodiscard]] bool is_identity() const { return lr == 1.0 && momentum == 0.0; }
};

class outer_step {
 public:
  // REQUIRES: spec.lr > 0, 0 <= spec.momentum < 1 (the config loader checks the user's values).
  // in_place: only step_in_place is called, and no vector of s is kept.
  outer_step(std::size_t dim, const outer_spec& spec, bool in_place = false);

  // start = x_t, end = x_{t,H}. Returns s (see above); valid until the next call. REQUIRES: not in_place.
  std::span<const float> apply(std::span<const float> start, std::span<const float> end);
  // x = start − s, with end = x on input (the round's result): the same values as x = start −
  // apply(start, x), element by element, without a vector of s.
  void step_in_place(std::span<const float> start, std::span<float> x);

  // Checkpoints: the momentum buffer m (empty when μ = 0) and η, μ and the Nesterov flag, which
  // load_state checks against this instance's (state_error when they or the size differ).
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);

 private:
  float lr_, momentum_;
  bool nesterov_;
  float_vector step_, velocity_;
};

}  // namespace qgossip
