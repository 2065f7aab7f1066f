#pragma once
// LeNet-5 (LeCun et al. 1998, with ReLU and max pooling as is usual today) for C x H x W images with
// H, W <= 32, on libtorch:
//   conv 5x5 -> 6 (zero padding (32-H)/2 and (32-W)/2, so 28x28 behaves like 32x32), ReLU, max pool 2,
//   conv 5x5 -> 16, ReLU, max pool 2, flatten (16*5*5 = 400 for 28x28 and 32x32 inputs; computed),
//   fc -> 120, ReLU, fc -> 84, ReLU, fc -> classes.
// Initialization: PyTorch's default (kaiming-uniform weights, uniform biases) under the seed.
// Parameters: 61,706 for 1x28x28 and 10 classes, 62,006 for 3x32x32; 10 tensors (weight, bias of each
// layer). See torch_model.hpp for the layout, the contract and thread-safety.
#include <cstddef>
#include <memory>

#include "node/data/dataset.hpp"
#include "node/models/torch/torch_model.hpp"

namespace qgossip {

// Throws config_error when shape is not an image or is larger than 32x32, and as torch_model does.
[[nodiscard]] std::unique_ptr<torch_model> make_lenet5(const image_shape& shape, std::size_t classes,
                                                       const torch_options& options);

}  // namespace qgossip
