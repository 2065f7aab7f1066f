#pragma once
// The factors of one fully connected layer's mini-batch gradient, for ISGQ (docs/algorithms.md): with the
// layer's batch input X (in × L) and back-propagated Δ (out × L, the loss's derivative with respect
// to the layer's pre-activations, one column per example), the gradient of the mean batch loss is
//   dW = (1/L) Δ Xᵀ   (out × in),   db = (1/L) Δ 1   (out).
// A model fills one fc_factors per layer (node/models/model.hpp loss_and_factors); ISGQ sends X and Δ
// quantized instead of dW and db and the receiver multiplies them back
// (algorithms/compress/isgq.hpp). Plain data: no invariants beyond the sizes below.
#include <cstddef>

#include "core/aligned.hpp"

namespace qgossip {

struct fc_factors {
  std::size_t offset = 0;  // where the layer starts in the flat parameter vector (its W, then its b)
  std::size_t in = 0;      // columns of W (the layer's input width)
  std::size_t out = 0;     // rows of W (the layer's output width)
  std::size_t batch = 0;   // L, examples in the mini-batch
  float_vector x;          // in × L, column-major: example e's input at [e·in, (e+1)·in)
  float_vector delta;      // out × L, column-major: example e's Δ at [e·out, (e+1)·out)
};

}  // namespace qgossip
