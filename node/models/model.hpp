#pragma once
// A classifier whose parameters live in ONE flat float vector owned by the caller (the algorithm):
// the model holds only the architecture and scratch space, never the parameters, so algorithms and
// compressors see a single span and per-layer boundaries for layer-wise schemes.
//
// Layout: layers one after another; layer l occupies [layer_bounds()[l], layer_bounds()[l+1]) and
// holds its weight matrix W_l (out × in, column-major: entry (o, i) at offset i·out + o) followed by
// its bias b_l (out). For `mlp 784-128-10`: {0, 100480, 101770}.
//
// Loss: mean softmax cross-entropy (natural log) over the batch.
//
// The Eigen models (fully connected) also hand out their gradient's factors for ISGQ
// (node/models/factored_model.hpp).
//
// Thread-safety: a model instance is NOT thread-safe: loss_and_grad and evaluate reuse scratch
// buffers held in the instance (so the training loop does not allocate). Use one instance per
// thread; instances are cheap. The parameters and data set are only read during a call.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/names.hpp"
#include "node/data/dataset.hpp"

namespace qgossip {

// How the Eigen models (mlp, softmax) draw their first parameters (model.init).
enum class init_kind {
  he,       // hidden layers He-normal N(0, 2/in), the output layer Glorot-normal N(0, 2/(in+out)), biases 0
  pytorch,  // torch.nn.Linear's default: weights and biases uniform on ±1/sqrt(in)
};
inline constexpr named<init_kind> kInitNames[] = {{init_kind::he, "he"}, {init_kind::pytorch, "pytorch"}};
constexpr std::span<const named<init_kind>> names_of(init_kind) { return kInitNames; }

struct eval_result {
  double loss = 0.0;         // mean cross-entropy over the examples evaluated
  double accuracy = 0.0;     // fraction whose arg-max logit is the label (ties: lowest class)
  std::size_t examples = 0;  // how many were evaluated
};

struct transfer_stats {
  std::uint64_t bytes = 0;  // host -> device plus device -> host
  double seconds = 0.0;     // wall time of those copies (synchronized)
};

class model {
 public:
  static constexpr std::size_t kAllExamples = std::numeric_limits<std::size_t>::max();

  virtual ~model() = default;

  [[nodiscard]] virtual std::size_t num_params() const = 0;
  // Offsets of each layer's start plus the total at the end (size = layers + 1).
  [[nodiscard]] virtual const std::vector<std::size_t>& layer_bounds() const = 0;
  [[nodiscard]] virtual std::size_t input_dim() const = 0;
  [[nodiscard]] virtual std::size_t classes() const = 0;

  // Fills params with a fresh initialization, a function of the seed only (same on every platform
  // up to libm rounding; see core/portable_random.hpp). REQUIRES: params.size() == num_params().
  virtual void init(std::span<float> params, std::uint64_t seed) const = 0;

  // Returns the mean loss over d's examples `batch` and writes its gradient w.r.t. params to grad.
  // REQUIRES (invariant_error otherwise): params and grad of size num_params(), d.dim ==
  // input_dim(), d.classes == classes(), batch non-empty, every index < d.size.
  [[nodiscard]] virtual double loss_and_grad(std::span<const float> params, const dataset& d,
                                             std::span<const std::size_t> batch,
                                             std::span<float> grad) const = 0;

  // Loss and accuracy over the first min(max_examples, d.size) examples of d (in chunks; no
  // gradient). REQUIRES: as loss_and_grad, and d non-empty.
  [[nodiscard]] virtual eval_result evaluate(std::span<const float> params, const dataset& d,
                                             std::size_t max_examples = kAllExamples) const = 0;

  // Kind and layer widths: "softmax 784-10", "mlp 784-128-10".
  [[nodiscard]] virtual std::string describe() const = 0;

  // Traffic between host memory and the model's device so far (parameters in, gradients out,
  // batches in): zero for models that compute on the CPU.
  [[nodiscard]] virtual transfer_stats transfers() const { return {}; }

  // The learning rate of the step that will follow the next loss_and_grad: the round loop calls it
  // before each loss_and_grad. Models whose flat vector carries state that is not trained but
  // computed (torch_model's averaged BatchNorm running statistics) write, for those coordinates,
  // grad = (x - x_new) / lr, so that plain SGD's x - lr·grad equals the state x_new the forward
  // computed; lr 0 (a schedule's end, a warm-up from 0) is valid and gives grad 0 there: nothing
  // moves (momentum or weight decay would break that: the config loader requires both 0 with
  // `buffers: average`). Ignored by every other model.
  virtual void set_step_size(double lr) {}
};

}  // namespace qgossip
