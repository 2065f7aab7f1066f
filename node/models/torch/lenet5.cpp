#include "node/models/torch/lenet5.hpp"

#include <cstdint>
#include <string>

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "core/errors.hpp"
#include "node/models/torch/module_adapter.hpp"

namespace qgossip {
namespace {

namespace nn = torch::nn;

// Side of a conv 5x5 (no padding) followed by max pool 2.
std::int64_t conv_pool(std::int64_t side) { return (side - 4) / 2; }

struct lenet5_module : nn::Module {
  lenet5_module(const image_shape& shape, std::int64_t classes) {
    const auto h = static_cast<std::int64_t>(shape.height), w = static_cast<std::int64_t>(shape.width);
    const std::int64_t ph = (32 - h) / 2, pw = (32 - w) / 2;
    const std::int64_t flat = 16 * conv_pool(conv_pool(h + 2 * ph)) * conv_pool(conv_pool(w + 2 * pw));
    conv1 =
        register_module("conv1", nn::Conv2d(nn::Conv2dOptions(static_cast<std::int64_t>(shape.channels), 6, 5)
                                                .padding(std::vector<std::int64_t>{ph, pw})));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(6, 16, 5)));
    fc1 = register_module("fc1", nn::Linear(flat, 120));
    fc2 = register_module("fc2", nn::Linear(120, 84));
    fc3 = register_module("fc3", nn::Linear(84, classes));
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    y = torch::max_pool2d(torch::relu(conv2->forward(y)), 2).flatten(1);
    y = torch::relu(fc1->forward(y));
    y = torch::relu(fc2->forward(y));
    return fc3->forward(y);
  }

  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};

}  // namespace

std::unique_ptr<torch_model> make_lenet5(const image_shape& shape, std::size_t classes,
                                         const torch_options& options) {
  if (!shape.is_image()) {
    throw config_error(
        "model lenet5 needs image data (channels x height x width), and this data set has no image shape");
  }
  if (shape.height > 32 || shape.width > 32) {
    throw config_error("model lenet5 takes images of at most 32x32, got " +
                       torch_backend::shape_string(shape));
  }
  return std::make_unique<torch_model>(
      "lenet5", "lenet5",
      torch_backend::seeded_builder<lenet5_module>(shape, static_cast<std::int64_t>(classes)), shape.size(),
      classes, shape, options);
}

}  // namespace qgossip
