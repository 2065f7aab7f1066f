#include "node/models/torch/plugin.hpp"

#include <exception>

#include "core/errors.hpp"
#include "node/models/torch/lenet5.hpp"
#include "node/models/torch/resnet20.hpp"
#include "node/models/torch/torchscript.hpp"

namespace {

std::unique_ptr<qgossip::model> make(const qgossip::model_spec& spec, std::size_t dim, std::size_t classes,
                                     const qgossip::image_shape& shape) {
  using namespace qgossip;
  const torch_options options{spec.device, spec.gpu, spec.threads, spec.buffers == buffers_kind::average,
                              spec.dtype};
  if (spec.kind == model_kind::lenet5) return make_lenet5(shape, classes, options);
  if (spec.kind == model_kind::resnet20) return make_resnet20(shape, classes, options);
  if (spec.kind != model_kind::torchscript)
    throw config_error("model: '" + std::string(name_of(spec.kind)) + "' is not a libtorch model kind");
  if (spec.path.empty()) throw config_error("model torchscript needs a path: the file torch.jit.save wrote");
  return load_torchscript(spec.path, dim, classes, shape, options);
}

}  // namespace

extern "C" int qgossip_torch_make(const qgossip::model_spec& spec, std::size_t dim, std::size_t classes,
                                  const qgossip::image_shape& shape, qgossip::model** out, std::string* error) {
  try {
    *out = make(spec, dim, classes, shape).release();
    return qgossip::kPluginOk;
  } catch (const qgossip::config_error& e) {
    *error = e.what();
    return qgossip::kPluginConfigError;
  } catch (const std::exception& e) {
    *error = e.what();
    return qgossip::kPluginFailure;
  }
}

extern "C" bool qgossip_torch_cuda_available() { return qgossip::torch_cuda_available(); }

// The entry points' types must match what the factory casts them to.
static_assert(std::is_same_v<decltype(&qgossip_torch_make), qgossip::torch_make_fn>);
static_assert(std::is_same_v<decltype(&qgossip_torch_cuda_available), qgossip::torch_cuda_fn>);
