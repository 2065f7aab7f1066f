#include "node/models/model_factory.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/models/mlp.hpp"
#include "node/models/softmax_regression.hpp"
#include "node/models/torch/plugin.hpp"

namespace qgossip {
namespace {

// The plugin's entry points, loaded once per process; null where this build has no plugin.
struct torch_plugin {
  torch_make_fn make = nullptr;
  torch_cuda_fn cuda_available = nullptr;
  std::string error;  // why it could not be loaded
};

// Where the plugin may be: beside the running executable (build/), then where this build put it.
std::vector<std::filesystem::path> plugin_candidates() {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(exe.parent_path() / kTorchPluginFile);
#ifdef QGOSSIP_TORCH_PLUGIN
  out.emplace_back(QGOSSIP_TORCH_PLUGIN);
#endif
  return out;
}

const torch_plugin& load_plugin() {
  static const torch_plugin plugin = [] {
    torch_plugin p;
#ifndef QGOSSIP_TORCH_PLUGIN
    p.error = "install libtorch-dev (scripts/setup.sh does) and rebuild";
    return p;
#endif
    for (const auto& file : plugin_candidates()) {
      if (!std::filesystem::exists(file)) continue;
      void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        p.error = "cannot load " + file.string() + ": " + dlerror();
        return p;
      }
      p.make = reinterpret_cast<torch_make_fn>(dlsym(handle, kTorchMakeSymbol));
      p.cuda_available = reinterpret_cast<torch_cuda_fn>(dlsym(handle, kTorchCudaSymbol));
      if (!p.make || !p.cuda_available) p.error = file.string() + " lacks the qgossip_torch_* entry points";
      return p;
    }
    p.error = std::string("the libtorch plugin ") + kTorchPluginFile +
              " is not beside the qgossip binary (build it: cmake --build build --target qgossip_torch)";
    return p;
  }();
  return plugin;
}

std::unique_ptr<model> make_torch_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                        const image_shape& shape) {
  const torch_plugin& plugin = load_plugin();
  if (!plugin.make)
    throw config_error("model kind " + std::string(name_of(spec.kind)) + " needs the libtorch backend: " + plugin.error);
  model* out = nullptr;
  std::string error;
  const int rc = plugin.make(spec, dim, classes, shape, &out, &error);
  if (rc == kPluginConfigError) throw config_error(error);
  if (rc != kPluginOk) throw std::runtime_error("model " + std::string(name_of(spec.kind)) + ": " + error);
  return std::unique_ptr<model>(out);
}

}  // namespace

bool have_torch() { return load_plugin().make != nullptr; }

device_kind resolve_device(device_kind device, model_kind kind) {
  if (!is_torch(kind) || device == device_kind::cpu) return device_kind::cpu;
  if (device == device_kind::cuda) return device_kind::cuda;
  const torch_plugin& plugin = load_plugin();
  return plugin.cuda_available && plugin.cuda_available() ? device_kind::cuda : device_kind::cpu;
}

std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                  const image_shape& shape) {
  if (spec.kind == model_kind::softmax) {
    if (!spec.hidden.empty()) {
      throw config_error("model: softmax has no hidden layers, got " + std::to_string(spec.hidden.size()) +
                         " (use kind mlp)");
    }
    return std::make_unique<softmax_regression>(dim, classes, spec.init);
  }
  if (spec.kind == model_kind::mlp) return std::make_unique<mlp>(dim, spec.hidden, classes, spec.init);
  if (spec.kind == model_kind::external)
    throw config_error("model: kind external is a model another program trains and attaches (qgossip.Node.attach, "
                       "docs/python.md); qgossip run cannot build it");
  return make_torch_model(spec, dim, classes, shape);
}

}  // namespace qgossip
