#include "node/models/torch/torch_model.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <utility>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <Eigen/Core>

#include "core/errors.hpp"
#include "node/models/softmax_regression.hpp"
#include "node/models/torch/module_adapter.hpp"

namespace qgossip {

namespace torch_backend {

std::mutex& seed_lock() {
  static std::mutex lock;
  return lock;
}

std::string shape_string(const image_shape& shape) {
  return std::to_string(shape.channels) + "x" + std::to_string(shape.height) + "x" +
         std::to_string(shape.width);
}

std::vector<std::int64_t> batch_sizes(std::size_t n, std::size_t dim, const image_shape& shape) {
  const auto i = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  if (shape.is_image()) return {i(n), i(shape.channels), i(shape.height), i(shape.width)};
  return {i(n), i(dim)};
}

}  // namespace torch_backend

namespace {

using torch_backend::module_adapter;

// evaluate() runs the module on this many examples at a time (bounds activation memory).
constexpr std::size_t kTorchEvalChunk = 500;

// The BLAS library this process actually mapped (libtorch's matrix products on the CPU go through
// it): the resolved path of the first libblas / libopenblas / libmkl in /proc/self/maps.
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("libblas", 0) == 0 || name.rfind("libopenblas", 0) == 0 || name.rfind("libmkl", 0) == 0) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(path, ec);
      return ec ? path : real.string();
    }
  }
  return "none mapped";
}

// The process-wide settings, once (the first model's thread count wins), and one line on stderr
// (the node log) saying what libtorch runs on.
void configure_threads(int threads) {
  static std::once_flag once;
  std::call_once(once, [threads] {
    torch::set_num_threads(threads);
    try {
      torch::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // The inter-op pool has started already (someone else used torch first): leave it.
    }
    // OpenBLAS (behind libtorch's BLAS calls on Debian) would otherwise start a thread per core.
    using setter = void (*)(int);
    if (void* f = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) reinterpret_cast<setter>(f)(threads);
    std::fprintf(stderr, "libtorch %s: %d intra-op thread(s), BLAS %s\n", TORCH_VERSION, threads,
                 loaded_blas().c_str());
  });
}

// OpenMP thread counts are per thread: a node on its own thread takes the process's count too.
void init_this_thread() {
  thread_local bool done = false;
  if (!done) {
    at::init_num_threads();
    done = true;
  }
}

void check_arguments(const std::string& label, std::size_t dim, std::size_t classes, const image_shape& shape,
                     const torch_options& options) {
  if (dim == 0) throw config_error(label + ": input dimension must be >= 1");
  if (classes < 2 || classes > 256) {
    throw config_error(label + ": classes must be in 2..256, got " + std::to_string(classes));
  }
  if (shape.is_image() && shape.size() != dim) {
    throw config_error(label + ": image shape " + torch_backend::shape_string(shape) +
                       " does not have dim = " + std::to_string(dim) + " values");
  }
  if (options.threads < 1)
    throw config_error(label + ": threads must be >= 1, got " + std::to_string(options.threads));
}

torch::Device resolve_device(const std::string& label, const torch_options& o) {
  if (o.device == device_kind::cpu) return torch::Device(torch::kCPU);
  if (o.device != device_kind::cuda)
    throw config_error(label + ": device must be cpu or cuda, got '" + std::string(name_of(o.device)) + "'");
  if (!torch::cuda::is_available()) {
    throw config_error(label +
                       ": device cuda, but this libtorch has no CUDA support or no GPU is visible "
                       "(torch::cuda::is_available() is false); use device cpu");
  }
  const std::size_t count = torch::cuda::device_count();
  if (o.gpu < 0 || static_cast<std::size_t>(o.gpu) >= count) {
    throw config_error(label + ": gpu " + std::to_string(o.gpu) + " does not exist (" +
                       std::to_string(count) + " CUDA device(s) visible)");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(o.gpu));
}

// The tensors of the flat layout: the parameters (each once, empty ones skipped), then, with
// `buffers`, the floating-point buffers.
struct layout {
  std::vector<torch::Tensor> tensors;
  std::size_t parameters = 0;  // how many of tensors are parameters
};

layout collect(module_adapter& m, bool buffers) {
  layout l;
  std::unordered_set<const void*> seen;
  const auto add = [&](const torch::Tensor& t) {
    if (t.numel() > 0 && seen.insert(t.unsafeGetTensorImpl()).second) l.tensors.push_back(t);
  };
  for (const torch::Tensor& p : m.parameters()) add(p);
  l.parameters = l.tensors.size();
  if (buffers) {
    for (const torch::Tensor& b : m.buffers()) {
      if (b.is_floating_point()) add(b);
    }
  }
  return l;
}

// Where t's data starts in `flat`, in elements; -1 when it does not lie inside.
std::ptrdiff_t offset_in(const torch::Tensor& t, const torch::Tensor& flat) {
  const auto base = reinterpret_cast<std::uintptr_t>(flat.data_ptr());
  const auto at = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  const std::uintptr_t end = base + static_cast<std::uintptr_t>(flat.nbytes());
  const auto size = static_cast<std::uintptr_t>(flat.element_size());
  if (at < base || at + static_cast<std::uintptr_t>(t.nbytes()) > end || (at - base) % size != 0) return -1;
  return static_cast<std::ptrdiff_t>((at - base) / size);
}

torch::ScalarType scalar_type_of(model_dtype d) {
  if (d == model_dtype::bf16) return torch::kBFloat16;
  if (d == model_dtype::fp16) return torch::kHalf;
  return torch::kFloat;
}

// The module's dtype on its device, or config_error for a pair this libtorch cannot run.
torch::ScalarType check_dtype(const std::string& label, const torch_options& o, const torch::Device& device) {
  if (o.dtype == model_dtype::fp16 && !device.is_cuda())
    throw config_error(label + ": dtype fp16 needs device cuda (this libtorch has no fp16 matrix product on "
                               "the CPU); use bf16 there");
  if (o.dtype != model_dtype::fp32 && o.average_buffers)
    throw config_error(label + ": dtype " + std::string(name_of(o.dtype)) +
                       " with averaged buffers: their pseudo-gradient needs fp32 (use buffers: local)");
  return scalar_type_of(o.dtype);
}

}  // namespace

struct torch_model::impl {
  torch_options options;
  image_shape shape;
  torch::Device device{torch::kCPU};
  torch::ScalarType dtype = torch::kFloat;  // the module's (options.dtype)
  module_builder build;
  std::unique_ptr<module_adapter> module;
  torch::Tensor flat;            // [num_params] of dtype on device: the layout's tensors are views into it
  torch::Tensor flat_grad;       // the same for the parameters' .grad()s (the buffers' part: scratch)
  std::optional<bool> training;  // the module's mode once set
  std::optional<double> step_size;  // the last set_step_size(); unset before the first
  transfer_stats traffic;
  // Scratch for the gathered batch, grown on demand (why an instance is not thread-safe).
  std::vector<float> inputs;
  std::vector<std::uint8_t> labels;

  bool on_cuda() const { return device.is_cuda(); }

  void set_training(bool on) {
    if (training != on) module->train(on);
    training = on;
  }

  // Lays the module out (see torch_model.hpp); fills bounds and returns the parameters' floats.
  std::size_t lay_out(const std::string& label, std::vector<std::size_t>& bounds) {
    torch::NoGradGuard no_grad;
    layout l = collect(*module, options.average_buffers);
    if (l.parameters == 0) throw config_error(label + ": the module has no parameters to train");
    bounds = {0};
    for (std::size_t i = 0; i < l.tensors.size(); ++i) {
      if (l.tensors[i].scalar_type() != dtype) {
        throw config_error(label + ": " + (i < l.parameters ? "parameter " : "buffer ") + std::to_string(i) +
                           " is " + std::string(c10::toString(l.tensors[i].scalar_type())) +
                           ", expected float32 (convert the module with .float() before saving it)");
      }
      bounds.push_back(bounds.back() + static_cast<std::size_t>(l.tensors[i].numel()));
    }
    const auto opts = torch::TensorOptions().dtype(dtype).device(device);
    flat = torch::empty({static_cast<std::int64_t>(bounds.back())}, opts);
    flat_grad = torch::zeros({static_cast<std::int64_t>(bounds.back())}, opts);
    for (std::size_t i = 0; i < l.tensors.size(); ++i) {
      torch::Tensor& t = l.tensors[i];
      const auto view = [&](const torch::Tensor& f) {
        return f.narrow(0, static_cast<std::int64_t>(bounds[i]), t.numel()).view(t.sizes());
      };
      view(flat).copy_(t.detach());
      t.set_data(view(flat));
      if (i < l.parameters) {
        QG_ENFORCE(t.is_leaf(), label << ": parameter " << i << " is not a leaf tensor (made by autograd)");
        t.requires_grad_(true);
        t.mutable_grad() = view(flat_grad);
      }
    }
    return bounds[l.parameters];
  }

  // Runs a host <-> device copy and accounts for it (synchronized, so the time is the copy's).
  template <typename Copy>
  void timed(std::size_t bytes, Copy&& copy) {
    torch::cuda::synchronize(device.index());
    const auto start = std::chrono::steady_clock::now();
    copy();
    torch::cuda::synchronize(device.index());
    traffic.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    traffic.bytes += bytes;
  }

  // The caller's parameters into the flat tensor (one copy, rounded to dtype).
  void load(std::span<const float> params) {
    if (!on_cuda() && dtype == torch::kFloat) {
      std::memcpy(flat.data_ptr<float>(), params.data(), params.size_bytes());
      return;
    }
    const auto host = torch::from_blob(const_cast<float*>(params.data()),
                                       {static_cast<std::int64_t>(params.size())}, torch::kFloat);
    if (!on_cuda()) return void(flat.copy_(host));
    timed(flat.nbytes(), [&] { flat.copy_(host.to(dtype)); });  // the dtype's bytes cross
  }

  // The flat gradient into the caller's span (one copy, widened from dtype).
  void store(std::span<float> grad) {
    if (!on_cuda() && dtype == torch::kFloat) {
      std::memcpy(grad.data(), flat_grad.data_ptr<float>(), grad.size_bytes());
      return;
    }
    auto host = torch::from_blob(grad.data(), {static_cast<std::int64_t>(grad.size())}, torch::kFloat);
    if (!on_cuda()) return void(host.copy_(flat_grad));
    timed(flat_grad.nbytes(), [&] { host.copy_(flat_grad.to(torch::kCPU)); });
  }

  torch::Tensor to_device(const torch::Tensor& host) {
    if (!on_cuda()) return host;
    torch::Tensor out;
    timed(host.nbytes(), [&] { out = host.to(device); });
    return out;
  }

  torch::Tensor to_host(const torch::Tensor& t) {
    if (!on_cuda()) return t.contiguous();
    torch::Tensor out;
    timed(t.nbytes(), [&] { out = t.to(torch::kCPU).contiguous(); });
    return out;
  }

  // The batch's inputs (batch_sizes) and int64 labels, on the device.
  std::pair<torch::Tensor, torch::Tensor> batch_tensors(const dataset& d,
                                                        std::span<const std::size_t> batch) {
    const std::size_t n = batch.size();
    grow_scratch(inputs, n * d.dim);
    grow_scratch(labels, n);
    gather(d, batch, inputs, labels);
    const auto x =
        torch::from_blob(inputs.data(), torch_backend::batch_sizes(n, d.dim, shape), torch::kFloat);
    const auto y = torch::from_blob(labels.data(), {static_cast<std::int64_t>(n)}, torch::kUInt8);
    return {to_device(x).to(dtype), to_device(y).to(torch::kLong)};
  }
};

namespace {

void check_logits(const torch::Tensor& z, std::size_t n, std::size_t classes, const std::string& label) {
  QG_ENFORCE(z.dim() == 2 && z.size(0) == static_cast<std::int64_t>(n) &&
                 z.size(1) == static_cast<std::int64_t>(classes),
             label << " returned logits of shape " << z.sizes() << " for " << n << " examples of " << classes
                   << " classes");
}

}  // namespace

torch_model::torch_model(std::string kind, std::string label, module_builder build, std::size_t dim,
                         std::size_t classes, const image_shape& shape, const torch_options& options)
    : impl_(std::make_unique<impl>()),
      kind_(std::move(kind)),
      label_(std::move(label)),
      dim_(dim),
      classes_(classes) {
  check_arguments(label_, dim, classes, shape, options);
  configure_threads(options.threads);
  impl& m = *impl_;
  m.options = options;
  m.shape = shape;
  m.device = resolve_device(label_, options);
  m.dtype = check_dtype(label_, options, m.device);
  m.build = std::move(build);
  m.module = m.build(0);
  m.module->to(m.device);
  if (m.dtype != torch::kFloat) m.module->convert(m.dtype);  // fp32: another type is refused (lay_out)
  trainable_ = m.lay_out(label_, bounds_);
}

torch_model::~torch_model() = default;

void torch_model::init(std::span<float> params, std::uint64_t seed) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  torch::NoGradGuard no_grad;
  const std::unique_ptr<module_adapter> fresh = impl_->build(seed);
  const layout l = collect(*fresh, impl_->options.average_buffers);
  QG_ENFORCE(l.tensors.size() + 1 == bounds_.size(), label_ << ": a new module has " << l.tensors.size()
                                                            << " tensors, the layout " << bounds_.size() - 1);
  for (std::size_t i = 0; i < l.tensors.size(); ++i) {
    // Rounded to the module's dtype first: x_1 is exactly the values the module computes with.
    const torch::Tensor t = l.tensors[i].detach().to(torch::kCPU, impl_->dtype).to(torch::kFloat).contiguous();
    QG_ENFORCE(static_cast<std::size_t>(t.numel()) == bounds_[i + 1] - bounds_[i],
               label_ << ": tensor " << i);
    std::memcpy(params.data() + bounds_[i], t.data_ptr<float>(),
                static_cast<std::size_t>(t.numel()) * sizeof(float));
  }
}

double torch_model::loss_and_grad(std::span<const float> params, const dataset& d,
                                  std::span<const std::size_t> batch, std::span<float> grad) const {
  QG_ENFORCE(params.size() == num_params() && grad.size() == num_params(),
             "params " << params.size() << " grad " << grad.size() << " model " << num_params());
  QG_ENFORCE(d.dim == input_dim() && d.classes == classes(),
             "data " << d.dim << "->" << d.classes << " model " << describe());
  QG_ENFORCE(!batch.empty());
  impl& m = *impl_;
  const std::size_t averaged = num_params() - trainable_;
  QG_ENFORCE(averaged == 0 || m.step_size,
             label_ << ": buffers averaged but set_step_size() never called");
  init_this_thread();
  m.load(params);
  const auto [x, y] = m.batch_tensors(d, batch);
  m.flat_grad.zero_();
  const auto t0 = static_cast<std::int64_t>(trainable_), nb = static_cast<std::int64_t>(averaged);
  if (averaged > 0) m.flat_grad.narrow(0, t0, nb).copy_(m.flat.narrow(0, t0, nb));  // x_before
  m.set_training(true);
  const torch::Tensor logits = m.module->forward(x);
  check_logits(logits, batch.size(), classes_, label_);
  const torch::Tensor loss = torch::cross_entropy_loss(logits.to(torch::kFloat), y);
  loss.backward();
  if (averaged > 0) {
    // A step of size 0 (a cosine schedule's end, a warm-up from 0) moves nothing, the buffers
    // included: the running statistics this forward computed are dropped with it.
    torch::NoGradGuard no_grad;
    torch::Tensor g = m.flat_grad.narrow(0, t0, nb);
    if (*m.step_size > 0)
      g.sub_(m.flat.narrow(0, t0, nb)).div_(*m.step_size);
    else
      g.zero_();
  }
  m.store(grad);
  return loss.item<double>();
}

eval_result torch_model::evaluate(std::span<const float> params, const dataset& d,
                                  std::size_t max_examples) const {
  QG_ENFORCE(params.size() == num_params(), "params " << params.size() << " != " << num_params());
  QG_ENFORCE(d.dim == input_dim() && d.classes == classes(),
             "data " << d.dim << "->" << d.classes << " model " << describe());
  const std::size_t total = std::min(max_examples, d.size);
  QG_ENFORCE(total > 0, "nothing to evaluate");
  impl& m = *impl_;
  init_this_thread();
  m.load(params);
  m.set_training(false);
  torch::NoGradGuard no_grad;
  double loss_sum = 0.0;
  std::size_t correct = 0;
  for (std::size_t start = 0; start < total; start += kTorchEvalChunk) {
    const std::size_t n = std::min(kTorchEvalChunk, total - start);
    const auto x = torch::from_blob(const_cast<float*>(d.features.data() + start * d.dim),
                                    torch_backend::batch_sizes(n, d.dim, m.shape), torch::kFloat);
    const torch::Tensor logits = m.module->forward(m.to_device(x).to(m.dtype));
    check_logits(logits, n, classes_, label_);
    const torch::Tensor z = m.to_host(logits.to(torch::kFloat));
    // Row-major [n, classes] is the column-major classes × n matrix softmax_xent_eval reads.
    const Eigen::Map<const Eigen::MatrixXf> zm(z.data_ptr<float>(), static_cast<Eigen::Index>(classes_),
                                               static_cast<Eigen::Index>(n));
    softmax_xent_eval(zm, std::span<const std::uint8_t>(d.labels).subspan(start, n), loss_sum, correct);
  }
  return {loss_sum / static_cast<double>(total), static_cast<double>(correct) / static_cast<double>(total),
          total};
}

std::string torch_model::describe() const {
  return label_ + " (torch, " + impl_->device.str() +
         (impl_->dtype != torch::kFloat ? ", " + std::string(name_of(impl_->options.dtype)) : "") +
         (num_params() > trainable_ ? ", buffers averaged" : "") + ")";
}

transfer_stats torch_model::transfers() const { return impl_->traffic; }

void torch_model::set_step_size(double lr) {
  QG_ENFORCE(lr >= 0 && std::isfinite(lr), "step size " << lr);
  impl_->step_size = lr;
}

std::vector<tensor_placement> torch_model::placements() const {
  const layout l = collect(*impl_->module, impl_->options.average_buffers);
  std::vector<tensor_placement> out;
  for (const torch::Tensor& t : l.tensors) {
    tensor_placement p;
    p.numel = static_cast<std::size_t>(t.numel());
    p.contiguous = t.is_contiguous();
    p.offset = offset_in(t, impl_->flat);
    if (t.grad().defined()) p.grad_offset = offset_in(t.grad(), impl_->flat_grad);
    out.push_back(p);
  }
  return out;
}

std::vector<float> torch_model::module_buffers() const {
  std::vector<float> out;
  for (const torch::Tensor& b : impl_->module->buffers()) {
    if (!b.is_floating_point()) continue;
    const torch::Tensor c = b.detach().to(torch::kCPU, torch::kFloat).contiguous();
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

bool torch_cuda_available() { return torch::cuda::is_available(); }

}  // namespace qgossip
