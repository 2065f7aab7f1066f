#pragma once
// The libtorch models as a plugin: libqgossip_torch.so, which the model factory (model_factory.cpp)
// loads with dlopen the first time a run asks for a libtorch model. So `qgossip` itself does not
// link libtorch: the Eigen models, every other subcommand and every node of an Eigen run start in
// milliseconds instead of paying ~0.4 s of CPU to load libtorch, and a build without libtorch is the
// same binary minus the plugin.
//
// The entry points are extern "C" (looked up by name) and never throw: a bad model spec comes back
// as kPluginConfigError with the message, so the caller rethrows it as its own config_error.
#include <cstddef>
#include <string>

#include "node/data/dataset.hpp"
#include "node/models/model.hpp"
#include "node/models/model_factory.hpp"

namespace qgossip {

inline constexpr const char* kTorchPluginFile = "libqgossip_torch.so";
inline constexpr int kPluginOk = 0, kPluginConfigError = 2, kPluginFailure = 1;

// Builds spec's model (kinds lenet5, resnet20, torchscript) into *out (owned by the caller).
using torch_make_fn = int (*)(const model_spec& spec, std::size_t dim, std::size_t classes,
                              const image_shape& shape, model** out, std::string* error);
inline constexpr const char* kTorchMakeSymbol = "qgossip_torch_make";
// True iff this libtorch has CUDA and sees a GPU.
using torch_cuda_fn = bool (*)();
inline constexpr const char* kTorchCudaSymbol = "qgossip_torch_cuda_available";

}  // namespace qgossip
