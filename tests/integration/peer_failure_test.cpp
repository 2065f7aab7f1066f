// Training on around a failed peer, on real node processes over loopback (docs/failures.md):
//  - continue: a ring of 8, one node SIGKILLed or SIGSTOPped mid-run. Its neighbours notice within
//    1.5 s (from the kill to their peer_left event, both on the system clock), the 7 others finish
//    with status ok, every survivor's copy of every surviving neighbour equals its owner (qgossip
//    verify), and their mean test accuracy is close to an undisturbed run's;
//  - stop: one node SIGKILLed; every other node exits within 2 s, failed (exit 1), naming the killed
//    rank: on the gossip path (dcd) and on the centralized ones (allgather, the ring allreduce), where
//    a lost peer is a named error, never an internal one.
// Why it cannot flake: detection is bounded by the transport's heartbeat (0.25 + 1 + 0.2 s) for a
// stopped node and by a closed connection (milliseconds) for a killed one; the kill comes once
// every node has logged rows (the run is under way) and the run has seconds left after it. The
// accuracy bound (3 points on synthetic data, seeded) is far outside the run-to-run difference of
// losing one node of 8 for the last half of a run (measured 0.2-0.6 points).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/json.hpp"
#include "node/log/replica_check.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kNodes = 8;
constexpr int kVictim = 3;

std::string config(const std::string& name, const std::string& algorithm, const std::string& policy,
                   const fs::path& out, int base_port) {
  std::ostringstream y;
  y << "name: " << name << "\nseed: 5\n"
    << "topology: {graph: ring, n: " << kNodes << ", base_port: " << base_port << "}\n"
    << "algorithm: " << algorithm << "\n"
    << (algorithm == "allreduce" ? "" : "compressor: {name: qsgd, bits: 4, bucket: 64}\n")
    << "model: {kind: mlp, hidden: [32]}\n"
    << "data:\n  dataset: synthetic\n  standardize: false\n"
    << "  synthetic: {train: " << 1600 * kNodes << ", test: 2000, dim: 32, classes: 4, noise: 3.0}\n"
    << "train: {epochs: 30, batch: 16, lr: 0.05, log_every: 5, eval_every: 0, eval_examples: 0}\n"
    << "network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 2, on_peer_failure: " << policy << "}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct cluster {
  std::vector<background_process> nodes;
  fs::path dir;
};

cluster start(const temp_dir& tmp, const std::string& name, const std::string& algorithm, const std::string& policy) {
  const fs::path cfg = tmp.path / (name + ".yaml");
  write_file(cfg, config(name, algorithm, policy, tmp.path / "runs", free_port_range(kNodes)));
  const process_result keys = run_qgossip({"keys", "--config", cfg.string()});
  REQUIRE_MESSAGE(keys.exit_code == 0, keys.output);
  cluster c;
  c.dir = tmp.path / "runs" / name;
  for (int r = 0; r < kNodes; ++r)
    c.nodes.push_back(start_qgossip({"run", "--config", cfg.string(), "--rank", std::to_string(r)},
                                    tmp.path / (name + "-" + std::to_string(r) + ".log")));
  return c;
}

// Waits until every node's CSV has a row after its header (the run is under way), up to 60 s.
void wait_until_training(const cluster& c) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    int training = 0;
    for (int r = 0; r < kNodes; ++r) {
      const std::string csv = read_file(c.dir / ("node-" + std::to_string(r) + ".csv"));
      if (std::count(csv.begin(), csv.end(), '\n') >= 3) ++training;
    }
    if (training == kNodes) return;
    REQUIRE(std::chrono::steady_clock::now() < give_up);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// The earliest peer_left event about `peer` in the nodes' stdout logs: its unix_s, or 0 when none.
double first_notice(const cluster& c, int peer) {
  double first = 0;
  for (const auto& n : c.nodes) {
    std::istringstream in(read_file(n.log));
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"peer_left\"") == std::string::npos) continue;
      const auto obj = parse_json_object(line);
      REQUIRE(obj);
      const auto p = json_number(*obj, "peer");
      const auto t = json_number(*obj, "unix_s");
      REQUIRE((p && t));
      if (static_cast<int>(*p) != peer) continue;
      const double at = *t;
      if (first == 0 || at < first) first = at;
    }
  }
  return first;
}

// The summaries of the given ranks (a killed node writes none).
std::map<int, nlohmann::ordered_json> summaries_of(const fs::path& dir, const std::vector<int>& ranks) {
  std::map<int, nlohmann::ordered_json> out;
  for (int r : ranks) {
    auto j = parse_json_object(read_file(dir / ("node-" + std::to_string(r) + ".json")));
    REQUIRE_MESSAGE(j.has_value(), "summary of node " << r << " unreadable in " << dir);
    out[r] = *j;
  }
  return out;
}

double mean_accuracy(const fs::path& dir, const std::vector<int>& ranks) {
  const auto s = summaries_of(dir, ranks);
  double sum = 0;
  for (int r : ranks) sum += number(s.at(r), "test_acc");
  return sum / static_cast<double>(ranks.size());
}

std::vector<int> survivors() {
  std::vector<int> out;
  for (int r = 0; r < kNodes; ++r)
    if (r != kVictim) out.push_back(r);
  return out;
}

// Runs a continue-policy ring with `sig` sent to the victim once training is under way; checks the
// detection time, the survivors' status and copies, and returns their mean accuracy.
double run_with_failure(const temp_dir& tmp, const std::string& name, const std::string& algorithm, int sig) {
  cluster c = start(tmp, name, algorithm, "continue");
  wait_until_training(c);
  const double sent = unix_now();
  REQUIRE(::kill(c.nodes[kVictim].pid, sig) == 0);
  REQUIRE_FALSE(fs::exists(c.dir / ("node-" + std::to_string(kVictim) + ".json")));  // it was mid-run
  for (int r : survivors()) {
    const int code = wait_for(c.nodes[static_cast<std::size_t>(r)], 120);
    CHECK_MESSAGE(code == 0, "node " << r << ": " << read_file(c.nodes[static_cast<std::size_t>(r)].log));
  }
  ::kill(c.nodes[kVictim].pid, SIGKILL);  // a stopped victim still runs
  (void)wait_for(c.nodes[kVictim], 30);
  const double noticed = first_notice(c, kVictim);
  REQUIRE(noticed > 0);
  MESSAGE(name << ": rank " << kVictim << " noticed " << noticed - sent << " s after the signal");
  CHECK(noticed - sent < 1.5);
  const auto s = summaries_of(c.dir, survivors());
  for (int r : survivors()) {
    CHECK(text(s.at(r), "status") == "ok");
    CHECK(text(s.at(r), "departed") == std::to_string(kVictim));
  }
  const replica_check_result check = check_replicas(c.dir);
  CHECK(check.ok());
  CHECK(check.departed == std::vector<int>{kVictim});
  CHECK(check.edges_checked > 0);
  return mean_accuracy(c.dir, survivors());
}

}  // namespace

TEST_CASE("on_peer_failure continue: a SIGKILLed node is dropped, the other 7 finish with exact copies") {
  temp_dir tmp;
  for (const std::string algorithm : {"dcd", "{name: choco, consensus_step: 0.5}"}) {
    CAPTURE(algorithm);
    cluster whole = start(tmp, "whole", algorithm, "continue");
    for (auto& n : whole.nodes) CHECK(wait_for(n, 120) == 0);
    const double undisturbed = mean_accuracy(whole.dir, survivors());
    fs::remove_all(whole.dir);
    const double disturbed = run_with_failure(tmp, "killed", algorithm, SIGKILL);
    MESSAGE("mean test accuracy of the 7: " << disturbed << " against " << undisturbed << " undisturbed");
    CHECK(disturbed > undisturbed - 0.03);
    fs::remove_all(tmp.path / "runs");
  }
}

TEST_CASE("on_peer_failure continue: a SIGSTOPped node is noticed by heartbeat and dropped") {
  temp_dir tmp;
  (void)run_with_failure(tmp, "stopped", "dcd", SIGSTOP);
}

TEST_CASE("on_peer_failure stop: every node exits within 2 s of a SIGKILL, naming the killed rank") {
  temp_dir tmp;
  for (const std::string algorithm : {"dcd", "allgather", "allreduce"}) {
  CAPTURE(algorithm);
  cluster c = start(tmp, "stop-" + algorithm, algorithm, "stop");
  wait_until_training(c);
  const auto killed = std::chrono::steady_clock::now();
  REQUIRE(::kill(c.nodes[kVictim].pid, SIGKILL) == 0);
  for (int r : survivors()) CHECK(wait_for(c.nodes[static_cast<std::size_t>(r)], 10) == 1);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  MESSAGE("the 7 others exited " << took << " s after the kill");
  CHECK(took < 2.0);
  (void)wait_for(c.nodes[kVictim], 10);
  const auto s = summaries_of(c.dir, survivors());
  for (int r : survivors()) {
    CHECK(text(s.at(r), "status") == "failed");
    const std::string error = text(s.at(r), "error");
    CHECK_MESSAGE(error.find("rank " + std::to_string(kVictim)) != std::string::npos, "node " << r << ": " << error);
  }
  }
}
