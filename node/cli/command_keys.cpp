// `qgossip keys`: the CURVE keypairs of a run's nodes, for runs over several hosts
// (docs/security.md). `qgossip launch` makes them by itself for a single-host run.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/run/node_network.hpp"

namespace qgossip {

void add_keys_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("keys", "Generate the CURVE keypairs of a run's nodes (for runs over several hosts)");
  cmd->footer(
      "Writes node-<r>.key (rank r's secret key, mode 0600) and node-<r>.pub (its public key) for every rank\n"
      "of the topology into --out, by default the run's network.keys_dir (runs/<name>/keys). Copy node-<r>.key\n"
      "to rank r's host only and every .pub to every host, into the keys_dir the nodes read. A node admits\n"
      "connections only from its neighbours' keys. `qgossip launch` generates missing keys by itself.\n"
      "Existing keys are kept (an error) unless --force replaces them all, or --missing makes only the missing\n"
      "ones (what `qgossip launch` does, and configs/slurm/train.sbatch once per job). With --ranks, only the\n"
      "ranks listed: a host makes its own ranks' keys and shares only their .pub (train.sbatch on several\n"
      "hosts). --print-dir prints the keys directory and makes nothing. See docs/security.md.");
  struct options {
    std::string config;
    std::vector<std::string> sets;
    std::string out;
    bool force = false;
    bool missing = false;
    bool print_dir = false;
    std::vector<int> ranks;  // empty: every rank
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config", opt->config, "Run YAML (its topology says how many nodes)")->required();
  cmd->add_option("--set", opt->sets, "Override a config value, e.g. --set topology.n=16");
  cmd->add_option("--out", opt->out, "Directory to write the keys into (default: the run's keys_dir)");
  auto* force = cmd->add_flag("--force", opt->force, "Replace existing keys");
  cmd->add_flag("--missing", opt->missing,
                "Make only the ranks' missing keys, keep the others (no error); nothing with network.security: none")
      ->excludes(force);
  cmd->add_option("--ranks", opt->ranks, "Only these ranks' keys, e.g. --ranks 2,3")->delimiter(',')->check(CLI::NonNegativeNumber);
  cmd->add_flag("--print-dir", opt->print_dir,
                "Print the keys directory (the run's keys_dir, or --out) and make nothing; nothing with "
                "network.security: none");
  cmd->callback([opt, exit_code] {
    const run_config c = load_run_config(opt->config, opt->sets);
    const std::filesystem::path dir = opt->out.empty() ? keys_directory(c) : std::filesystem::path(opt->out);
    if (opt->print_dir) {  // nothing when the run needs no keys
      if (c.network.security == security_kind::curve) std::printf("%s\n", dir.c_str());
      *exit_code = 0;
      return;
    }
    for (int r : opt->ranks)
      if (r >= c.topology.n)
        throw config_error("--ranks " + std::to_string(r) + ": the topology's ranks are 0.." + std::to_string(c.topology.n - 1));
    std::vector<int> ranks = opt->ranks;  // the ranks whose keys are made: those listed, else every one
    if (ranks.empty()) {
      ranks.resize(static_cast<std::size_t>(c.topology.n));
      std::iota(ranks.begin(), ranks.end(), 0);
    }
    const int count = static_cast<int>(ranks.size());
    if (opt->missing) {
      if (c.network.security != security_kind::curve) {
        std::printf("%s sets network.security: %s: no keys needed, none made\n", opt->config.c_str(),
                    to_text(c.network.security).c_str());
        *exit_code = 0;
        return;
      }
      const int made = ensure_run_keys(dir, ranks);
      std::printf("%s/: %d of %d CURVE keypairs were missing and were made\n", dir.c_str(), made, count);
      *exit_code = 0;
      return;
    }
    write_run_keys(dir, ranks, opt->force);
    std::printf("wrote %d CURVE keypairs to %s/: node-<r>.key (secret, mode 0600) and node-<r>.pub\n", count,
                dir.c_str());
    std::printf("copy node-<r>.key to rank r's host only, and every node-*.pub to every host, into the directory "
                "network.keys_dir names there (default <output.dir>/<name>/keys)\n");
    if (c.network.security != security_kind::curve)
      std::printf("note: %s sets network.security: %s, so its nodes will not use these keys\n", opt->config.c_str(),
                  to_text(c.network.security).c_str());
    *exit_code = 0;
  });
}

}  // namespace qgossip
