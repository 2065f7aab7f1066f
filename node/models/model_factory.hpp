#pragma once
// Builds a model from its configuration: the one place that knows every model kind.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "node/data/dataset.hpp"
#include "node/models/model.hpp"

namespace qgossip {

struct model_spec {
  // softmax | mlp (Eigen, always built) | lenet5 | resnet20 | torchscript (libtorch; built when
  // CMake finds Torch, see node/models/torch/)
  std::string kind = "mlp";
  std::vector<std::size_t> hidden{128};  // mlp: hidden widths (>= 1 layer); softmax: none
  std::string path;                      // torchscript: the file torch.jit.save wrote
  // libtorch models: where the model computes, "cpu" or "cuda" (the node resolves the run's
  // `device: auto` before building), and which CUDA device.
  std::string device = "cpu";
  int gpu = 0;
  int threads = 1;                       // libtorch intra-op threads of this node
  // libtorch models with buffers (BatchNorm running statistics): "local" keeps them on each node;
  // "average" makes them part of the flat vector the algorithm mixes (see torch_model.hpp).
  std::string buffers = "local";
  // mlp and softmax: "he" (He-normal hidden layers, Glorot-normal output, zero biases) or "pytorch"
  // (torch.nn.Linear's default: weights and biases uniform on ±1/sqrt(fan_in)). libtorch models
  // always use torch's own initialization.
  std::string init = "pytorch";
};

// Throws config_error naming the problem for an unknown kind, hidden layers given to softmax,
// none to mlp, a zero width, dim == 0, classes outside 2..256, an image model on data without an
// image shape, a libtorch kind in a build without libtorch, or (torchscript) a file that is
// missing, not TorchScript, or whose output size is not `classes`.
[[nodiscard]] std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                                const image_shape& shape = {});

// True iff this build has the libtorch backend.
[[nodiscard]] bool have_torch();

// The device a model of this kind computes on, given the run's `device:` (auto | cpu | cuda):
// Eigen models always "cpu"; libtorch models "cuda" when asked, or with auto when this libtorch
// has CUDA and a GPU is visible; else "cpu".
[[nodiscard]] std::string resolve_device(const std::string& device, const std::string& kind);

}  // namespace qgossip
