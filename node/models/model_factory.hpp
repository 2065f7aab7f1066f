#pragma once
// Builds a model from its configuration: the one place that knows every model kind.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "node/data/dataset.hpp"
#include "node/models/model.hpp"

namespace qgossip {

// The model kinds: mlp and softmax (Eigen, always built); lenet5, resnet20 and torchscript
// (libtorch; built when CMake finds Torch, see node/models/torch/); external, a model another
// program trains and attaches (node/models/external_model.hpp; the Python module, docs/python.md).
enum class model_kind { mlp, softmax, lenet5, resnet20, torchscript, external };
inline constexpr named<model_kind> kModelNames[] = {
    {model_kind::mlp, "mlp"},           {model_kind::softmax, "softmax"},
    {model_kind::lenet5, "lenet5"},     {model_kind::resnet20, "resnet20"},
    {model_kind::torchscript, "torchscript"}, {model_kind::external, "external"},
};
constexpr std::span<const named<model_kind>> names_of(model_kind) { return kModelNames; }
// True for the kinds the libtorch backend builds.
[[nodiscard]] constexpr bool is_torch(model_kind k) {
  return k != model_kind::mlp && k != model_kind::softmax && k != model_kind::external;
}

// Where a libtorch model computes (the run YAML's `device:`): automatic = a GPU when this libtorch
// has CUDA and one is visible, else the CPU.
enum class device_kind { automatic, cpu, cuda };
inline constexpr named<device_kind> kDeviceNames[] = {
    {device_kind::automatic, "auto"}, {device_kind::cpu, "cpu"}, {device_kind::cuda, "cuda"}};
constexpr std::span<const named<device_kind>> names_of(device_kind) { return kDeviceNames; }

// What a libtorch model does with its buffers (BatchNorm running statistics): local keeps them on
// each node; average makes them part of the flat vector the algorithm mixes (see torch_model.hpp).
enum class buffers_kind { local, average };
inline constexpr named<buffers_kind> kBuffersNames[] = {{buffers_kind::local, "local"}, {buffers_kind::average, "average"}};
constexpr std::span<const named<buffers_kind>> names_of(buffers_kind) { return kBuffersNames; }

// The dtype a libtorch model computes in (model.dtype): its parameters, gradients and activations.
// The node's own vectors stay float32; each step copies the node's parameters into the module
// (rounded to the nearest, ties to even) and its gradient back (exactly). Eigen models: fp32 only.
enum class model_dtype { fp32, bf16, fp16 };
inline constexpr named<model_dtype> kModelDtypeNames[] = {
    {model_dtype::fp32, "fp32"}, {model_dtype::bf16, "bf16"}, {model_dtype::fp16, "fp16"}};
constexpr std::span<const named<model_dtype>> names_of(model_dtype) { return kModelDtypeNames; }

struct model_spec {
  model_kind kind = model_kind::mlp;
  std::vector<std::size_t> hidden{128};  // mlp: hidden widths (>= 1 layer); softmax: none
  std::string path;                      // torchscript: the file torch.jit.save wrote
  // libtorch models: where the model computes, cpu or cuda (the node resolves the run's
  // `device: auto` before building), and which CUDA device.
  device_kind device = device_kind::cpu;
  int gpu = 0;
  int threads = 1;                       // libtorch intra-op threads of this node
  buffers_kind buffers = buffers_kind::local;
  model_dtype dtype = model_dtype::fp32;  // libtorch models (see model_dtype)
  // mlp and softmax: he (He-normal hidden layers, Glorot-normal output, zero biases) or pytorch
  // (torch.nn.Linear's default: weights and biases uniform on ±1/sqrt(fan_in)). libtorch models
  // always use torch's own initialization.
  init_kind init = init_kind::pytorch;
};

// Throws config_error naming the problem for an unknown kind, hidden layers given to softmax,
// none to mlp, a zero width, dim == 0, classes outside 2..256, an image model on data without an
// image shape, a libtorch kind in a build without libtorch, or (torchscript) a file that is
// missing, not TorchScript, or whose output size is not `classes`.
[[nodiscard]] std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                                const image_shape& shape = {});

// True iff this build has the libtorch backend.
[[nodiscard]] bool have_torch();

// The device a model of this kind computes on, given the run's `device:`: Eigen models always cpu;
// libtorch models cuda when asked, or with auto when this libtorch has CUDA and a GPU is visible;
// else cpu.
[[nodiscard]] device_kind resolve_device(device_kind device, model_kind kind);

}  // namespace qgossip
