// `qgossip keys`: the CURVE keypairs of a run's nodes, for runs over several hosts
// (docs/security.md). `qgossip launch` makes them by itself for a single-host run.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

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
      "ones (what `qgossip launch` does, and configs/slurm/train.sbatch once per job). See docs/security.md.");
  struct options {
    std::string config;
    std::vector<std::string> sets;
    std::string out;
    bool force = false;
    bool missing = false;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("--config", opt->config, "Run YAML (its topology says how many nodes)")->required();
  cmd->add_option("--set", opt->sets, "Override a config value, e.g. --set topology.n=16");
  cmd->add_option("--out", opt->out, "Directory to write the keys into (default: the run's keys_dir)");
  auto* force = cmd->add_flag("--force", opt->force, "Replace existing keys");
  cmd->add_flag("--missing", opt->missing,
                "Make only the ranks' missing keys, keep the others (no error); nothing with network.security: none")
      ->excludes(force);
  cmd->callback([opt, exit_code] {
    const run_config c = load_run_config(opt->config, opt->sets);
    const std::filesystem::path dir = opt->out.empty() ? keys_directory(c) : std::filesystem::path(opt->out);
    if (opt->missing) {
      if (c.network.security != security_kind::curve) {
        std::printf("%s sets network.security: %s: no keys needed, none made\n", opt->config.c_str(),
                    to_text(c.network.security).c_str());
        *exit_code = 0;
        return;
      }
      const int made = ensure_run_keys(dir, c.topology.n);
      std::printf("%s/: %d of %d CURVE keypairs were missing and were made\n", dir.c_str(), made, c.topology.n);
      *exit_code = 0;
      return;
    }
    write_run_keys(dir, c.topology.n, opt->force);
    std::printf("wrote %d CURVE keypairs to %s/: node-<r>.key (secret, mode 0600) and node-<r>.pub\n", c.topology.n,
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
