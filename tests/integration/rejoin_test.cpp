// Rejoining (docs/failures.md, "Rejoining"), on real node processes over loopback, a ring of 8 with
// network.on_peer_failure: continue:
//  - three SIGKILL / restart cycles of different ranks: each restarted process (the same command)
//    is admitted again by both its neighbours (their peer_joined events) within 5 s of its start;
//    then a process of another run (another config) in a killed node's place is refused by both
//    neighbours (said once each) and exits 2, as is one whose key they do not list (at its
//    handshake, within 15 s), and the right one rejoins; every node ends with status
//    ok, no rank is departed at the end, and every copy on every edge, the rejoined nodes' included,
//    equals its owner (qgossip verify);
//  - a rank started 10 s after the others, past their start time-out of 3 s: they drop it and train
//    on; it then joins the same way and finishes with its copies exact;
//  - network.restart: 2 under `qgossip launch`: one node SIGKILLed twice (the second time after it
//    rejoined) is started again by the launcher each time, and the launch ends with exit 0 and every
//    copy equal;
//  - qgossip launch --churn (a scenario's churn list): one node killed and started again, another
//    stopped past its heartbeat time-out (dropped) and continued; both rejoin, every copy equal.
// Every state here travels in chunks: network.max_message_mib 0.001 (1048 bytes) against a state of
// 9504 (a model of 1188 parameters and its public copy), so 10 chunks a state, each checked.
// Why it cannot flake: a killed process closes its connections, which its neighbours see within
// milliseconds (the peer_failure test bounds it by 1.5 s); a restarted node asks its neighbours at
// start-up and is admitted a few rounds later (measured here: well under a second on loopback); the
// 5 s bound is the ceiling, and each step waits for the event it needs (the departure seen
// before the restart), not for a fixed time. The runs have tens of seconds left after the last cycle.
#include <doctest/doctest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
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

std::string config(const std::string& name, const fs::path& out, int base_port, double start_timeout_s, int epochs) {
  std::ostringstream y;
  y << "name: " << name << "\nseed: 5\n"
    << "topology: {graph: ring, n: " << kNodes << ", base_port: " << base_port << "}\n"
    << "algorithm: {name: choco, consensus_step: 0.5}\n"
    << "compressor: {name: qsgd, bits: 4, bucket: 64}\n"
    << "model: {kind: mlp, hidden: [32]}\n"
    << "data:\n  dataset: synthetic\n  standardize: false\n"
    << "  synthetic: {train: " << 1600 * kNodes << ", test: 2000, dim: 32, classes: 4, noise: 3.0}\n"
    << "train: {epochs: " << epochs << ", batch: 16, lr: 0.05, local_steps: 4, log_every: 25, eval_every: 0, eval_examples: 0}\n"
    << "network: {round_timeout_s: 20, start_timeout_s: " << start_timeout_s
    << ", on_peer_failure: continue, max_message_mib: 0.001}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct cluster {
  fs::path cfg, dir, logs;
  std::vector<background_process> nodes;
  std::vector<std::vector<std::string>> extra_logs;  // each node's earlier processes' logs

  background_process start_node(int r, const std::string& tag) {
    return start_qgossip({"run", "--config", cfg.string(), "--rank", std::to_string(r)},
                         logs / ("node-" + std::to_string(r) + tag + ".log"));
  }
};

cluster make(const temp_dir& tmp, const std::string& name, double start_timeout_s, int epochs) {
  cluster c;
  c.cfg = tmp.path / (name + ".yaml");
  c.dir = tmp.path / "runs" / name;
  c.logs = tmp.path / (name + "-logs");
  fs::create_directories(c.logs);
  write_file(c.cfg, config(name, tmp.path / "runs", free_port_range(kNodes), start_timeout_s, epochs));
  const process_result keys = run_qgossip({"keys", "--config", c.cfg.string()});
  REQUIRE_MESSAGE(keys.exit_code == 0, keys.output);
  return c;
}

// The unix_s of every event `kind` about `peer` ("peer" field) in the logs, later than `after`.
std::vector<double> events(const std::vector<fs::path>& logs, const std::string& kind, int peer, double after) {
  std::vector<double> out;
  for (const fs::path& log : logs) {
    std::istringstream in(read_file(log));
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"event\":\"" + kind + "\"") == std::string::npos) continue;
      const auto obj = parse_json_object(line);
      if (!obj) continue;
      const auto p = json_number(*obj, "peer");
      const auto t = json_number(*obj, "unix_s");
      if (p && t && static_cast<int>(*p) == peer && *t > after) out.push_back(*t);
    }
  }
  return out;
}

std::vector<fs::path> logs_of(const cluster& c, std::initializer_list<int> ranks) {
  std::vector<fs::path> out;
  for (int r : ranks) out.push_back(c.nodes[static_cast<std::size_t>(r)].log);
  return out;
}

// Waits until `done` holds, up to timeout_s; false when it never did.
template <class F>
bool wait_until(F done, double timeout_s) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Every node finished ok, none is departed at the end, and every copy equals its owner.
void check_end(cluster& c) {
  for (int r = 0; r < kNodes; ++r) {
    const int code = wait_for(c.nodes[static_cast<std::size_t>(r)], 180);
    CHECK_MESSAGE(code == 0, "node " << r << ": " << read_file(c.nodes[static_cast<std::size_t>(r)].log));
  }
  const auto s = summaries(c.dir, kNodes);
  for (int r = 0; r < kNodes; ++r) {
    CHECK(text(s.at(r), "status") == "ok");
    CHECK(text(s.at(r), "departed") == "");
  }
  const replica_check_result check = check_replicas(c.dir);
  std::string why;
  for (const auto* list : {&check.mismatches, &check.problems, &check.unfinished})
    for (const std::string& line : *list) why += line + "; ";
  CHECK_MESSAGE(check.ok(), why);
  CHECK(check.departed.empty());
  CHECK(check.edges_checked == 2 * kNodes);
}

}  // namespace

TEST_CASE("rejoin: three SIGKILL / restart cycles; each restarted node is mixed again by both neighbours within 5 s") {
  temp_dir tmp;
  cluster c = make(tmp, "churn", 30, 2000);  // about 30 s undisturbed
  for (int r = 0; r < kNodes; ++r) c.nodes.push_back(c.start_node(r, ""));
  // Under way: every node has logged rows (a link that never came up is not a loss to notice).
  REQUIRE(wait_until([&] {
    for (int r = 0; r < kNodes; ++r) {
      const std::string csv = read_file(c.dir / ("node-" + std::to_string(r) + ".csv"));
      if (std::count(csv.begin(), csv.end(), '\n') < 3) return false;
    }
    return true;
  }, 60));
  int cycle = 0;
  for (const int victim : {3, 6, 1}) {
    ++cycle;
    CAPTURE(victim);
    const int left = (victim + kNodes - 1) % kNodes, right = (victim + 1) % kNodes;
    const double killed = unix_now();
    REQUIRE(::kill(c.nodes[static_cast<std::size_t>(victim)].pid, SIGKILL) == 0);
    (void)wait_for(c.nodes[static_cast<std::size_t>(victim)], 10);
    REQUIRE(wait_until([&] { return !events(logs_of(c, {left, right}), "peer_left", victim, killed).empty(); }, 10));
    c.nodes[static_cast<std::size_t>(victim)] = c.start_node(victim, "-restart" + std::to_string(cycle));
    const double restarted = unix_now();
    REQUIRE(wait_until([&] { return events(logs_of(c, {left, right}), "peer_joined", victim, restarted).size() == 2; }, 20));
    double last = 0;
    for (double t : events(logs_of(c, {left, right}), "peer_joined", victim, restarted)) last = std::max(last, t);
    MESSAGE("cycle " << cycle << ": rank " << victim << " mixed again by both neighbours " << last - restarted
                     << " s after its restart");
    CHECK(last - restarted < 5.0);
  }
  // A joiner of another run (its config differs: another run id) is refused by its neighbours, who
  // say so once, and stops with exit 2; the run goes on, and the right process then rejoins.
  constexpr int kWrong = 5;
  const double killed = unix_now();
  REQUIRE(::kill(c.nodes[kWrong].pid, SIGKILL) == 0);
  (void)wait_for(c.nodes[kWrong], 10);
  REQUIRE(wait_until([&] { return !events(logs_of(c, {4, 6}), "peer_left", kWrong, killed).empty(); }, 10));
  std::string other = read_file(c.cfg);
  other.replace(other.find("lr: 0.05"), 8, "lr: 0.06");
  const fs::path wrong_cfg = tmp.path / "churn-other.yaml";
  write_file(wrong_cfg, other);
  background_process wrong = start_qgossip({"run", "--config", wrong_cfg.string(), "--rank", std::to_string(kWrong)},
                                           c.logs / "node-5-other-run.log");
  CHECK(wait_for(wrong, 60) == 2);
  CHECK(read_file(wrong.log).find("every live neighbour refused to admit this node") != std::string::npos);
  CHECK(read_file(wrong.log).find("it is of another run") != std::string::npos);
  // A joiner whose key its neighbours do not list (the run's keys but a keypair of its own): CURVE
  // refuses its connections, it hears so from its handshakes and stops with exit 2 at once.
  const fs::path other_keys = tmp.path / "other-keys";
  fs::copy(c.dir / "keys", other_keys);
  fs::remove(other_keys / "node-5.key");
  fs::remove(other_keys / "node-5.pub");
  REQUIRE(run_qgossip({"keys", "--config", c.cfg.string(), "--set", "network.keys_dir=" + other_keys.string(), "--missing"})
              .exit_code == 0);
  background_process unlisted =
      start_qgossip({"run", "--config", c.cfg.string(), "--rank", std::to_string(kWrong), "--set",
                     "network.keys_dir=" + other_keys.string()},
                    c.logs / "node-5-unlisted-key.log");
  CHECK(wait_for(unlisted, 15) == 2);
  CHECK(read_file(unlisted.log).find("refused this node's key (CURVE)") != std::string::npos);
  c.nodes[kWrong] = c.start_node(kWrong, "-right");
  const double right = unix_now();
  REQUIRE(wait_until([&] { return events(logs_of(c, {4, 6}), "peer_joined", kWrong, right).size() == 2; }, 20));
  check_end(c);
  for (int j : {4, 6}) {  // each neighbour said it once, however many times the joiner asked
    const std::string log = read_file(c.nodes[static_cast<std::size_t>(j)].log);
    std::size_t said = 0;
    for (auto at = log.find("refused rank 5's join: it is of another run"); at != std::string::npos;
         at = log.find("refused rank 5's join: it is of another run", at + 1))
      ++said;
    CHECK(said == 1);
  }
}

TEST_CASE("rejoin: a rank started 10 s after the others (past their start time-out) joins and ends with its copies exact") {
  temp_dir tmp;
  constexpr int kLate = 5;
  cluster c = make(tmp, "late", 3, 2000);
  for (int r = 0; r < kNodes; ++r) c.nodes.push_back(r == kLate ? background_process{} : c.start_node(r, ""));
  const double started = unix_now();
  REQUIRE(wait_until([&] { return !events(logs_of(c, {4, 6}), "peer_left", kLate, 0).empty(); }, 20));
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, 10.0 - (unix_now() - started))));
  c.nodes[kLate] = c.start_node(kLate, "");
  const double late = unix_now();
  REQUIRE(wait_until([&] { return events(logs_of(c, {4, 6}), "peer_joined", kLate, late).size() == 2; }, 30));
  check_end(c);
  CHECK(read_file(c.nodes[kLate].log).find("\"event\":\"rejoined\"") != std::string::npos);
}

namespace {
// The pid of the `qgossip run` process of `rank` started for config `cfg` (by the launcher), or -1.
int node_pid(const fs::path& cfg, int rank) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(" run ") != std::string::npos && cmdline.find(cfg.string()) != std::string::npos &&
        cmdline.find("--rank " + std::to_string(rank) + " ") != std::string::npos)
      return std::stoi(name);
  }
  return -1;
}
}  // namespace

TEST_CASE("rejoin: network.restart 2: the launcher restarts a node killed twice, and the run ends with exit 0") {
  temp_dir tmp;
  constexpr int kVictim = 2;
  cluster c = make(tmp, "restart", 30, 2000);
  std::string yaml = read_file(c.cfg);  // the restart policy goes into the network section
  const auto at = yaml.find("on_peer_failure: continue");
  yaml.insert(at, "restart: 2, ");
  write_file(c.cfg, yaml);
  background_process launch = start_qgossip({"launch", c.cfg.string(), "--plain", "--no-plot"}, c.logs / "launch.log");
  for (int kill = 1; kill <= 2; ++kill) {
    CAPTURE(kill);
    int pid = -1;
    REQUIRE(wait_until([&] {
      pid = node_pid(c.cfg, kVictim);
      const std::string csv = read_file(c.dir / "node-0.csv");
      return pid > 0 && std::count(csv.begin(), csv.end(), '\n') >= 3;
    }, 60));
    if (kill == 2)  // the restarted node is back in the run before it is killed again
      REQUIRE(wait_until([&] { return read_file(launch.log).find("rejoined the run") != std::string::npos; }, 30));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    REQUIRE(wait_until([&] { return node_pid(c.cfg, kVictim) != pid; }, 10));
    REQUIRE(wait_until([&] {
      const std::string out = read_file(launch.log);
      return out.find("restart " + std::to_string(kill) + " of 2") != std::string::npos;
    }, 10));
  }
  const int code = wait_for(launch, 240);
  const std::string out = read_file(launch.log);
  CHECK_MESSAGE(code == 0, out);
  CHECK(out.find("verify: 8 nodes") != std::string::npos);
  CHECK(out.find("all equal") != std::string::npos);
  const auto s = summaries(c.dir, kNodes);
  for (int r = 0; r < kNodes; ++r) CHECK(text(s.at(r), "departed") == "");
}

TEST_CASE("rejoin: qgossip launch --churn kills one node and stops another while they run; both come back") {
  temp_dir tmp;
  cluster c = make(tmp, "churned", 30, 2000);
  const fs::path scenario = tmp.path / "churn.yaml";
  write_file(scenario,
             "churn:\n"
             "  - {rank: 3, at_s: 4, down_s: 1.5, how: kill}\n"
             "  - {rank: 6, at_s: 9, down_s: 3, how: stop}\n");  // longer than the heartbeat: it is dropped
  background_process launch =
      start_qgossip({"launch", c.cfg.string(), "--churn", scenario.string(), "--plain", "--no-plot"}, c.logs / "launch.log");
  const int code = wait_for(launch, 240);
  const std::string out = read_file(launch.log);
  CHECK_MESSAGE(code == 0, out);
  CHECK(out.find("churn: node 3 killed (SIGKILL) at 4 s, for 1.5 s") != std::string::npos);
  CHECK(out.find("churn: node 6 stopped (SIGSTOP) at 9 s, for 3 s") != std::string::npos);
  CHECK(out.find("churn: node 6 continued (SIGCONT)") != std::string::npos);
  CHECK(out.find("node 3: rejoined the run") != std::string::npos);
  CHECK(out.find("node 6: rejoined the run") != std::string::npos);
  CHECK(out.find("verify: 8 nodes, 16 public_copy copies checked against their owners: all equal") != std::string::npos);
  const auto s = summaries(c.dir, kNodes);
  for (int r = 0; r < kNodes; ++r) {
    CHECK(text(s.at(r), "status") == "ok");
    CHECK(text(s.at(r), "departed") == "");
  }
  CHECK(text(s.at(3), "rejoins").find("this node from round") != std::string::npos);
  CHECK(text(s.at(2), "rejoins").find("3 from round") != std::string::npos);
}
