#pragma once
// torch_model: the `model` interface (node/models/model.hpp) over a libtorch module, a C++
// torch::nn::Module or a TorchScript torch::jit::Module, so a node trains real networks while the
// algorithms keep seeing one flat float vector. lenet5.hpp, resnet20.hpp and torchscript.hpp build
// one; module_adapter.hpp (internal to this folder, the only header here that includes torch) is how
// a module plugs in.
//
// Layout: every parameter tensor of the module, in module.parameters() order (each tensor once,
// empty ones skipped), is re-seated (Tensor::set_data) as a view into ONE contiguous float32 tensor
// on the model's device, and its .grad() as the same view into one flat gradient tensor. The
// caller's flat vector has that layout: layer_bounds() has one entry per parameter tensor, holding
// its elements in the tensor's own row-major order. A call copies the caller's parameters in (one
// copy), runs the module, and copies the flat gradient out (one copy); on CUDA those are the only
// host <-> device traffic besides the batch, and transfers() accounts for them.
//
// Buffers (BatchNorm running statistics), torch_options::average_buffers:
//   false ("local", the default): they live inside the module, one set per instance (so per node),
//     never in the flat vector; training updates them, evaluate uses them.
//   true ("average"): the floating-point buffers (not the integer num_batches_tracked) follow the
//     parameters in the flat vector, one layer bound each, so the algorithm mixes them with the
//     model. They have no gradient: for their coordinates loss_and_grad writes
//       grad = (x_before - x_after) / step_size,
//     x_after being the running statistics the training-mode forward computed and step_size the
//     last set_step_size(); a plain SGD step x - step_size * grad then lands on x_after (a step size
//     of 0, where a schedule ends or a warm-up starts, moves nothing: grad = 0 there). So this
//     mode needs set_step_size() before loss_and_grad and plain SGD on those coordinates: the config
//     loader requires momentum 0 and weight_decay 0 with `buffers: average`.
//
// dtype (torch_options::dtype, model.dtype): the module, its flat tensors and its activations are
// in fp32, bf16 or fp16; the caller's vectors are float32 whatever it is. A call copies the caller's
// parameters into the module rounded to the nearest (ties to even) and its gradient out exactly
// (widened); the loss is taken in float32 from the logits. init gives the module's values rounded
// to the dtype, so x_1 is exactly the module's. fp16 needs cuda (this libtorch has no fp16 matrix
// product on the CPU); averaged buffers need fp32.
//
// Loss: mean softmax cross-entropy (torch's cross_entropy) of the module's training-mode forward.
// evaluate: eval mode (BatchNorm uses its running statistics), no autograd, 500 examples at a time;
// loss and accuracy come from the logits through the Eigen models' code (softmax_xent_eval), so they
// are defined exactly as there: ties go to the lowest class (torch::argmax also returns the first
// maximum).
//
// init: the module's own initial values: a C++ module is constructed anew after
// torch::manual_seed(seed) (PyTorch's default initialization, or the module's own; same seed, same
// bits on every device since it runs on the CPU); a TorchScript module gives the values stored in
// its file, whatever the seed.
//
// Threads: libtorch's intra-op thread count is per process. The first torch_model built in a
// process sets it to its options.threads (torch::set_num_threads), the inter-op pool to 1, and
// OpenBLAS's pool (when OpenBLAS is loaded) to options.threads; later instances' threads are ignored.
//
// Thread-safety: as model.hpp says, one instance per thread. Distinct instances may run
// concurrently; init serializes on a process-wide lock (it seeds torch's global generator).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "node/data/dataset.hpp"
#include "node/models/model.hpp"
#include "node/models/model_factory.hpp"

namespace qgossip {

namespace torch_backend {
class module_adapter;  // module_adapter.hpp
}  // namespace torch_backend

struct torch_options {
  device_kind device = device_kind::cpu;  // cpu or cuda (config_error for automatic: resolve it first)
  int gpu = 0;                   // the CUDA device's index
  int threads = 1;               // intra-op threads (per process, see above)
  bool average_buffers = false;  // buffers "average" (true) or "local" (false), see above
  model_dtype dtype = model_dtype::fp32;  // what the module computes in (see below)
};

// Where one tensor of the flat layout actually lives, measured from the module's tensors (their data
// pointers), for tests: offsets are in floats from the start of the flat parameter (gradient)
// tensor, -1 when the tensor's data lies outside it (grad_offset: or when it has no .grad()).
struct tensor_placement {
  std::ptrdiff_t offset = -1;
  std::ptrdiff_t grad_offset = -1;
  std::size_t numel = 0;
  bool contiguous = false;
};

// True iff this libtorch has CUDA and sees at least one GPU.
[[nodiscard]] bool torch_cuda_available();

class torch_model final : public model {
 public:
  // Returns a new module on the CPU whose tensors' values depend on the seed only.
  using module_builder = std::function<std::unique_ptr<torch_backend::module_adapter>(std::uint64_t seed)>;

  // kind: the model kind ("resnet20"; named by the ISGQ refusal); label: describe()'s head
  // ("resnet20", "torchscript /path/m.pt"), which also starts every config_error this throws.
  // Builds the working module with build(0) and lays it out as above; the input of a batch of n is
  // [n, C, H, W] for image data (shape.is_image()), [n, dim] otherwise.
  // Throws config_error for dim 0, classes outside 2..256, shape.size() != dim for image data, a
  // device other than cpu/cuda, cuda when this libtorch has no CUDA or sees no GPU, a gpu index out
  // of range, a module without parameters, a parameter (averaged buffer) of another floating-point
  // type than float32 (before a conversion to options.dtype), fp16 on the CPU, or averaged buffers
  // with a dtype other than fp32.
  torch_model(std::string kind, std::string label, module_builder build, std::size_t dim, std::size_t classes,
              const image_shape& shape, const torch_options& options);
  ~torch_model() override;
  torch_model(const torch_model&) = delete;
  torch_model& operator=(const torch_model&) = delete;

  std::size_t num_params() const override { return bounds_.back(); }
  const std::vector<std::size_t>& layer_bounds() const override { return bounds_; }
  std::size_t input_dim() const override { return dim_; }
  std::size_t classes() const override { return classes_; }
  void init(std::span<float> params, std::uint64_t seed) const override;
  double loss_and_grad(std::span<const float> params, const dataset& d, std::span<const std::size_t> batch,
                       std::span<float> grad) const override;
  eval_result evaluate(std::span<const float> params, const dataset& d,
                       std::size_t max_examples = kAllExamples) const override;
  // "resnet20 (torch, cpu)", "lenet5 (torch, cuda:0, buffers averaged)".
  std::string describe() const override;
  transfer_stats transfers() const override;
  // REQUIRES: lr >= 0 and finite. Only the averaged buffers' pseudo-gradient uses it.
  void set_step_size(double lr) override;

  // Floats of the flat vector that are parameters; the averaged buffers (if any) follow them.
  [[nodiscard]] std::size_t num_trainable() const { return trainable_; }
  // One entry per layer (layer_bounds), measured from the module's tensors as they are now.
  [[nodiscard]] std::vector<tensor_placement> placements() const;
  // The module's floating-point buffers (running statistics) as they are now, concatenated in
  // buffers() order; empty for a module without any. Local or averaged alike.
  [[nodiscard]] std::vector<float> module_buffers() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;  // the module, its flat tensors and scratch (torch types)
  std::string kind_;
  std::string label_;
  std::size_t dim_;
  std::size_t classes_;
  std::vector<std::size_t> bounds_;
  std::size_t trainable_ = 0;
};

}  // namespace qgossip
