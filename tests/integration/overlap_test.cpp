// train.overlap on real node processes (docs/algorithms.md, "Overlapped rounds"): a round's
// encode and exchange run on the node's thread beside the next round's local steps, its mix lands
// one round late. Every copy stays exact, a seeded run repeats bit for bit (synchronous rounds:
// what a node mixes does not depend on timing), the model learns as the blocking run's does
// (allreduce with train.outer: DiLoCo with a delayed outer step, every node the same model), and
// the algorithms that cannot take it are refused at load, naming the key.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "node/log/replica_check.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

std::string config(const std::string& name, const std::string& algorithm, const std::string& compressor,
                   const fs::path& out, int base_port, const std::string& extra_train) {
  std::ostringstream y;
  y << "name: " << name << "\nseed: 5\n"
    << "topology: {graph: ring, n: 8, base_port: " << base_port << "}\n"
    << "algorithm: " << algorithm << "\ncompressor: " << compressor << "\n"
    << "model: {kind: mlp, hidden: [32]}\n"
    << "data:\n  dataset: synthetic\n  standardize: false\n"
    << "  synthetic: {train: 8000, test: 2000, dim: 32, classes: 4, noise: 1.0}\n"
    << "train: {epochs: 3, batch: 32, lr: 0.1, momentum: 0.9, log_every: 5, eval_every: 1, local_steps: 4"
    << extra_train << "}\n"
    << "network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 5}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

struct run_result {
  std::map<int, nlohmann::ordered_json> nodes;
  replica_check_result check;
  std::string output;
};

run_result launch(const temp_dir& tmp, const std::string& name, const std::string& algorithm,
                  const std::string& compressor, const std::string& extra_train) {
  const fs::path cfg = tmp.path / (name + ".yaml");
  write_file(cfg, config(name, algorithm, compressor, tmp.path / "runs", free_port_range(8), extra_train));
  const process_result r = run_qgossip({"launch", cfg.string(), "--plain", "--no-plot"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return {summaries(tmp.path / "runs" / name, 8), check_replicas(tmp.path / "runs" / name), r.output};
}

double mean_acc(const std::map<int, nlohmann::ordered_json>& nodes) {
  double sum = 0;
  for (const auto& [rank, s] : nodes) sum += number(s, "test_acc");
  return sum / static_cast<double>(nodes.size());
}

}  // namespace

TEST_CASE("overlapped CHOCO-SGD: every copy exact, a seeded rerun bit for bit, accuracy as the blocking run's") {
  temp_dir tmp;
  const std::string choco = "{name: choco, consensus_step: 0.8}", qsgd = "{name: qsgd, bits: 3, bucket: 128, norm: max}";
  const run_result blocking = launch(tmp, "blocking", choco, qsgd, "");
  const run_result a = launch(tmp, "a", choco, qsgd, ", overlap: true");
  const run_result b = launch(tmp, "b", choco, qsgd, ", overlap: true");
  CHECK(a.check.ok());
  CHECK(b.check.ok());
  for (int r = 0; r < 8; ++r) {
    CAPTURE(r);
    CHECK(text(a.nodes.at(r), "status") == "ok");
    CHECK(text(a.nodes.at(r), "model_hash") == text(b.nodes.at(r), "model_hash"));
    CHECK(text(a.nodes.at(r), "model_hash") != text(blocking.nodes.at(r), "model_hash"));  // another rule
    CHECK(number(a.nodes.at(r), "rounds") == number(blocking.nodes.at(r), "rounds"));
  }
  // Measured: mean test accuracy 0.9995 both ways (the clusters are nearly separable; chance 0.25).
  MESSAGE("mean test accuracy: blocking " << mean_acc(blocking.nodes) << ", overlapped " << mean_acc(a.nodes));
  CHECK(mean_acc(a.nodes) > mean_acc(blocking.nodes) - 0.02);
}

TEST_CASE("overlapped D-PSGD, naive, asynchronous CHOCO-SGD and DiLoCo train and keep their copies") {
  temp_dir tmp;
  struct cas {
    const char* name;
    const char* algorithm;
    const char* compressor;
    const char* extra;
  };
  for (cas c : {cas{"dpsgd", "dpsgd", "identity", ", overlap: true"},
                cas{"naive", "naive", "{name: qsgd, bits: 8, bucket: 128}", ", overlap: true"},
                cas{"async", "{name: choco, consensus_step: 0.8}", "{name: qsgd, bits: 3, bucket: 128, norm: max}",
                    ", overlap: true, max_staleness: 2"},
                // DiLoCo with a delayed outer step, 4-bit pseudo-gradients (the quantized ring all-reduce).
                cas{"diloco", "allreduce", "{name: qsgd, bits: 4, bucket: 128, norm: max}",
                    ", overlap: true, outer: {lr: 0.7, momentum: 0.9}"}}) {
    CAPTURE(std::string(c.name));
    const run_result r = launch(tmp, c.name, c.algorithm, c.compressor, c.extra);
    CHECK(r.check.ok());
    for (const auto& [rank, s] : r.nodes) CHECK(text(s, "status") == "ok");
    MESSAGE(std::string(c.name) << ": mean test accuracy " << mean_acc(r.nodes));
    CHECK(mean_acc(r.nodes) > 0.9);
  }
}

TEST_CASE("train.overlap is refused at load where the algorithm cannot take it, naming the key") {
  temp_dir tmp;
  for (const char* algorithm : {"dcd", "ecd"}) {
    CAPTURE(std::string(algorithm));
    const fs::path cfg = tmp.path / "refused.yaml";
    write_file(cfg, config("refused", algorithm, "{name: qsgd, bits: 8, bucket: 128}", tmp.path / "runs",
                           free_port_range(8), ", overlap: true"));
    const process_result r = run_qgossip({"launch", cfg.string(), "--plain", "--no-plot"});
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("train.overlap") != std::string::npos);
    CHECK(r.output.find("refused.yaml") != std::string::npos);
  }
}
