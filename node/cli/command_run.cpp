#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
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
}

std::string rank_range(int n) {
  return "the rank must be in 0.." + std::to_string(n - 1) + " (the topology has " + std::to_string(n) +
         (n == 1 ? " node)" : " nodes)");
}

}  // namespace

void add_run_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "Run one node of a topology (what the launcher, ssh or srun start on each host)");
  cmd->footer(
      "The rank comes from --rank, else from SLURM_PROCID (so `srun qgossip run --config RUN.yaml` works).\n"
      "Writes runs/<name>/node-<rank>.csv (+ .json summary, .log via the launcher); rank 0 writes run.json.\n"
      "stdout carries one JSON event per line for the launcher; human-readable logs go to stderr.\n"
      "Exit: 0 ok, 1 run-time failure (e.g. a silent neighbour), 2 bad config, 3 diverged, 130 interrupted.");
  struct options {
    std::string config;
    long long rank = 0;
    std::vector<std::string> sets;
    bool quiet = false;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config,-c", opt->config, "Run YAML (see configs/ and docs/config.md)")->required();
  CLI::Option* rank_option =
      cmd->add_option("--rank,-r", opt->rank, "This node's rank in the topology (default: $SLURM_PROCID)");
  cmd->add_option("--set", opt->sets, "Override a config value, e.g. --set train.lr=0.05 (repeatable)");
  cmd->add_flag("--no-events", opt->quiet, "Do not print JSON progress events on stdout");
  cmd->callback([opt, exit_code, rank_option] {
    install_stop_handlers();
    // Where the rank comes from, as the user wrote it (for the message when it is out of range).
    long long rank = opt->rank;
    std::string given = "--rank " + std::to_string(rank);
    if (rank_option->count() == 0) {
      const char* slurm = std::getenv("SLURM_PROCID");
      if (!slurm) throw config_error("run: give --rank R (or run under Slurm, which sets SLURM_PROCID)");
      char* end = nullptr;
      errno = 0;
      rank = std::strtoll(slurm, &end, 10);
      if (*slurm == '\0' || *end != '\0' || errno == ERANGE)
        throw config_error(std::string("SLURM_PROCID='") + slurm + "' is not a rank (a whole number)");
      given = std::string("SLURM_PROCID=") + slurm;
    }
    run_config config = load_run_config(opt->config, opt->sets);
    if (rank < 0 || rank >= config.topology.n)
      throw config_error(given + ": " + rank_range(config.topology.n));
    node_run_options o;
    o.progress_json = !opt->quiet;
    *exit_code = static_cast<int>(run_node(config, static_cast<int>(rank), o));
  });
}

}  // namespace qgossip
