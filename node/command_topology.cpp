#include <cstdio>
#include <string>

#include "core/errors.hpp"
#include "node/commands.hpp"
#include "node/config.hpp"
#include "node/topology_builder.hpp"
#include "node/yaml_reader.hpp"

namespace qgossip {

void add_topology_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("topology", "Validate a topology and report its spectral gap and the DCD-PSGD bound");
  cmd->footer(
      "FILE is a topology YAML (configs/topologies/) or a run YAML with a topology section.\n"
      "Checks: connected, symmetric, non-negative, rows and columns summing to 1 (1e-9), zero off the edges.\n"
      "Reports rho = max(|lambda_2|, |lambda_n|) of W and the largest compression error alpha^2 for which\n"
      "DCD-PSGD's condition (1-rho)^2 - 4 mu^2 alpha^2 > 0 holds. Exit 0 when valid, 2 when not.");
  auto file = std::make_shared<std::string>();
  cmd->add_option("FILE", *file, "Topology or run YAML")->required();
  cmd->callback([file, exit_code] {
    YAML::Node root = load_yaml_file(*file);
    topology_config tc = root.IsMap() && root["topology"] ? load_run_config(*file).topology : load_topology_config(*file);
    std::string header = "topology " + *file + ": " + tc.graph + ", n = " + std::to_string(tc.n) + ", weights " +
                         tc.weights + "\n";
    std::fputs(header.c_str(), stdout);
    topology t = build_topology(tc, /*validate=*/false);
    std::fputs(format_report(analyze(t)).c_str(), stdout);
    try {
      t.validate();
      *exit_code = 0;
    } catch (const config_error& e) {  // the report above shows every failed check
      std::fprintf(stderr, "qgossip: error: %s: %s\n", tc.file.c_str(), e.what());
      *exit_code = 2;
    }
  });
}

}  // namespace qgossip
