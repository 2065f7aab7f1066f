#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/cli/host_checks.hpp"
#include "node/config/config.hpp"
#include "node/run/node_runner.hpp"

namespace qgossip {

namespace {

extern "C" void on_stop_signal(int) { request_stop(); }

// SIGINT and SIGTERM only set the stop flag: the node ends at its next check (a round, a wait of
// the exchange, a step of the start-up) with a summary, exit 130. Installed before anything else
// the command does, so that a signal during the config load or the data load is not the default
// action (death without a summary). SA_RESTART (as std::signal had) keeps a write to the
// launcher's pipe whole; the transport's waits are poll()s, which a signal interrupts regardless.
void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  // SIGUSR1 (a job's time limit near: stop after a round agreed with the others, checkpointed) is
  // blocked in every thread, which inherit the mask from this one, and taken by a thread of its own:
  // a handler would interrupt the transport's waits (EINTR), and the round with them.
  sigset_t halt;
  sigemptyset(&halt);
  sigaddset(&halt, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &halt, nullptr);
  std::thread([halt] {
    for (int signal = 0;;)
      if (::sigwait(&halt, &signal) == 0) request_halt();
  }).detach();
}

std::string rank_range(int n) {
  return "the rank must be in 0.." + std::to_string(n - 1) + " (the topology has " + std::to_string(n) +
         (n == 1 ? " node)" : " nodes)");
}

// QGOSSIP_TEST_CHECKPOINT_PAUSE_MS (a test knob, node_run_options::checkpoint_pause_for_testing):
// milliseconds, a whole number in 0..60000.
std::chrono::milliseconds test_checkpoint_pause() {
  const char* text = std::getenv("QGOSSIP_TEST_CHECKPOINT_PAUSE_MS");
  if (!text) return std::chrono::milliseconds(0);
  char* end = nullptr;
  errno = 0;
  const long long ms = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno == ERANGE || ms < 0 || ms > 60000)
    throw config_error(std::string("QGOSSIP_TEST_CHECKPOINT_PAUSE_MS='") + text +
                       "' is not a whole number of milliseconds in 0..60000");
  return std::chrono::milliseconds(ms);
}

// With nodes: {from: slurm} the loader put rank r on the host of the step's task r, assuming block
// distribution. slurmd names the node this task runs on (SLURMD_NODENAME): on a mismatch (a host
// file, a placement Slurm did not report) the neighbours would connect to another node, so refuse.
void check_slurm_node(const run_config& c, long long rank) {
  if (!c.topology.nodes_from) return;
  const char* here = std::getenv("SLURMD_NODENAME");
  if (!here) return;
  const std::string& host = c.topology.nodes[static_cast<std::size_t>(rank)].host;
  if (host == here) return;
  throw config_error("rank " + std::to_string(rank) + " runs on " + here + " (SLURMD_NODENAME), but topology.nodes: " +
                     "{from: slurm} puts task " + std::to_string(rank) + " on " + host + " (" + c.topology.nodes_origin +
                     ", block distribution): run srun with --distribution=block");
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "Run one node of a topology (what the launcher, ssh or srun start on each host)");
  cmd->footer(
      "The rank comes from --rank, else from SLURM_PROCID (so `srun qgossip run --config RUN.yaml` works).\n"
      "With topology.nodes: {from: slurm, base_port: P} rank r listens on the host of the step's task r, port\n"
      "P + r (docs/slurm.md); a task whose SLURMD_NODENAME is not that host exits 2.\n"
      "Writes runs/<name>/node-<rank>.csv (+ .json summary, .log via the launcher); rank 0 writes run.json.\n"
      "stdout carries one JSON event per line for the launcher; human-readable logs go to stderr.\n"
      "--resume continues a run with train.checkpoint_every from its checkpoints (docs/checkpoints.md).\n"
      "Exit: 0 ok, 1 run-time failure (e.g. a silent neighbour), 2 bad config, 3 diverged, 130 interrupted.");
  struct options {
    std::string config;
    long long rank = 0;
    std::vector<std::string> sets;
    bool quiet = false;
    bool resume = false;
    long long resume_round = -1;
    std::string scenario;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config,-c", opt->config, "Run YAML (see configs/ and docs/config.md)")->required();
  CLI::Option* rank_option =
      cmd->add_option("--rank,-r", opt->rank, "This node's rank in the topology (default: $SLURM_PROCID)");
  cmd->add_option("--set", opt->sets, "Override a config value, e.g. --set train.lr=0.05 (repeatable)");
  cmd->add_flag("--no-events", opt->quiet, "Do not print JSON progress events on stdout");
  cmd->add_flag("--resume", opt->resume,
                "Continue from the newest round of which every node has a checkpoint (train.checkpoint_every; "
                "every rank's runs/<name>/checkpoints/node-<r> must be visible here), with the same config");
  CLI::Option* round_option =
      cmd->add_option("--resume-round", opt->resume_round,
                      "With --resume: continue from this round's checkpoint (the newest round every node has; "
                      "0 = from the start), for nodes on several hosts");
  cmd->add_option(
      "--scenario", opt->scenario,
      "A scenario file whose hostile: list names this rank: the node sends that attack instead of its "
      "honest messages (docs/security.md, \"Attacks as experiment input\"); an unlisted rank is honest");
  cmd->callback([opt, exit_code, rank_option, round_option] {
    install_stop_handlers();
    // Where the rank comes from, as the user wrote it (for the message when it is out of range).
    long long rank = opt->rank;
    std::string given = "--rank " + std::to_string(rank);
    if (rank_option->count() == 0) {
      const std::optional<long long> slurm = slurm_procid(process_environment());
      if (!slurm) throw config_error("run: give --rank R (or run under Slurm, which sets SLURM_PROCID)");
      rank = *slurm;
      given = "SLURM_PROCID=" + std::to_string(rank);
    }
    run_config config = load_run_config(opt->config, opt->sets);
    if (const auto group = group_for_run_nodes(config)) throw config_error(*group);
    if (rank < 0 || rank >= config.topology.n)
      throw config_error(given + ": " + rank_range(config.topology.n));
    check_slurm_node(config, rank);
    node_run_options o;
    o.progress_json = !opt->quiet;
    o.resume = opt->resume;
    if (round_option->count() > 0) {
      if (!opt->resume) throw config_error("run: --resume-round R needs --resume");
      if (opt->resume_round < 0)
        throw config_error("run: --resume-round " + std::to_string(opt->resume_round) + ": a round is >= 0");
      o.resume_round = static_cast<std::uint64_t>(opt->resume_round);
    }
    o.scenario = opt->scenario;  // its hostile: list is read and checked at the node's set-up
    o.checkpoint_pause_for_testing = test_checkpoint_pause();
    *exit_code = static_cast<int>(run_node(config, static_cast<int>(rank), o));
  });
}

}  // namespace qgossip
