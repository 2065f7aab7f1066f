#pragma once
// Internal to node/models/torch/: only this folder's .cpp files (and tests that want to wrap their
// own module) include it, because it includes torch. The small interface torch_model needs from a
// module, its adapter over C++ torch::nn modules, and the builder that seeds their initialization.
//
// Thread-safety: an adapter is used by one thread at a time (its torch_model's).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/utils.h>

#include "node/data/dataset.hpp"
#include "node/models/torch/torch_model.hpp"

namespace qgossip::torch_backend {

class module_adapter {
 public:
  virtual ~module_adapter() = default;
  // The logits [n, classes] of a batch (input [n, ...], see batch_sizes).
  virtual torch::Tensor forward(const torch::Tensor& input) = 0;
  // Handles sharing the module's own tensors (so set_data re-seats the module's), in a fixed order.
  virtual std::vector<torch::Tensor> parameters() = 0;
  virtual std::vector<torch::Tensor> buffers() = 0;
  virtual void train(bool on) = 0;
  virtual void to(const torch::Device& device) = 0;
  // Converts its floating-point tensors to dtype (model.dtype other than fp32).
  virtual void convert(torch::ScalarType dtype) = 0;
};

// A C++ module with `torch::Tensor forward(const torch::Tensor&)`.
template <typename Module>
class nn_adapter final : public module_adapter {
 public:
  explicit nn_adapter(std::shared_ptr<Module> m) : m_(std::move(m)) {}
  torch::Tensor forward(const torch::Tensor& input) override { return m_->forward(input); }
  std::vector<torch::Tensor> parameters() override { return m_->parameters(); }
  std::vector<torch::Tensor> buffers() override { return m_->buffers(); }
  void train(bool on) override { m_->train(on); }
  void to(const torch::Device& device) override { m_->to(device); }
  void convert(torch::ScalarType dtype) override { m_->to(dtype); }

 private:
  std::shared_ptr<Module> m_;
};

// The process-wide lock around "seed torch's global generator, then construct".
std::mutex& seed_lock();

// A torch_model::module_builder for a C++ module: under seed_lock(), torch::manual_seed(seed) and
// then Module(args...), so its initialization (PyTorch's default, or the module's own drawing from
// the default generator) is a function of the seed.
template <typename Module, typename... Args>
torch_model::module_builder seeded_builder(Args... args) {
  return [=](std::uint64_t seed) -> std::unique_ptr<module_adapter> {
    std::lock_guard<std::mutex> lock(seed_lock());
    torch::manual_seed(seed);
    return std::make_unique<nn_adapter<Module>>(std::make_shared<Module>(args...));
  };
}

// "3x32x32".
std::string shape_string(const image_shape& shape);

// The input sizes of a batch of n: {n, C, H, W} for image data, {n, dim} otherwise.
std::vector<std::int64_t> batch_sizes(std::size_t n, std::size_t dim, const image_shape& shape);

}  // namespace qgossip::torch_backend
