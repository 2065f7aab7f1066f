// node/models/torch/torchscript: a module scripted and saved by Debian's python3-torch is loaded,
// laid out in file order with the file's values, and trained; bad files are configuration errors
// that name the file. Skipped (with a message) where python3 cannot import torch.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/errors.hpp"
#include "node/models/model_factory.hpp"
#include "node/models/torch/torchscript.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

constexpr image_shape kShape{1, 8, 8};

// conv 3x3 (1 -> 4), BN, ReLU, fc 144 -> classes: 40 + 8 + 435 = 483 parameters for 3 classes.
constexpr const char* kScript = R"(import sys, torch
class Net(torch.nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 6 * 6, classes)
    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))
torch.manual_seed(0)
out = sys.argv[1]
good = torch.jit.script(Net(3))
good.save(out + "/good.pt")
torch.cat([p.detach().flatten() for p in good.parameters()]).numpy().tofile(out + "/good.params")
torch.jit.script(Net(5)).save(out + "/wrong.pt")
)";

fs::path g_made;  // the folder files() made, removed at exit

// The folder holding good.pt, good.params, wrong.pt and garbage.pt; nullopt when python3 has no torch.
const std::optional<fs::path>& files() {
  static const std::optional<fs::path> dir = []() -> std::optional<fs::path> {
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return std::nullopt;
    const fs::path d = fs::temp_directory_path() / ("qgossip_torchscript_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::ofstream(d / "make.py") << kScript;
    std::ofstream(d / "garbage.pt") << "this is not a zip archive\n";
    const std::string cmd = "/usr/bin/python3 " + (d / "make.py").string() + " " + d.string();
    g_made = d;
    REQUIRE(std::system(cmd.c_str()) == 0);
    return d;
  }();
  return dir;
}

// Removes the folder when the test program exits.
struct cleanup {
  ~cleanup() {
    if (!g_made.empty()) fs::remove_all(g_made);
  }
} const remove_files_at_exit;

std::string path_of(const char* name) { return (*files() / name).string(); }

dataset images(std::size_t n, std::size_t classes, std::uint64_t seed) {
  dataset d;
  d.size = n;
  d.dim = kShape.size();
  d.classes = classes;
  d.shape = kShape;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    d.labels.push_back(std::uint8_t(i % classes));
    for (std::size_t j = 0; j < d.dim; ++j)
      d.features.push_back(normal(rng) + (j < 32 ? float(i % classes) : 0.0f));
  }
  return d;
}

std::string error_of(const std::string& path, std::size_t classes, const image_shape& shape = kShape) {
  model_spec spec;
  spec.kind = model_kind::torchscript;
  spec.path = path;
  try {
    (void)make_model(spec, shape.size(), classes, shape);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("torchscript: a scripted module loads with the file's values and trains") {
  if (!files()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch (install python3-torch)");
    return;
  }
  const auto m = load_torchscript(path_of("good.pt"), kShape.size(), 3, kShape, {});
  CHECK(m->num_params() == 483);
  CHECK(m->layer_bounds() == std::vector<std::size_t>{0, 36, 40, 44, 48, 480, 483});
  CHECK(m->describe() == "torchscript " + path_of("good.pt") + " (torch, cpu)");

  // init: the values saved, in parameters() order, whatever the seed.
  std::vector<float> p(m->num_params()), q(m->num_params()), saved(m->num_params());
  std::ifstream(path_of("good.params"), std::ios::binary)
      .read(reinterpret_cast<char*>(saved.data()), std::streamsize(saved.size() * sizeof(float)));
  m->init(p, 1);
  m->init(q, 2);
  CHECK(p == saved);
  CHECK(q == saved);

  const dataset d = images(48, 3, 1);
  std::vector<float> g(m->num_params());
  std::vector<std::size_t> batch(48);
  std::iota(batch.begin(), batch.end(), std::size_t{0});
  const double start = m->evaluate(p, d).loss;
  for (int step = 0; step < 10; ++step) {
    (void)m->loss_and_grad(p, d, batch, g);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= 0.1f * g[i];
  }
  const double end = m->evaluate(p, d).loss;
  CAPTURE(start);
  CAPTURE(end);
  CHECK(end < 0.7 * start);

  torch_options average;
  average.average_buffers = true;
  CHECK(load_torchscript(path_of("good.pt"), kShape.size(), 3, kShape, average)->num_params() == 483 + 8);
}

TEST_CASE("torchscript: bad files are configuration errors naming the file") {
  if (!files()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch (install python3-torch)");
    return;
  }
  const auto contains = [](const std::string& what, const std::string& part) {
    CAPTURE(what);
    CHECK(what.find(part) != std::string::npos);
  };
  const std::string missing = path_of("missing.pt");
  contains(error_of(missing, 3), "torchscript " + missing + ": no such file");
  contains(error_of(files()->string(), 3), "not a regular file");

  const std::string garbage = path_of("garbage.pt");
  const std::string not_script = error_of(garbage, 3);
  contains(not_script, garbage);
  contains(not_script, "expected a module saved with torch.jit.save");

  const std::string wrong = path_of("wrong.pt");
  const std::string wrong_size = error_of(wrong, 3);
  contains(wrong_size, wrong);
  contains(wrong_size, "returns shape [2, 5], expected [2, 3]");

  const std::string good = path_of("good.pt");
  const std::string bad_input = error_of(good, 3, {3, 8, 8});  // the module takes 1 channel
  contains(bad_input, good);
  contains(bad_input, "forward fails on a batch of 2 inputs of shape [2, 3, 8, 8]");
}
