#pragma once
// Multi-layer perceptron: hidden fully connected layers with ReLU, then a linear output layer
// with the softmax cross-entropy head. widths = {dim, hidden..., classes}; layer l maps
// widths[l] → widths[l+1]. See node/models/model.hpp for the parameter layout and thread-safety.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "node/models/factored_model.hpp"
#include "node/models/model.hpp"

namespace qgossip {

class mlp final : public model, public factored_model {
 public:
  // REQUIRES (config_error otherwise): dim >= 1, at least one hidden layer, every hidden width
  // >= 1, classes in 2..256.
  mlp(std::size_t dim, std::vector<std::size_t> hidden, std::size_t classes, init_kind init = init_kind::he);

  std::size_t num_params() const override { return bounds_.back(); }
  const std::vector<std::size_t>& layer_bounds() const override { return bounds_; }
  std::size_t input_dim() const override { return widths_.front(); }
  std::size_t classes() const override { return widths_.back(); }
  // init_kind::he: hidden layers He-normal N(0, 2/in) (ReLU follows them), the output layer
  // Glorot-normal N(0, 2/(in+out)); biases 0. init_kind::pytorch: weights, then biases, uniform on
  // ±1/sqrt(in). Layer l draws from its own stream derive_seed(seed, l).
  void init(std::span<float> params, std::uint64_t seed) const override;
  double loss_and_grad(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch,
                       std::span<float> grad) const override;
  double loss_and_factors(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch,
                          std::vector<fc_factors>& out) const override;
  std::vector<fc_factors> fc_shapes() const override;
  eval_result evaluate(std::span<const float> params, const dataset& d,
                       std::size_t max_examples = kAllExamples) const override;
  std::string describe() const override;

 private:
  // Runs the layers on the n inputs (columns of `x`, dim × n); leaves every layer's output in
  // acts_ (ReLU applied for hidden layers, logits for the last) and returns the logits' storage.
  float* forward(std::span<const float> params, const float* x, std::size_t n) const;
  // Checks the arguments of loss_and_grad/loss_and_factors, gathers the batch into inputs_/labels_
  // and runs forward on it; returns the logits' storage.
  float* forward_batch(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch) const;
  // One step of back-propagation for the n examples: from d(loss)/d(pre-activation of layer l),
  // held in acts_[l], to that of layer l-1, written over acts_[l-1] (ReLU' read from it first).
  // REQUIRES: 1 <= l < layers.
  void backprop_to_previous(std::span<const float> params, std::size_t l, std::size_t n) const;

  std::vector<std::size_t> widths_;
  std::vector<std::size_t> bounds_;
  init_kind init_;
  // Scratch, grown on demand and reused (this is why an instance is not thread-safe).
  mutable std::vector<float> inputs_;
  mutable std::vector<std::uint8_t> labels_;
  mutable std::vector<std::vector<float>> acts_;  // one per layer: widths[l+1] × n
  mutable std::vector<float> delta_;              // back-propagated gradient of a hidden layer
};

}  // namespace qgossip
