// Checkpoints and exact resume on real processes (docs/checkpoints.md): a run whose nodes are all
// SIGKILLed at random moments, several times (some of them while a checkpoint is being written),
// and resumed each time with `qgossip launch --resume`, ends with the same model and replica
// hashes as the same run never stopped, and its CSV logs have the same rows (every column that
// does not depend on timing), none missing or repeated. Also for codec sender state (DCD with MCGQ's
// accumulator) and the local and outer optimizers' state (CHOCO with H = 4 and an outer Nesterov).
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

struct run_spec {
  int n = 6;
  std::string algorithm = "dcd";
  std::string compressor = "{name: qsgd, bits: 4, bucket: 64}";
  std::string extra_train;
  int checkpoint_every = 2;
  int epochs = 3;
};

std::string config(const std::string& name, const run_spec& s, const fs::path& out, int base_port) {
  std::ostringstream y;
  y << "name: " << name << "\nseed: 11\n"
    << "topology: {graph: ring, n: " << s.n << ", base_port: " << base_port << "}\n"
    << "algorithm: " << s.algorithm << "\ncompressor: " << s.compressor << "\n"
    << "model: {kind: mlp, hidden: [16]}\n"
    << "data:\n  dataset: synthetic\n  standardize: false\n"
    << "  synthetic: {train: " << 800 * s.n << ", test: 500, dim: 16, classes: 4, noise: 1.0}\n"
    << "train: {epochs: " << s.epochs << ", batch: 16, lr: 0.05, log_every: 3, eval_every: 1, eval_examples: 200, "
    << "checkpoint_every: " << s.checkpoint_every << s.extra_train << "}\n"
    << "network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 2}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

// The pids of the processes whose command line mentions `needle` (the test's config path).
std::vector<int> pids_mentioning(const std::string& needle) {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (!proc) return pids;
  while (dirent* e = readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmdline = read_file(fs::path("/proc") / e->d_name / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

// True when some node's checkpoint directory holds an unfinished write (a .tmp).
bool write_under_way(const fs::path& run_dir) {
  std::error_code ec;
  for (const auto& d : fs::recursive_directory_iterator(run_dir / "checkpoints", ec))
    if (d.path().extension() == ".tmp") return true;
  return false;
}

// The rows of a node's CSV without the columns that measure time (wall_s, compute_s, codec_s,
// comm_s, transfer_s, rounds_per_s) or depend on it (bytes_recv, round_bytes_recv: a neighbour's message of the
// next round is counted in the round during which it arrived, even in runs never stopped): what an
// interrupted run must reproduce exactly.
std::vector<std::string> deterministic_rows(const fs::path& csv) {
  std::vector<std::string> rows;
  std::istringstream in(read_file(csv));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    std::string kept;
    for (std::size_t i = 0; i < cells.size(); ++i)
      if (i != 2 && i != 8 && i != 10 && i != 11 && i != 12 && i != 13 && i != 19 && i != 22) kept += cells[i] + ",";
    rows.push_back(kept);
  }
  return rows;
}

struct kill_report {
  int kills = 0;
  int mid_write = 0;       // kills that left a .tmp: a checkpoint was being written
  int finished_early = 0;  // launches that completed before their kill came
};

// Runs `name` to the end through `kills` launches each SIGKILLed with all of its nodes at a random
// moment (every other one while a checkpoint is being written), each but the first with --resume,
// then a last --resume launch that must finish. Returns what happened.
kill_report run_with_kills(const temp_dir& tmp, const std::string& name, const run_spec& spec, int kills,
                           std::mt19937& rng) {
  const fs::path cfg = tmp.path / (name + ".yaml");
  const fs::path run_dir = tmp.path / "runs" / name;
  write_file(cfg, config(name, spec, tmp.path / "runs", free_port_range(spec.n)));
  kill_report report;
  ::setenv("QGOSSIP_TEST_CHECKPOINT_PAUSE_MS", "30", 1);
  for (int k = 0; k < kills; ++k) {
    std::vector<std::string> args{"launch", cfg.string(), "--plain", "--no-plot"};
    if (k > 0) args.push_back("--resume");
    std::fflush(nullptr);  // a forked child must not print this process's buffered output again
    background_process launcher = start_qgossip(args, tmp.path / (name + "-launch-" + std::to_string(k) + ".log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(400, 1500)(rng)));
    if (k % 2 == 1) {  // wait for a checkpoint write to be under way (it pauses 30 ms after its fsync)
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!write_under_way(run_dir) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int pid : pids_mentioning(cfg.string())) ::kill(pid, SIGKILL);
    const int code = wait_for(launcher, 30);
    const std::string log = read_file(launcher.log);
    INFO(log);
    if (code == 0) {
      ++report.finished_early;
      break;
    }
    CHECK(code == 128 + SIGKILL);
    if (k > 0) CHECK(log.find("resuming every node from round") != std::string::npos);
    ++report.kills;
    if (write_under_way(run_dir)) ++report.mid_write;
    for (int i = 0; i < 300 && !pids_mentioning(cfg.string()).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(pids_mentioning(cfg.string()).empty());
  }
  ::unsetenv("QGOSSIP_TEST_CHECKPOINT_PAUSE_MS");
  if (report.finished_early == 0) {
    const process_result r = run_qgossip({"launch", cfg.string(), "--plain", "--no-plot", "--resume"});
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("resuming every node from round") != std::string::npos);
  }
  return report;
}

// Runs `name` once, never stopped.
void run_through(const temp_dir& tmp, const std::string& name, const run_spec& spec) {
  const fs::path cfg = tmp.path / (name + ".yaml");
  write_file(cfg, config(name, spec, tmp.path / "runs", free_port_range(spec.n)));
  const process_result r = run_qgossip({"launch", cfg.string(), "--plain", "--no-plot"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// Same hashes (model and every copy) and the same deterministic CSV rows, node by node.
void check_same_run(const temp_dir& tmp, const std::string& a, const std::string& b, int n) {
  const auto sa = summaries(tmp.path / "runs" / a, n), sb = summaries(tmp.path / "runs" / b, n);
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(text(sb.at(r), "status") == "ok");
    CHECK(text(sb.at(r), "model_hash") == text(sa.at(r), "model_hash"));
    for (int j = 0; j < n; ++j)
      if (sa.at(r).contains("copy_" + std::to_string(j)))
        CHECK(text(sb.at(r), "copy_" + std::to_string(j)) == text(sa.at(r), "copy_" + std::to_string(j)));
    const std::string csv = "node-" + std::to_string(r) + ".csv";
    const auto rows_a = deterministic_rows(tmp.path / "runs" / a / csv);
    const auto rows_b = deterministic_rows(tmp.path / "runs" / b / csv);
    CHECK(rows_a.size() > 10);
    CHECK(rows_b.size() == rows_a.size());
    for (std::size_t i = 0; i < std::min(rows_a.size(), rows_b.size()); ++i)
      if (rows_b[i] != rows_a[i]) {
        CAPTURE(i);
        CHECK(rows_b[i] == rows_a[i]);  // the first row that differs
        break;
      }
  }
}

}  // namespace

TEST_CASE("all nodes SIGKILLed at random moments, resumed each time: the same hashes and CSV rows") {
  temp_dir tmp;
  std::mt19937 rng(std::random_device{}());
  run_spec spec;  // a ring of 6 (diameter 3, checkpoints every 2 rounds: each node keeps 3)
  spec.extra_train = ", momentum: 0.9, consensus_every: 7";
  spec.epochs = 8;
  run_through(tmp, "straight", spec);
  const kill_report k = run_with_kills(tmp, "killed", spec, 6, rng);
  MESSAGE("kills: " << k.kills << ", of which during a checkpoint write: " << k.mid_write
                    << ", launches that finished first: " << k.finished_early);
  CHECK(k.kills >= 4);
  CHECK(k.mid_write >= 1);
  check_same_run(tmp, "straight", "killed", spec.n);
}

TEST_CASE("resume keeps codec sender state (DCD + MCGQ accumulate) and local/outer optimizer state (CHOCO, H = 4)") {
  temp_dir tmp;
  std::mt19937 rng(std::random_device{}());
  run_spec mcgq;
  mcgq.n = 4;
  mcgq.compressor = "{name: mcgq, variant: accumulate, dynamic: true}";
  mcgq.checkpoint_every = 3;
  run_through(tmp, "mcgq-straight", mcgq);
  (void)run_with_kills(tmp, "mcgq-killed", mcgq, 3, rng);
  check_same_run(tmp, "mcgq-straight", "mcgq-killed", mcgq.n);

  run_spec choco;
  choco.n = 4;
  choco.algorithm = "{name: choco, consensus_step: 0.5}";
  choco.compressor = "{name: topk, ratio: 0.25}";
  choco.checkpoint_every = 3;
  choco.extra_train = ", local_steps: 4, momentum: 0.5, outer: {lr: 0.7, momentum: 0.9}";
  run_through(tmp, "choco-straight", choco);
  (void)run_with_kills(tmp, "choco-killed", choco, 3, rng);
  check_same_run(tmp, "choco-straight", "choco-killed", choco.n);

  // Overlapped rounds (train.overlap): a checkpoint round lands at once, so what it saves is what
  // the straight run's next round starts from.
  run_spec overlapped = choco;
  overlapped.extra_train = ", local_steps: 4, momentum: 0.5, overlap: true";
  run_through(tmp, "overlap-straight", overlapped);
  (void)run_with_kills(tmp, "overlap-killed", overlapped, 3, rng);
  check_same_run(tmp, "overlap-straight", "overlap-killed", overlapped.n);
}

TEST_CASE("qgossip run --resume refuses a run without checkpoints; launch --resume of another config names it") {
  temp_dir tmp;
  run_spec spec;
  spec.n = 2;
  spec.checkpoint_every = 0;
  const fs::path cfg = tmp.path / "none.yaml";
  write_file(cfg, config("none", spec, tmp.path / "runs", free_port_range(2)));
  process_result r = run_qgossip({"run", "--config", cfg.string(), "--rank", "0", "--resume"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("train.checkpoint_every is 0") != std::string::npos);
  r = run_qgossip({"run", "--config", cfg.string(), "--rank", "0", "--resume-round", "3"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--resume-round R needs --resume") != std::string::npos);

  spec.checkpoint_every = 5;
  const fs::path cfg2 = tmp.path / "some.yaml";
  write_file(cfg2, config("some", spec, tmp.path / "runs", free_port_range(2)));
  REQUIRE(run_qgossip({"launch", cfg2.string(), "--plain", "--no-plot"}).exit_code == 0);
  r = run_qgossip({"launch", cfg2.string(), "--plain", "--no-plot", "--resume", "--set", "train.lr=0.01"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("another configuration") != std::string::npos);

  // qgossip checkpoints: the rounds one rank holds here (what train.sbatch asks every task on
  // several hosts); another config's checkpoints are not this run's.
  r = run_qgossip({"checkpoints", "--config", cfg2.string(), "--rank", "1"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  REQUIRE(r.output.rfind("1: ", 0) == 0);
  std::istringstream listed(r.output.substr(3));
  int rounds = 0;
  for (std::uint64_t round = 0; listed >> round; ++rounds) CHECK(round % 5 == 0);  // checkpoint_every 5
  CHECK(rounds >= 2);  // the keep count's newest (the older ones are pruned)
  r = run_qgossip({"checkpoints", "--config", cfg2.string(), "--rank", "1", "--set", "train.lr=0.01"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("1:\n") != std::string::npos);  // none of this (other) run
  r = run_qgossip({"checkpoints", "--config", cfg2.string(), "--rank", "2"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("rank 2: the topology's ranks are 0..1") != std::string::npos);
}
