#include "node/models/model_factory.hpp"

#include <string>

#include "core/errors.hpp"
#include "node/models/mlp.hpp"
#include "node/models/softmax_regression.hpp"
#ifdef QGOSSIP_HAVE_TORCH
#include "node/models/torch/lenet5.hpp"
#include "node/models/torch/resnet20.hpp"
#include "node/models/torch/torchscript.hpp"
#endif

namespace qgossip {
namespace {

bool is_torch_kind(const std::string& kind) {
  return kind == "lenet5" || kind == "resnet20" || kind == "torchscript";
}

std::unique_ptr<model> make_torch_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                        const image_shape& shape) {
#ifdef QGOSSIP_HAVE_TORCH
  if (spec.buffers != "local" && spec.buffers != "average") {
    throw config_error("model: buffers must be local or average, got '" + spec.buffers + "'");
  }
  const torch_options options{spec.device, spec.gpu, spec.threads, spec.buffers == "average"};
  if (spec.kind == "lenet5") return make_lenet5(shape, classes, options);
  if (spec.kind == "resnet20") return make_resnet20(shape, classes, options);
  if (spec.path.empty()) throw config_error("model torchscript needs a path: the file torch.jit.save wrote");
  return load_torchscript(spec.path, dim, classes, shape, options);
#else
  throw config_error("model kind " + spec.kind +
                     " needs the libtorch backend: install libtorch-dev (scripts/setup.sh does) and rebuild");
#endif
}

}  // namespace

bool have_torch() {
#ifdef QGOSSIP_HAVE_TORCH
  return true;
#else
  return false;
#endif
}

std::string resolve_device(const std::string& device, const std::string& kind) {
  if (!is_torch_kind(kind) || device == "cpu") return "cpu";
  if (device == "cuda") return "cuda";
#ifdef QGOSSIP_HAVE_TORCH
  return torch_cuda_available() ? "cuda" : "cpu";
#else
  return "cpu";
#endif
}

std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                  const image_shape& shape) {
  if (spec.kind == "softmax") {
    if (!spec.hidden.empty()) {
      throw config_error("model: softmax has no hidden layers, got " + std::to_string(spec.hidden.size()) +
                         " (use kind mlp)");
    }
    return std::make_unique<softmax_regression>(dim, classes);
  }
  if (spec.kind == "mlp") return std::make_unique<mlp>(dim, spec.hidden, classes);
  if (is_torch_kind(spec.kind)) return make_torch_model(spec, dim, classes, shape);
  throw config_error("model: unknown kind '" + spec.kind +
                     "' (expected softmax, mlp, lenet5, resnet20 or torchscript)");
}

}  // namespace qgossip
