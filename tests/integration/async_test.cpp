// Asynchronous gossip (train.max_staleness) with one slowed node, on real node processes over
// loopback: rank 3 of a ring of 6 is stopped for 80 ms of every 100 (SIGSTOP/SIGCONT from this
// test: a real stall, not a sleep inside the node), so it runs at about a fifth of its rate.
//  - unbounded: the other five run (nearly) all their rounds, rank 3 stops with them ("ended":
//    "with its neighbours") after far fewer, the last of them mixing only (catch_up_rounds), and
//    every copy equals its owner (qgossip verify);
//  - τ = 2: rank 3's neighbours wait for it whenever they are 2 rounds ahead: no node ends more
//    than 2 rounds short (it stops with its neighbours), none mixed a copy older than 2 rounds, and
//    copies are exact.
// Why it cannot flake: the stall keeps rank 3 below 20 % of its rate however the machine is loaded
// (it is stopped 80 % of the time; it ran 5-13 rounds of 40 in 12 runs), while the check asks only
// that it did at most 50 % of the planned rounds, the others at least 50 % and their median 80 %
// (they ran 36-40 in 24 runs of this ring, 12 of this test; one of them 25 of 40 once on CI, its
// neighbours 40); heartbeats (1 s) far outlast an 80 ms stop. Before the
// inbox held at most two messages per neighbour and a round took at most 16 per link, a node that
// started a few rounds late decoded every message its neighbours had sent into a model-sized
// vector of its own, fell further behind while it did, and some ended after 5-22 rounds (3 of 12
// runs; CI failed on one).
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "node/log/replica_check.hpp"
#include "node/run/async_gossip_round.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kNodes = 6;
constexpr int kSlow = 3;

std::string config(const std::string& name, const std::string& staleness, const fs::path& out, int base_port) {
  std::ostringstream y;
  y << "name: " << name << "\nseed: 11\n"
    << "topology: {graph: ring, n: " << kNodes << ", base_port: " << base_port << "}\n"
    << "algorithm: {name: choco, consensus_step: 0.8}\ncompressor: {name: qsgd, bits: 4, bucket: 64}\n"
    // Rounds of real work (8 steps of a 256-1024-512-8 MLP, tens of milliseconds each), so that a node
    // stalled 80 % of the time falls behind.
    << "model: {kind: mlp, hidden: [1024, 512]}\n"
    << "data:\n  dataset: synthetic\n  standardize: false\n"
    << "  synthetic: {train: " << 1280 * kNodes << ", test: 500, dim: 256, classes: 8, noise: 2.0}\n"
    << "train: {epochs: 8, batch: 32, lr: 0.05, local_steps: 8, log_every: 1, eval_every: 0, max_staleness: "
    << staleness << "}\n"
    << "network: {round_timeout_s: 60, start_timeout_s: 60}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

struct run_result {
  fs::path dir;
  std::map<int, nlohmann::ordered_json> nodes;
};

// Starts the ring, slows rank 3 until it exits, waits for everyone.
run_result run_slowed(const temp_dir& tmp, const std::string& name, const std::string& staleness) {
  const fs::path cfg = tmp.path / (name + ".yaml");
  write_file(cfg, config(name, staleness, tmp.path / "runs", free_port_range(kNodes)));
  REQUIRE(run_qgossip({"keys", "--config", cfg.string()}).exit_code == 0);
  std::vector<background_process> nodes;
  for (int r = 0; r < kNodes; ++r)
    nodes.push_back(start_qgossip({"run", "--config", cfg.string(), "--rank", std::to_string(r)},
                                  tmp.path / (name + "-" + std::to_string(r) + ".log")));
  std::atomic<bool> done{false};
  std::thread slower([&] {
    const pid_t pid = nodes[kSlow].pid;
    while (!done.load()) {
      ::kill(pid, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(80));
      ::kill(pid, SIGCONT);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  int codes[kNodes];
  for (int r = 0; r < kNodes; ++r) codes[r] = wait_for(nodes[static_cast<std::size_t>(r)], 240);
  done = true;
  slower.join();
  for (int r = 0; r < kNodes; ++r)
    CHECK_MESSAGE(codes[r] == 0, "node " << r << ": " << read_file(nodes[static_cast<std::size_t>(r)].log));
  run_result out{tmp.path / "runs" / name, {}};
  out.nodes = summaries(out.dir, kNodes);
  return out;
}

// The largest value of the CSV's staleness column (the one before the last, rounds_per_s).
std::uint64_t max_staleness_logged(const fs::path& csv) {
  std::istringstream in(read_file(csv));
  std::string line;
  std::getline(in, line);  // header
  REQUIRE(line.ends_with(",staleness,rounds_per_s"));
  std::uint64_t most = 0;
  while (std::getline(in, line)) {
    const std::size_t last = line.rfind(',');
    const std::size_t before = line.rfind(',', last - 1);
    most = std::max<std::uint64_t>(most, std::stoull(line.substr(before + 1, last - before - 1)));
  }
  return most;
}

}  // namespace

TEST_CASE("asynchronous gossip, unbounded: a slowed node holds back no one, stops with its neighbours, copies exact") {
  temp_dir tmp;
  const run_result r = run_slowed(tmp, "unbounded", "unbounded");
  double planned = 0;
  for (int i = 0; i < kNodes; ++i) planned = std::max(planned, number(r.nodes.at(i), "rounds"));
  for (int i = 0; i < kNodes; ++i) {
    CAPTURE(i);
    CHECK(text(r.nodes.at(i), "status") == "ok");
    // The unslowed nodes run at one rate up to the machine's noise (six processes on two cores;
    // up to 4 rounds of 40 seen here, 15 once on CI): one that is behind when its neighbours have
    // all finished stops with them. Held back by rank 3 it would end near rank 3's count.
    if (i != kSlow) CHECK(number(r.nodes.at(i), "rounds") >= 0.5 * planned);
  }
  std::vector<double> unslowed;
  for (int i = 0; i < kNodes; ++i)
    if (i != kSlow) unslowed.push_back(number(r.nodes.at(i), "rounds"));
  std::sort(unslowed.begin(), unslowed.end());
  CHECK(unslowed[unslowed.size() / 2] >= 0.8 * planned);  // the median unslowed node
  const double slow = number(r.nodes.at(kSlow), "rounds");
  MESSAGE("rank 3 ran " << slow << " of " << planned << " rounds");
  CHECK(slow <= 0.5 * planned);
  CHECK(text(r.nodes.at(kSlow), "ended") == "with its neighbours");
  // Its last rounds only mixed, with its finished neighbours' final copies (their messages of those
  // rounds taken by the neighbours after their own last round: the copies below are still exact).
  CHECK(number(r.nodes.at(kSlow), "catch_up_rounds") == double(async_gossip_round::kCatchUpRounds));
  const replica_check_result check = check_replicas(r.dir);
  CHECK_MESSAGE(check.ok(), "mismatches " << check.mismatches.size() << ", unfinished " << check.unfinished.size());
  CHECK(check.edges_checked == 2 * kNodes);
}

TEST_CASE("asynchronous gossip, max_staleness 2: the slowed node's neighbours wait for it; copies exact") {
  temp_dir tmp;
  const run_result r = run_slowed(tmp, "bounded", "2");
  double planned = 0;
  for (int i = 0; i < kNodes; ++i) planned = std::max(planned, number(r.nodes.at(i), "rounds"));
  // No node can run more than 2 rounds ahead of a neighbour, so when a node's neighbours have all
  // finished it is at most 2 rounds short (it then stops with them) — the slowed node included.
  for (int i = 0; i < kNodes; ++i) {
    CAPTURE(i);
    CHECK(text(r.nodes.at(i), "status") == "ok");
    CHECK(number(r.nodes.at(i), "rounds") >= planned - 2);
    CHECK(max_staleness_logged(r.dir / ("node-" + std::to_string(i) + ".csv")) <= 2);
  }
  // The slowed node's neighbours did mix with copies older than the last round.
  CHECK(max_staleness_logged(r.dir / "node-2.csv") >= 1);
  const replica_check_result check = check_replicas(r.dir);
  CHECK_MESSAGE(check.ok(), "mismatches " << check.mismatches.size() << ", unfinished " << check.unfinished.size());
}
