#pragma once
// ResNet-20 for CIFAR (He et al. 2016, "Deep Residual Learning for Image Recognition", §4.2), on
// libtorch, for C x H x W images (any size; 32x32 is the paper's):
//   conv 3x3 -> 16, BN, ReLU;
//   three stages of 3 basic blocks (conv 3x3, BN, ReLU, conv 3x3, BN, + shortcut, ReLU) with 16, 32
//   and 64 channels, stride 2 in the first block of stages 2 and 3;
//   option A shortcuts: the identity, or when the shape changes, the input subsampled by 2 (x[:, :,
//   ::2, ::2]) and zero-padded with (out-in)/2 channels on each side: no parameters;
//   global average pooling, fc 64 -> classes.
// Convolutions have no bias. Initialization as the usual reference implementation (Yerlan Idelbayev's
// pytorch_resnet_cifar10): Kaiming-normal (fan_in, gain sqrt 2) for every conv and the fc weight,
// PyTorch's default uniform fc bias, BN weight 1 and bias 0; all under the seed.
// Parameters (10 classes, 3 channels): 269,722 in 59 tensors (19 convs, 19 BN weight+bias pairs, fc
// weight and bias); BN running statistics: 1,376 floats in 38 buffers (+ 19 num_batches_tracked).
// Module names and parameter order follow that reference's state_dict (conv1, bn1, layer1.0.conv1,
// ..., linear). See torch_model.hpp for the layout, buffers, contract and thread-safety.
#include <cstddef>
#include <memory>

#include "node/data/dataset.hpp"
#include "node/models/torch/torch_model.hpp"

namespace qgossip {

// Throws config_error when shape is not an image, and as torch_model does.
[[nodiscard]] std::unique_ptr<torch_model> make_resnet20(const image_shape& shape, std::size_t classes,
                                                         const torch_options& options);

}  // namespace qgossip
