#include <cstdio>
#include <string>

#include "node/cli/commands.hpp"
#include "node/log/run_dir.hpp"
#include "node/log/run_summary.hpp"

namespace qgossip {

void add_logs_command(CLI::App& app, int* exit_code) {
  auto* cmd =
      app.add_subcommand("logs", "Summarize a run directory: per-node table, spread across nodes, warnings");
  log_thresholds th;
  char footer[1024];
  std::snprintf(
      footer, sizeof footer,
      "Reads runs/<name>/run.json, node-<rank>.json (the summaries) and node-<rank>.csv (for nodes without "
      "a\n"
      "summary: a run in progress or a node that crashed; node-<rank>.log then gives its last words).\n"
      "Per node: status, rounds, final train/test loss, test accuracy, MB sent/received, mean bytes sent "
      "per\n"
      "round, time split compute / codec / comm (s and %% of their sum), rejected messages.\n"
      "WARNINGS: a node that failed, diverged, was interrupted or wrote no summary; fewer rounds than "
      "another\n"
      "node; wall time above %.2gx the median (and by > %.3g s); compute+codec time above %.2gx the median\n"
      "(and by > %.3g s: the straggler its neighbours wait for); test accuracy %.3g or more below the "
      "median.\n"
      "Exit 0 (warnings included), 1 when RUN_DIR holds no run.",
      th.wall_ratio, th.wall_min_excess_s, th.work_ratio, th.work_min_excess_s, th.accuracy_gap);
  cmd->footer(footer);
  struct options {
    std::string dir;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("RUN_DIR", opt->dir, "Run directory (runs/<name>)")->required();
  cmd->add_flag("--json", opt->json, "Print the same content as one JSON object (for scripts)");
  cmd->callback([opt, exit_code] {
    std::string why;
    auto summary = read_run_summary(read_run_dir(opt->dir), &why);
    if (!summary) {
      std::fprintf(stderr, "qgossip logs: %s\n", why.c_str());
      *exit_code = 1;
      return;
    }
    const std::string text = opt->json ? run_summary_json(*summary) + "\n" : format_run_summary(*summary);
    std::fwrite(text.data(), 1, text.size(), stdout);
    *exit_code = 0;
  });
}

}  // namespace qgossip
