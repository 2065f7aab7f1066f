#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/run/node_runner.hpp"

namespace qgossip {

namespace {

void on_stop_signal(int) { request_stop(); }

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
    int rank = -1;
    std::vector<std::string> sets;
    bool quiet = false;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config,-c", opt->config, "Run YAML (see configs/ and docs/config.md)")->required();
  cmd->add_option("--rank,-r", opt->rank, "This node's rank in the topology (default: $SLURM_PROCID)");
  cmd->add_option("--set", opt->sets, "Override a config value, e.g. --set train.lr=0.05 (repeatable)");
  cmd->add_flag("--no-events", opt->quiet, "Do not print JSON progress events on stdout");
  cmd->callback([opt, exit_code] {
    int rank = opt->rank;
    if (rank < 0) {
      const char* slurm = std::getenv("SLURM_PROCID");
      if (!slurm) throw config_error("run: give --rank R (or run under Slurm, which sets SLURM_PROCID)");
      char* end = nullptr;
      long v = std::strtol(slurm, &end, 10);
      if (*slurm == '\0' || *end != '\0' || v < 0) throw config_error(std::string("SLURM_PROCID='") + slurm + "' is not a rank");
      rank = static_cast<int>(v);
    }
    run_config config = load_run_config(opt->config, opt->sets);
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    node_run_options o;
    o.progress_json = !opt->quiet;
    *exit_code = static_cast<int>(run_node(config, rank, o));
  });
}

}  // namespace qgossip
