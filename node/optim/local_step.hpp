#pragma once
// What a node does to its stochastic gradient before handing it to the algorithm (the run YAML's
// train.weight_decay and train.momentum), the same for every algorithm:
//   g' = g + λ·x                    weight decay (an L2 penalty λ/2·‖x‖² on the local loss)
//   m_t = β·m_{t−1} + g'            local heavy-ball momentum, m_0 = 0
// and the algorithm steps along m_t (or g' when β = 0). Each node keeps its own m: for the
// all-gather baseline the mean of the nodes' m_t is exactly the momentum of the mean gradient.
// The arithmetic is torch.optim.SGD's (dampening 0, no Nesterov), rounding for rounding: g + λ·x
// and a local step x − η·d each round once (a fused multiply-add, as torch's add(…, alpha=)),
// β·m + g' twice (mul_, then add_); so a Python loop stepping a program's parameters with
// torch.optim.SGD moves them exactly as a node's own local steps do (tests/python/test_cli_parity.py).
// Not thread-safe; one per node.
#include <cstddef>
#include <span>

#include "core/aligned.hpp"
#include "core/state_io.hpp"

namespace qgossip {

class local_step {
 public:
  // REQUIRES: 0 <= momentum < 1, weight_decay >= 0 (the config loader checks the user's values).
  local_step(std::size_t dim, double momentum, double weight_decay);

  // Applies weight decay to grad in place (at the model x), then momentum; returns the direction
  // to step along: grad itself without momentum, else the momentum buffer. Valid until the next call.
  std::span<const float> apply(std::span<float> grad, std::span<const float> x);

  // Checkpoints: the momentum buffer m_t (empty without momentum) and the two coefficients, which
  // load_state checks against this instance's (state_error when they or the size differ).
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);

  // One local step x ← x − η·d, each element rounded once (torch's p.add_(d, alpha=−η)).
  static void descend(std::span<float> x, float lr, std::span<const float> direction);

 private:
  float momentum_, weight_decay_;
  float_vector velocity_;
};

}  // namespace qgossip
