// node.threads on real node processes: a model large enough that the codec, the mix and the copies
// split into several pieces (core/work_pool.hpp) trains to the same bits on 1, 2 and 8 threads,
// every copy exact, for CHOCO-SGD with local steps and the outer Nesterov step and for DCD-PSGD.
#include <doctest/doctest.h>

#include <map>
#include <sstream>

#include "core/work_pool.hpp"
#include "node/log/replica_check.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

// An MLP 512-320-10: 167,370 parameters, three of the mix's ranges of kElementGrain.
constexpr int kNodes = 4;

std::string config(const std::string& algorithm, const std::string& train_extra, const fs::path& out, int port) {
  std::ostringstream y;
  y << "name: threads\nseed: 3\n"
    << "topology: {graph: ring, n: " << kNodes << ", base_port: " << port << "}\n"
    << "algorithm: " << algorithm << "\ncompressor: {name: qsgd, bits: 3, bucket: 100, norm: max}\n"
    << "model: {kind: mlp, hidden: [320]}\n"
    << "data:\n  dataset: synthetic\n  synthetic: {train: 2048, test: 512, dim: 512, classes: 10, noise: 1.0}\n"
    << "train: {epochs: 1, batch: 32, lr: 0.05, log_every: 4" << train_extra << "}\n"
    << "network: {round_timeout_s: 30, start_timeout_s: 30}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

std::vector<std::string> hashes_on(const temp_dir& tmp, const std::string& algorithm, const std::string& extra,
                                   int threads) {
  const fs::path cfg = tmp.path / "threads.yaml";
  write_file(cfg, config(algorithm, extra, tmp.path / "runs", free_port_range(kNodes)));
  process_result r = run_qgossip({"launch", cfg.string(), "--plain", "--no-plot", "--set",
                                  "node.threads=" + std::to_string(threads)});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(check_replicas(tmp.path / "runs" / "threads").ok());
  std::vector<std::string> out;
  for (const auto& [rank, s] : summaries(tmp.path / "runs" / "threads", kNodes)) out.push_back(text(s, "model_hash"));
  fs::remove_all(tmp.path / "runs");
  return out;
}

}  // namespace

TEST_CASE("node.threads: 1, 2 and 8 threads end with the same model hashes") {
  static_assert(512 * 320 + 320 + 320 * 10 + 10 > 2 * kElementGrain, "the model must split");
  temp_dir tmp;
  for (const auto& [algorithm, extra] :
       {std::pair<std::string, std::string>{"{name: choco, consensus_step: 0.5}",
                                            ", local_steps: 4, outer: {lr: 0.7, momentum: 0.9}"},
        std::pair<std::string, std::string>{"dcd", ""}}) {
    CAPTURE(algorithm);
    const std::vector<std::string> one = hashes_on(tmp, algorithm, extra, 1);
    CHECK(hashes_on(tmp, algorithm, extra, 2) == one);
    CHECK(hashes_on(tmp, algorithm, extra, 8) == one);
  }
}
