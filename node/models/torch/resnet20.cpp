#include "node/models/torch/resnet20.hpp"

#include <cstdint>
#include <string>

#include <torch/nn/init.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "core/errors.hpp"
#include "node/models/torch/module_adapter.hpp"

namespace qgossip {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv3x3(std::int64_t in, std::int64_t out, std::int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

// conv-BN-ReLU-conv-BN, plus the option A shortcut, then ReLU.
struct basic_block_impl : nn::Module {
  basic_block_impl(std::int64_t in, std::int64_t out, std::int64_t stride)
      : conv1(register_module("conv1", conv3x3(in, out, stride))),
        bn1(register_module("bn1", nn::BatchNorm2d(out))),
        conv2(register_module("conv2", conv3x3(out, out, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))),
        stride_(stride),
        pad_front_((out - in) / 2),
        pad_back_(out - in - (out - in) / 2) {}

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1->forward(conv1->forward(x)));
    y = bn2->forward(conv2->forward(y));
    return torch::relu(y + shortcut(x));
  }

  // Identity, or subsample by the stride and zero-pad the channels: no parameters.
  torch::Tensor shortcut(const torch::Tensor& x) const {
    if (stride_ == 1 && pad_front_ == 0 && pad_back_ == 0) return x;
    const torch::Tensor sub = x.slice(2, 0, x.size(2), stride_).slice(3, 0, x.size(3), stride_);
    return torch::constant_pad_nd(sub, {0, 0, 0, 0, pad_front_, pad_back_});
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  std::int64_t stride_, pad_front_, pad_back_;
};
TORCH_MODULE_IMPL(basic_block, basic_block_impl);

nn::Sequential stage(std::int64_t in, std::int64_t out, std::int64_t stride) {
  nn::Sequential s;
  s->push_back(basic_block(in, out, stride));
  s->push_back(basic_block(out, out, 1));
  s->push_back(basic_block(out, out, 1));
  return s;
}

struct resnet20_module : nn::Module {
  resnet20_module(std::int64_t channels, std::int64_t classes)
      : conv1(register_module("conv1", conv3x3(channels, 16, 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(16))),
        layer1(register_module("layer1", stage(16, 16, 1))),
        layer2(register_module("layer2", stage(16, 32, 2))),
        layer3(register_module("layer3", stage(32, 64, 2))),
        linear(register_module("linear", nn::Linear(64, classes))) {
    for (const auto& m : modules(/*include_self=*/false)) {
      if (auto* c = m->as<nn::Conv2d>()) nn::init::kaiming_normal_(c->weight);
      if (auto* l = m->as<nn::Linear>()) nn::init::kaiming_normal_(l->weight);
    }
  }

  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1->forward(conv1->forward(x)));
    y = layer3->forward(layer2->forward(layer1->forward(y)));
    return linear->forward(y.mean({2, 3}));
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Sequential layer1, layer2, layer3;
  nn::Linear linear;
};

}  // namespace

std::unique_ptr<torch_model> make_resnet20(const image_shape& shape, std::size_t classes,
                                           const torch_options& options) {
  if (!shape.is_image()) {
    throw config_error(
        "model resnet20 needs image data (channels x height x width), and this data set has no image shape");
  }
  return std::make_unique<torch_model>(
      "resnet20", "resnet20",
      torch_backend::seeded_builder<resnet20_module>(static_cast<std::int64_t>(shape.channels),
                                                     static_cast<std::int64_t>(classes)),
      shape.size(), classes, shape, options);
}

}  // namespace qgossip
