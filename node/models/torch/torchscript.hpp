#pragma once
// A TorchScript file (a module saved with torch.jit.save, e.g. torch.jit.script(net).save(path)) as a
// model: torch_model over the loaded torch::jit::Module. Its forward must take one float tensor,
// [n, C, H, W] for image data and [n, dim] otherwise, and return the logits [n, classes]; its
// parameters (and, with buffers averaged, its floating-point buffers) must be float32. init gives
// the values stored in the file whatever the seed. See torch_model.hpp for the layout, buffers,
// contract and thread-safety.
#include <cstddef>
#include <memory>
#include <string>

#include "node/data/dataset.hpp"
#include "node/models/torch/torch_model.hpp"

namespace qgossip {

// Loads and checks the file: it runs the module's forward, in training and in eval mode, on a batch
// of 2 inputs of the data's shape. Throws config_error naming the file when it is missing, is not
// TorchScript, its forward fails on that batch (the message gives the shape tried), or its output
// is not a tensor of shape [2, classes] (the message gives what it was), and as torch_model does.
// Never lets a libtorch exception through.
[[nodiscard]] std::unique_ptr<torch_model> load_torchscript(const std::string& path, std::size_t dim,
                                                            std::size_t classes, const image_shape& shape,
                                                            const torch_options& options);

}  // namespace qgossip
