#pragma once
// The model of a node whose training loop is another program's (model.kind: external; the Python
// module, docs/python.md): the program owns the architecture, the data, the loss and the optimizer,
// and gives the node only its parameters, as one flat float32 vector, when it attaches its model.
// The node then never takes a gradient or evaluates: it only mixes what the program's steps did.
// So this model knows only its size (the node starts from the program's parameters themselves, x_1,
// the same on every node, and keeps no copy of them here); init, loss_and_grad and evaluate are
// errors (invariant_error), never called by a node driven from outside.
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "node/models/model.hpp"

namespace qgossip {

class external_model final : public model {
 public:
  // params: how many parameters the program attached.
  explicit external_model(std::size_t params);

  [[nodiscard]] std::size_t num_params() const override { return bounds_.back(); }
  [[nodiscard]] const std::vector<std::size_t>& layer_bounds() const override { return bounds_; }
  [[nodiscard]] std::size_t input_dim() const override { return 0; }
  [[nodiscard]] std::size_t classes() const override { return 0; }
  // The program chose the parameters: an error (the node starts from the program's own).
  void init(std::span<float> params, std::uint64_t seed) const override;
  [[nodiscard]] double loss_and_grad(std::span<const float> params, const dataset& d,
                                     std::span<const std::size_t> batch,
                                     std::span<float> grad) const override;
  [[nodiscard]] eval_result evaluate(std::span<const float> params, const dataset& d,
                                     std::size_t max_examples) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::vector<std::size_t> bounds_;  // {0, params}
};

}  // namespace qgossip
