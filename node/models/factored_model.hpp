#pragma once
// A model whose every layer is fully connected (the Eigen mlp and softmax): a layer's mini-batch
// gradient factors into its inputs X and back-propagated Δ (core/fc_factors.hpp), which ISGQ sends
// quantized instead of the gradient (algorithms/compress/isgq.hpp, node/run/message_codec.hpp).
// Kept apart from `model`, whose other backends (libtorch) have no such factors.
// Thread-safety: as `model` (scratch buffers in the instance).
#include <cstddef>
#include <span>
#include <vector>

#include "core/fc_factors.hpp"
#include "node/data/dataset.hpp"

namespace qgossip {

class factored_model {
 public:
  virtual ~factored_model() = default;
  // The same mean loss as model::loss_and_grad, and the gradient's factors instead of the gradient:
  // `out` is resized to one entry per layer (in parameter order; its vectors' storage is reused)
  // with offset = layer_bounds()[l], in/out the layer's widths, batch = L = batch.size(), x = the
  // layer's inputs (the examples for layer 0, the previous layer's ReLU outputs after that) and
  // delta = the derivative of each example's OWN loss (not the batch mean) w.r.t. the layer's
  // pre-activations. So the gradient loss_and_grad writes is, layer by layer, W-part (1/L) Δ Xᵀ and
  // bias-part (1/L) Δ 1, equal up to float rounding (the products are summed in another order).
  // REQUIRES: as model::loss_and_grad, without grad.
  [[nodiscard]] virtual double loss_and_factors(std::span<const float> params, const dataset& d,
                                                std::span<const std::size_t> batch,
                                                std::vector<fc_factors>& out) const = 0;
  // The layers as loss_and_factors fills them but without data (batch 0, x and delta empty): the
  // shapes ISGQ's decoder needs before any batch has been seen.
  [[nodiscard]] virtual std::vector<fc_factors> fc_shapes() const = 0;
};

}  // namespace qgossip
