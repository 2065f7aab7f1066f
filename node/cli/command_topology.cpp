#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/json.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/config/topology_builder.hpp"
#include "node/config/yaml_reader.hpp"

namespace qgossip {

namespace {

// The topology section in the config's own format: `--set topology=<this>` (JSON is YAML) gives a
// run exactly this topology, whatever file it came from. scripts/cluster.sh uses it to move nodes.
nlohmann::ordered_json topology_section(const topology_config& t) {
  nlohmann::ordered_json j = {{"graph", to_text(t.graph)}, {"n", t.n}};
  if (t.graph == graph_kind::torus) {
    j["rows"] = t.rows;
    j["cols"] = t.cols;
  }
  if (t.graph == graph_kind::hypercube) j["dim"] = t.dim;
  if (!t.edges.empty()) j["edges"] = t.edges;  // [[a, b], ...]
  j["weights"] = to_text(t.weights);
  if (!t.matrix.empty()) j["matrix"] = t.matrix;
  j["nodes"] = nlohmann::ordered_json::array();
  for (const auto& a : t.nodes) j["nodes"].push_back({{"host", a.host}, {"port", a.port}, {"gpu", a.gpu}});
  if (t.group_size > 0) j["group_size"] = t.group_size;  // the processes of a node (docs/python.md, "Groups")
  return j;
}

std::string report_json(const std::string& file, const topology_config& tc, const topology_report& r) {
  nlohmann::ordered_json problems = nlohmann::ordered_json::array();
  for (const auto& p : r.problems) problems.push_back(p.message);
  const nlohmann::ordered_json j = {{"file", file},
                                    {"n", tc.n},
                                    {"graph", to_text(tc.graph)},
                                    {"weights", to_text(tc.weights)},
                                    {"valid", r.problems.empty()},
                                    {"edges", r.edges},
                                    {"min_degree", r.min_degree},
                                    {"max_degree", r.max_degree},
                                    {"rho", r.rho},
                                    {"spectral_gap", r.spectral_gap},
                                    {"dcd_alpha2_max", r.dcd_alpha2_max},
                                    {"problems", std::move(problems)},
                                    {"topology", topology_section(tc)}};
  return json_text(j) + "\n";
}

}  // namespace

void add_topology_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("topology", "Validate a topology and report its spectral gap and the DCD-PSGD bound");
  cmd->footer(
      "FILE is a topology YAML (configs/topologies/) or a run YAML with a topology section.\n"
      "Checks: connected, symmetric, non-negative, rows and columns summing to 1 (1e-9), zero off the edges.\n"
      "Reports rho = max(|lambda_2|, |lambda_n|) of W and the largest compression error alpha^2 for which\n"
      "DCD-PSGD's condition (1-rho)^2 - 4 mu^2 alpha^2 > 0 holds. Exit 0 when valid, 2 when not.\n"
      "--json prints one JSON object instead, for scripts: n, graph, weights, valid, edges, min_degree,\n"
      "max_degree, rho, spectral_gap, dcd_alpha2_max (null when unbounded), problems (messages), and\n"
      "topology: the resolved section with every node's host, port and gpu, in the config's format\n"
      "(`--set topology=<it>` reproduces it). Example: qgossip topology run.yaml --json | jq .n");
  struct options {
    std::string file;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto opt = std::make_shared<options>();
  cmd->add_option("FILE", opt->file, "Topology or run YAML")->required();
  cmd->add_option("--set", opt->sets,
                  "Override a value of the run YAML first, as qgossip launch does, e.g. --set topology.n=16");
  cmd->add_flag("--json", opt->json, "Print the report as one JSON object (see below)");
  cmd->callback([opt, exit_code] {
    YAML::Node root = load_yaml_file(opt->file, "a topology or run YAML file");
    const bool is_run = root.IsMap() && root["topology"];
    if (!is_run && !opt->sets.empty())
      throw config_error(opt->file + ": --set applies to a run YAML (with a topology section), not to a topology YAML");
    topology_config tc = is_run ? load_run_config(opt->file, opt->sets).topology : load_topology_config(opt->file);
    topology t = build_topology(tc, /*validate=*/false);
    const topology_report report = analyze(t);
    if (opt->json) {
      std::fputs(report_json(opt->file, tc, report).c_str(), stdout);
    } else {
      std::string header = "topology " + opt->file + ": " + to_text(tc.graph) + ", n = " + std::to_string(tc.n) +
                           ", weights " + to_text(tc.weights) + "\n";
      std::fputs(header.c_str(), stdout);
      std::fputs(format_report(report).c_str(), stdout);
    }
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
