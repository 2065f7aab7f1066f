// Real node processes training libtorch models (node/models/torch/): a TorchScript model written by
// Debian's python3-torch on .npy images, ResNet-20 on CIFAR-10-format files, LeNet-5 on
// Fashion-MNIST; DCD replicas checked against their owners; bad model files refused with the file
// named. Built only with the libtorch backend (tests/integration/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/portable_random.hpp"
#include "core/json.hpp"
#include "node/log/replica_check.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs python3 with a script; false when python3 or torch is missing (the caller skips).
bool python(const fs::path& dir, const std::string& script) {
  const fs::path file = dir / "make.py";
  write_file(file, script);
  const std::string cmd = "/usr/bin/python3 " + file.string() + " > " + (dir / "python.log").string() + " 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// The last CSV row's value of `column` and the first row's, of node `rank`.
std::pair<double, double> first_and_last(const fs::path& run, int rank, const std::string& column) {
  std::istringstream in(read_file(run / ("node-" + std::to_string(rank) + ".csv")));
  std::string line;
  std::getline(in, line);
  std::size_t index = 0;
  {
    std::istringstream h(line);
    std::string name;
    for (std::size_t k = 0; std::getline(h, name, ','); ++k)
      if (name == column) index = k;
  }
  std::vector<double> values;
  while (std::getline(in, line)) {
    std::istringstream r(line);
    std::string cell;
    for (std::size_t k = 0; std::getline(r, cell, ','); ++k)
      if (k == index && !cell.empty()) values.push_back(std::stod(cell));
  }
  REQUIRE(values.size() >= 2);
  return {values.front(), values.back()};
}

// A small scripted CNN for 1x8x8 images and 4 classes, and .npy data where the class is the bright
// quadrant of the image (plus noise): easy enough that a few epochs separate the classes.
const char* kScriptAndData = R"(
import sys, numpy as np, torch, torch.nn as nn
out = sys.argv[1] if len(sys.argv) > 1 else '.'
torch.manual_seed(3)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 4, 4)
    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv(x)), 2)
        return self.fc(torch.flatten(x, 1))
class Wrong(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 3)
    def forward(self, x):
        return self.fc(torch.flatten(x, 1))
torch.jit.script(Net()).save('OUT/net.pt')
torch.jit.script(Wrong()).save('OUT/wrong.pt')
rng = np.random.default_rng(5)
def make(n):
    y = rng.integers(0, 4, n)
    x = rng.normal(0, 0.3, (n, 8, 8)).astype(np.float32)
    for i in range(n):
        r, c = divmod(int(y[i]), 2)
        x[i, 4*r:4*r+4, 4*c:4*c+4] += 1.0
    return x, y.astype(np.int64)
for split, n in (('train', 1600), ('test', 400)):
    x, y = make(n)
    np.save('OUT/%s_images.npy' % split, x)
    np.save('OUT/%s_labels.npy' % split, y)
)";

// A python script with OUT replaced by dir.
std::string script_for(const fs::path& dir, std::string s = kScriptAndData) {
  for (std::size_t p; (p = s.find("OUT")) != std::string::npos;) s.replace(p, 3, dir.string());
  return s;
}

std::string ring(int n, int port) {
  return "topology: {graph: ring, n: " + std::to_string(n) + ", base_port: " + std::to_string(port) + "}\n";
}

const char* kNetwork = "network: {round_timeout_s: 60, start_timeout_s: 60, linger_s: 5}\n";

}  // namespace

TEST_CASE("a TorchScript model written by python3-torch trains in an 8-node DCD ring; replicas equal their owners") {
  temp_dir tmp;
  if (!python(tmp.path, script_for(tmp.path))) {
    MESSAGE("skipped: python3 with torch and numpy is needed to write the model (" << read_file(tmp.path / "python.log") << ")");
    return;
  }
  std::ostringstream y;
  y << "name: script\nseed: 4\n" << ring(8, free_port_range(8))
    << "algorithm: dcd\ncompressor: {name: qsgd, bits: 8, bucket: 128, norm: max}\n"
    << "model: {kind: torchscript, path: net.pt}\n"
    << "data: {dataset: npy, dir: " << tmp.path.string() << "}\n"
    << "train: {epochs: 4, batch: 20, lr: 0.1, log_every: 5, eval_every: 1}\n"
    << kNetwork << "output: {dir: " << (tmp.path / "runs").string() << "}\n";
  write_file(tmp.path / "script.yaml", y.str());
  process_result r = run_qgossip({"launch", (tmp.path / "script.yaml").string(), "--plain", "--no-plot"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path run = tmp.path / "runs" / "script";
  replica_check_result check = check_replicas(run);
  CHECK(check.ok());
  CHECK(check.copies_kind == "replica");
  CHECK(check.edges_checked == 16);
  // 4 classes: chance is 0.25 and the starting loss ~ln 4 = 1.39. The bright quadrant is 3.3
  // noise standard deviations above the rest, so a trained CNN separates the classes almost surely;
  // 0.9 leaves room for 4 short epochs with 8-bit differences.
  for (const auto& [rank, j] : summaries(run, 8)) {
    CHECK_MESSAGE(number(j, "test_acc") > 0.9, "node " << rank);
    const auto [first, last] = first_and_last(run, rank, "train_loss");
    CHECK_MESSAGE(last < 0.5 * first, "node " << rank << ": loss " << first << " -> " << last);
  }
}

TEST_CASE("a TorchScript file that is missing, not TorchScript, or of the wrong output size is a clear error") {
  temp_dir tmp;
  if (!python(tmp.path, script_for(tmp.path))) {
    MESSAGE("skipped: python3 with torch and numpy is needed to write the models");
    return;
  }
  write_file(tmp.path / "garbage.pt", "this is not a zip archive of a scripted module\n");
  struct cas {
    const char* file;
    const char* expect;
  };
  for (cas c : {cas{"missing.pt", "missing.pt"}, cas{"garbage.pt", "torch.jit.save"}, cas{"wrong.pt", "4"}}) {
    std::ostringstream y;
    y << "name: bad\n" << ring(2, free_port_range(2)) << "algorithm: dpsgd\n"
      << "model: {kind: torchscript, path: " << c.file << "}\n"
      << "data: {dataset: npy, dir: " << tmp.path.string() << "}\n"
      << "output: {dir: " << (tmp.path / "runs").string() << "}\n";
    write_file(tmp.path / "bad.yaml", y.str());
    process_result r = run_qgossip({"run", "--config", (tmp.path / "bad.yaml").string(), "--rank", "0"});
    INFO(c.file << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, (tmp.path / c.file).string()));
    CHECK(contains(r.output, c.expect));
    CHECK(!contains(r.output, "terminate called"));
  }
}

// Five training files and a test file in the CIFAR-10 binary format (label byte, 1024 red, 1024
// green, 1024 blue): class 0 images are reddish, class 1 bluish, with per-pixel noise.
void write_cifar(const fs::path& dir, std::size_t per_file) {
  fs::create_directories(dir);
  std::mt19937_64 rng(11);
  auto write = [&](const std::string& name) {
    std::string bytes;
    for (std::size_t i = 0; i < per_file; ++i) {
      const int label = static_cast<int>(rng() % 2);
      bytes.push_back(static_cast<char>(label));
      for (int channel = 0; channel < 3; ++channel)
        for (int p = 0; p < 1024; ++p) {
          const int base = channel == 0 ? (label == 0 ? 160 : 90) : channel == 2 ? (label == 1 ? 160 : 90) : 120;
          bytes.push_back(static_cast<char>(base + static_cast<int>(rng() % 60) - 30));
        }
    }
    write_file(dir / name, bytes);
  };
  for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin");
  write("test_batch.bin");
}

TEST_CASE("ResNet-20 trains on CIFAR-10-format files (standardized, cropped, flipped) and its loss falls") {
  temp_dir tmp;
  write_cifar(tmp.path / "cifar", 32);  // 160 training images, 32 test
  std::ostringstream y;
  y << "name: resnet\nseed: 2\n" << ring(2, free_port_range(2))
    << "algorithm: dcd\ncompressor: {name: qsgd, bits: 8, bucket: 128, norm: max}\n"
    << "model: {kind: resnet20}\ndevice: cpu\n"
    << "data: {dataset: cifar10, dir: " << (tmp.path / "cifar").string()
    << ", standardize: true, augment: {crop_padding: 4, flip: true}}\n"
    << "train: {epochs: 3, batch: 16, lr: 0.05, momentum: 0.9, log_every: 1, eval_every: 100}\n"
    << kNetwork << "output: {dir: " << (tmp.path / "runs").string() << "}\n";
  write_file(tmp.path / "resnet.yaml", y.str());
  process_result r = run_qgossip({"launch", (tmp.path / "resnet.yaml").string(), "--plain", "--no-plot"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path run = tmp.path / "runs" / "resnet";
  CHECK(check_replicas(run).ok());
  CHECK(contains(read_file(run / "run.json"), "standardized per channel"));
  CHECK(contains(read_file(tmp.path / "runs" / "resnet" / "node-0.log"), "269722 parameters"));
  // Two classes told apart by colour: 15 steps of SGD with momentum take the batch loss from ~ln 2
  // well below it on both nodes (rows every round; the first row is round 1's batch).
  for (int rank = 0; rank < 2; ++rank) {
    const auto [first, last] = first_and_last(run, rank, "train_loss");
    CHECK_MESSAGE(last < 0.6 * first, "node " << rank << ": loss " << first << " -> " << last);
  }
}

// In fp32, and in bf16 (model.dtype: the module computes in bf16, the node's vectors stay float32,
// so DCD's replicas are exact all the same).
TEST_CASE("LeNet-5 trains on Fashion-MNIST images in a ring, replicas exact") {
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: dataset-fashion-mnist is not installed");
    return;
  }
  std::string dtype;
  SUBCASE("fp32") { dtype = "fp32"; }
  SUBCASE("bf16") { dtype = "bf16"; }
  CAPTURE(dtype);
  temp_dir tmp;
  std::ostringstream y;
  y << "name: lenet\nseed: 1\n" << ring(4, free_port_range(4))
    << "algorithm: dcd\ncompressor: {name: qsgd, bits: 8, bucket: 128, norm: max}\n"
    << "model: {kind: lenet5, dtype: " << dtype << "}\ndata: {dataset: fashion-mnist, standardize: true}\n"
    << "train: {epochs: 0.02, batch: 32, lr: 0.05, momentum: 0.9, log_every: 2, eval_every: 100}\n"
    << kNetwork << "output: {dir: " << (tmp.path / "runs").string() << "}\n";
  write_file(tmp.path / "lenet.yaml", y.str());
  process_result r = run_qgossip({"launch", (tmp.path / "lenet.yaml").string(), "--plain", "--no-plot"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const fs::path run = tmp.path / "runs" / "lenet";
  CHECK(check_replicas(run).ok());
  CHECK(contains(read_file(run / "node-0.log"), "61706 parameters"));
  CHECK(contains(read_file(run / "node-0.log"), dtype == "bf16" ? "(torch, cpu, bf16)" : "(torch, cpu)"));
  // 0.02 epoch = 9 rounds of 32 images per node: from ~ln 10 = 2.3 the loss falls below 2.
  const auto [first, last] = first_and_last(run, 0, "train_loss");
  CHECK(last < first);
}

// Issue 32: the demo's cosine schedule reaches step size 0 in its last round (the run has
// ceil(epochs · rounds per epoch) rounds, so the last round's steps lie at or past the schedule's
// end), and every libtorch model died there with an internal error (exit 70). Each kind, on the
// cosine schedule with 2 local steps, must reach its last round with every copy equal: ResNet-20
// with its BatchNorm statistics averaged (whose pseudo-gradient divided by the step size), LeNet-5,
// and a TorchScript module with BatchNorm and Dropout.
TEST_CASE("every libtorch model on a cosine schedule reaches its last round, where the step size is 0") {
  temp_dir tmp;
  write_cifar(tmp.path / "cifar", 16);  // 80 training images, 16 test
  const bool scripted = python(tmp.path, script_for(tmp.path, R"(
import torch, torch.nn as nn
torch.manual_seed(3)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(4 * 8 * 8, 10)
    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn(self.conv(x))), 4)
        return self.fc(self.drop(torch.flatten(x, 1)))
torch.jit.script(Net()).save('OUT/bn.pt')
)"));
  struct kind {
    std::string name, model;
  };
  std::vector<kind> kinds = {{"resnet", "{kind: resnet20, buffers: average}"}, {"lenet", "{kind: lenet5}"},
                             {"bn", "{kind: torchscript, path: " + (tmp.path / "bn.pt").string() + "}"}};
  for (const kind& k : kinds) {
    if (k.name == "bn" && !scripted) {
      MESSAGE("skipped the TorchScript case: python3 with torch is needed (" << read_file(tmp.path / "python.log") << ")");
      continue;
    }
    std::ostringstream y;
    y << "name: " << k.name << "\nseed: 5\n" << ring(2, free_port_range(2))
      << "algorithm: {name: choco, consensus_step: 0.8}\ncompressor: {name: qsgd, bits: 3, bucket: 128, norm: max}\n"
      << "model: " << k.model << "\ndevice: cpu\n"
      << "data: {dataset: cifar10, dir: " << (tmp.path / "cifar").string() << "}\n"
      << "train: {epochs: 1, batch: 8, lr: 0.05, schedule: {kind: cosine}, local_steps: 2, log_every: 1}\n"
      << kNetwork << "output: {dir: " << (tmp.path / "runs").string() << "}\n";
    write_file(tmp.path / (k.name + ".yaml"), y.str());
    process_result r = run_qgossip({"launch", (tmp.path / (k.name + ".yaml")).string(), "--plain", "--no-plot"});
    INFO(k.name << ": " << r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(check_replicas(tmp.path / "runs" / k.name).ok());
  }
}
