#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/log/json_writer.hpp"
#include "node/config/topology_builder.hpp"
#include "node/config/yaml_reader.hpp"

namespace qgossip {

namespace {

// The topology section in the config's own format: `--set topology=<this>` (JSON is YAML) gives a
// run exactly this topology, whatever file it came from. scripts/cluster.sh uses it to move nodes.
void write_topology_section(json_writer& j, const topology_config& t) {
  j.begin_object().field("graph", to_text(t.graph)).field("n", t.n);
  if (t.graph == graph_kind::torus) j.field("rows", t.rows).field("cols", t.cols);
  if (t.graph == graph_kind::hypercube) j.field("dim", t.dim);
  if (!t.edges.empty()) {
    j.key("edges").begin_array();
    for (auto [a, b] : t.edges) j.begin_array().value(a).value(b).end_array();
    j.end_array();
  }
  j.field("weights", to_text(t.weights));
  if (!t.matrix.empty()) {
    j.key("matrix").begin_array();
    for (const auto& row : t.matrix) {
      j.begin_array();
      for (double w : row) j.value(w);
      j.end_array();
    }
    j.end_array();
  }
  j.key("nodes").begin_array();
  for (const auto& a : t.nodes)
    j.begin_object().field("host", a.host).field("port", a.port).field("gpu", a.gpu).end_object();
  j.end_array().end_object();
}

std::string report_json(const std::string& file, const topology_config& tc, const topology_report& r) {
  json_writer j;
  j.begin_object()
      .field("file", file)
      .field("n", tc.n)
      .field("graph", to_text(tc.graph))
      .field("weights", to_text(tc.weights))
      .field("valid", r.problems.empty())
      .field("edges", r.edges)
      .field("min_degree", r.min_degree)
      .field("max_degree", r.max_degree)
      .field("rho", r.rho)
      .field("spectral_gap", r.spectral_gap)
      .field("dcd_alpha2_max", r.dcd_alpha2_max);
  j.key("problems").begin_array();
  for (const auto& p : r.problems) j.value(p.message);
  j.end_array();
  j.key("topology");
  write_topology_section(j, tc);
  j.end_object();
  return j.str() + "\n";
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
