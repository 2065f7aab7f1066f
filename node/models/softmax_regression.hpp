#pragma once
// Softmax regression (multinomial logistic regression): logits = W·x + b, one layer,
// W classes × dim. See node/models/model.hpp for the parameter layout and the thread-safety contract.
// Also home of the softmax cross-entropy head that the MLP's output layer shares.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "node/models/factored_model.hpp"
#include "node/models/model.hpp"

namespace qgossip {

class softmax_regression final : public model, public factored_model {
 public:
  // REQUIRES (config_error otherwise): dim >= 1, classes in 2..256.
  softmax_regression(std::size_t dim, std::size_t classes, init_kind init = init_kind::he);

  std::size_t num_params() const override { return bounds_.back(); }
  const std::vector<std::size_t>& layer_bounds() const override { return bounds_; }
  std::size_t input_dim() const override { return dim_; }
  std::size_t classes() const override { return classes_; }
  // W ~ Glorot-normal N(0, 2/(dim+classes)), b = 0.
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
  std::size_t dim_;
  std::size_t classes_;
  init_kind init_;
  std::vector<std::size_t> bounds_;
  // Checks the arguments, gathers the batch into inputs_/labels_ and leaves its logits in logits_.
  void forward_batch(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch) const;

  // Scratch, grown on demand and reused (this is why an instance is not thread-safe).
  mutable std::vector<float> inputs_;
  mutable std::vector<std::uint8_t> labels_;
  mutable std::vector<float> logits_;
};

// --- The softmax cross-entropy head (numerically stable log-sum-exp, accumulated in double) ---

// Which derivative softmax_xent_grad leaves in the logits: of the batch's mean loss (what the
// gradient needs), or of each example's own loss (the Δ of a layer's gradient factors).
enum class xent_grad { mean, per_example };

// logits: classes × n, one column per example; labels[j] is column j's label (< classes).
// Returns the mean loss and overwrites logits with d(mean loss)/d(logits) = (softmax − onehot)/n,
// or with per_example column j's d(loss_j)/d(logits_j) = softmax − onehot.
double softmax_xent_grad(Eigen::Ref<Eigen::MatrixXf> logits, std::span<const std::uint8_t> labels,
                         xent_grad kind = xent_grad::mean);

// Adds the summed loss and the number of correct arg-max predictions (ties: lowest class).
void softmax_xent_eval(const Eigen::Ref<const Eigen::MatrixXf>& logits, std::span<const std::uint8_t> labels,
                       double& loss_sum, std::size_t& correct);

// Evaluation works through a data set this many examples at a time (bounds scratch memory).
inline constexpr std::size_t kEvalChunk = 1000;

// Grows a scratch vector to at least n elements; never shrinks, so steady state allocates nothing.
template <typename T>
void grow_scratch(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace qgossip
