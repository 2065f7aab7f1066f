#include "node/models/torch/torchscript.hpp"

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <utility>
#include <vector>

#include <torch/script.h>

#include "core/errors.hpp"
#include "node/models/torch/module_adapter.hpp"

namespace qgossip {
namespace {

class jit_adapter final : public torch_backend::module_adapter {
 public:
  explicit jit_adapter(torch::jit::Module m) : m_(std::move(m)) {}
  torch::Tensor forward(const torch::Tensor& input) override {
    const torch::IValue out = m_.forward({input});
    QG_ENFORCE(out.isTensor(), "a TorchScript forward returned a " << out.tagKind());  // checked at load
    return out.toTensor();
  }
  std::vector<torch::Tensor> parameters() override {
    std::vector<torch::Tensor> v;
    for (const torch::Tensor& p : m_.parameters()) v.push_back(p);
    return v;
  }
  std::vector<torch::Tensor> buffers() override {
    std::vector<torch::Tensor> v;
    for (const torch::Tensor& b : m_.buffers()) v.push_back(b);
    return v;
  }
  void train(bool on) override { m_.train(on); }
  void to(const torch::Device& device) override { m_.to(device); }
  void convert(torch::ScalarType dtype) override { m_.to(dtype); }

 private:
  torch::jit::Module m_;
};

// The informative part of a libtorch error: without the C++ backtrace, and of a TorchScript
// interpreter's report (a Python-like traceback) its last line, the error itself.
std::string brief(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  std::istringstream lines(text);
  std::string line, last;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.empty() ? text : last.substr(last.find_first_not_of(" \t"));
}

std::string sizes_string(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

torch::jit::Module load_file(const std::string& where, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw config_error(where + "no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw config_error(where + "not a regular file");
  try {
    return torch::jit::load(path, torch::Device(torch::kCPU));
  } catch (const std::exception& e) {
    throw config_error(where +
                       "not a TorchScript file (expected a module saved with torch.jit.save): " + brief(e));
  }
}

// Runs forward on a copy of m (so running statistics stay as saved) in both modes on a batch of 2.
void check_forward(const std::string& where, const torch::jit::Module& m, std::size_t dim,
                   std::size_t classes, const image_shape& shape) {
  const std::vector<std::int64_t> sizes = torch_backend::batch_sizes(2, dim, shape);
  const torch::Tensor input =
      torch::arange(static_cast<std::int64_t>(2 * dim), torch::kFloat).sin().reshape(sizes);
  const std::vector<std::int64_t> expected{2, static_cast<std::int64_t>(classes)};
  torch::jit::Module copy = m.deepcopy();
  for (const bool training : {true, false}) {
    torch::IValue out;
    try {
      copy.train(training);
      out = copy.forward({input});
    } catch (const std::exception& e) {
      throw config_error(where + "forward fails on a batch of 2 inputs of shape " + sizes_string(sizes) +
                         " (the data's shape): " + brief(e));
    }
    if (!out.isTensor()) {
      throw config_error(where + "forward returns a " + std::string(out.tagKind()) +
                         ", expected a tensor of logits " + sizes_string(expected));
    }
    if (out.toTensor().sizes() != c10::IntArrayRef(expected)) {
      throw config_error(where + "forward on a batch of 2 inputs of shape " + sizes_string(sizes) +
                         " returns shape " + sizes_string(out.toTensor().sizes()) + ", expected " +
                         sizes_string(expected) + " (batch, classes)");
    }
  }
}

}  // namespace

std::unique_ptr<torch_model> load_torchscript(const std::string& path, std::size_t dim, std::size_t classes,
                                              const image_shape& shape, const torch_options& options) {
  const std::string label = "torchscript " + path;
  const std::string where = label + ": ";
  if (dim == 0) throw config_error(where + "input dimension must be >= 1");
  auto pristine = std::make_shared<torch::jit::Module>(load_file(where, path));
  check_forward(where, *pristine, dim, classes, shape);
  // The working module and init's modules are deep copies: the one loaded keeps the file's values.
  // Without autograd: a copy recorded by autograd would have parameters that are not leaves.
  auto build = [pristine](std::uint64_t) -> std::unique_ptr<torch_backend::module_adapter> {
    torch::NoGradGuard no_grad;
    return std::make_unique<jit_adapter>(pristine->deepcopy());
  };
  try {
    return std::make_unique<torch_model>("torchscript", label, std::move(build), dim, classes, shape,
                                         options);
  } catch (const config_error&) {
    throw;
  } catch (const std::exception& e) {
    throw config_error(where + brief(e));
  }
}

}  // namespace qgossip
