#include "node/config/config.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "core/hash.hpp"
#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"
#include "node/config/yaml_reader.hpp"

namespace qgossip {

namespace {

namespace fs = std::filesystem;

// The resolved config as YAML, section by section: what run.json records (nodes: every node's
// host) and, with hosts = nodes_as_given, what the run id hashes (nodes: {from: slurm, ...} as
// written, so that a job requeued onto other hosts is the same run and resumes).
std::string canonical_yaml(const run_config& c, node_hosts hosts) {
  YAML::Emitter y;
  y.SetDoublePrecision(17);
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << c.name;
  y << YAML::Key << "seed" << YAML::Value << c.seed;
  y << YAML::Key << "topology" << YAML::Value;
  emit_topology(y, c.topology, hosts);
  emit_algorithm(y, c);
  y << YAML::Key << "model" << YAML::Value;
  emit_model(y, c.model);
  y << YAML::Key << "data" << YAML::Value;
  emit_data(y, c.data);
  y << YAML::Key << "train" << YAML::Value;
  emit_train(y, c.train);
  y << YAML::Key << "network" << YAML::Value;
  emit_network(y, c.network);
  y << YAML::Key << "output" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << c.output_dir
    << YAML::EndMap;
  y << YAML::EndMap;
  return y.c_str();
}

// The topology file `topology: PATH` names: relative to the run file's folder.
fs::path topology_path(const YAML::Node& topo, const std::string& file) {
  fs::path p = topo.Scalar();
  return p.is_relative() ? fs::path(file).parent_path() / p : p;
}

// The --set assignments applied to the run file's document, in order. `--set topology.KEY=V` on a
// config whose topology is a file reads that file into the document first (topology_file then
// names it, for the positions of its own keys); `--set topology=PATH` and `--set model.path=PATH`
// take a relative PATH from the current folder, as any path on the command line, not from the run
// file's.
struct overridden {
  std::shared_ptr<override_origins> origins = std::make_shared<override_origins>();
  std::optional<std::string> topology_file;
};

overridden apply_overrides(YAML::Node& root, const std::string& file, const std::vector<std::string>& overrides) {
  overridden o;
  for (const std::string& assignment : overrides) {
    const std::string key = override_key(assignment);
    YAML::Node topo = root["topology"];
    if (key.starts_with("topology.") && topo.IsScalar()) {
      const fs::path p = topology_path(topo, file);
      root["topology"] = load_yaml_file(p.string(), "a topology YAML file");
      o.topology_file = p.string();
    }
    o.origins->push_back(apply_override(root, assignment));
    if (key == "topology") o.topology_file.reset();
    if (key == "topology" || key == "model.path") {  // the paths a run file reads from its own folder
      YAML::Node set = o.origins->back().value;      // shares its value with the document's
      if (set.IsScalar() && !set.Scalar().empty() && fs::path(set.Scalar()).is_relative())
        set = fs::absolute(set.Scalar()).lexically_normal().string();
    }
  }
  return o;
}

topology_config topology_of(yaml_reader& r, const std::string& file, const overridden& o, const env_lookup& env) {
  auto topo = r.child("topology");
  if (!topo) {
    // `qgossip launch topologies/ring8.yaml`: a topology file given where a run file goes.
    const std::string hint = r.has("graph") ? "; this file looks like a topology file (it has graph:), which a run "
                                              "YAML names with topology: FILE (e.g. configs/demo.yaml)"
                                            : "";
    throw r.error("missing required key 'topology' (a mapping, or the path of a topology YAML file)" + hint);
  }
  if (!topo->IsScalar()) {
    yaml_reader tr = o.topology_file ? yaml_reader(*topo, *o.topology_file, "topology", o.origins)
                                     : yaml_reader(*topo, r, "topology");
    return read_topology(tr, env);
  }
  const fs::path p = topology_path(*topo, file);
  try {
    return load_topology_config(p.string(), env);
  } catch (const config_error& e) {
    if (e.has_position()) throw;
    // A file not found: say which folder the path was read from.
    const bool missing = e.message().starts_with("cannot open");
    throw r.error_at(*topo, "topology: " + e.message() +
                                (missing ? " (a topology path in a run file is read from that file's folder; one "
                                           "given with --set topology=PATH, from the current folder)"
                                         : ""));
  }
}

// The run config in `root`, read from `file` (named in messages and the default name).
run_config load_document(YAML::Node root, const std::string& file, const std::vector<std::string>& overrides,
                         const env_lookup& env) {
  const overridden set = apply_overrides(root, file, overrides);
  yaml_reader r(root, file, "", set.origins);
  run_config c;
  c.file = file;
  c.name = r.get_string("name", fs::path(file).stem().string());
  if (c.name.empty() || c.name.find('/') != std::string::npos || c.name == "." || c.name == "..")
    throw r.error("name: '" + c.name + "' must be a plain directory name");
  c.seed = static_cast<std::uint64_t>(
      in_range<std::int64_t>(r, "seed", r.get_int("seed", 1), 0, std::numeric_limits<std::int64_t>::max()));
  c.topology = topology_of(r, file, set, env);
  read_algorithm(r, c);
  const YAML::Node model_at = read_model(r, c);
  read_data(r, c);
  read_train(r, c);
  read_network(r, c);
  r.finish();
  check_combinations(r, c, model_at);
  c.canonical = canonical_yaml(c, node_hosts::resolved);
  c.run_id = hash64(canonical_yaml(c, node_hosts::as_given));
  return c;
}

}  // namespace

topology_config load_topology_config(const std::string& file, const env_lookup& env) {
  yaml_reader r(load_yaml_file(file, "a topology YAML file"), file, "topology");
  return read_topology(r, env);
}

run_config load_run_config(const std::string& file, const std::vector<std::string>& overrides, const env_lookup& env) {
  return load_document(load_yaml_file(file, "a run YAML file"), file, overrides, env);
}

namespace {

void key_paths(const YAML::Node& n, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string path = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    if (it->second.IsMap())
      key_paths(it->second, path, out);
    else
      out.push_back(path);
  }
}

}  // namespace

std::vector<std::string> config_key_paths() {
  const run_config c = load_document(YAML::Load("topology: {graph: ring, n: 2}"), "defaults.yaml", {}, {});
  std::vector<std::string> out;
  key_paths(YAML::Load(c.canonical), "", out);
  return out;
}

std::uint64_t eigen_model_params(const model_spec& m, std::uint64_t dim, std::uint64_t classes) {
  if (is_torch(m.kind) || m.kind == model_kind::external) return 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  auto add = [](std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; };
  auto mul = [](std::uint64_t a, std::uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; };
  std::vector<std::uint64_t> widths{dim};
  if (m.kind == model_kind::mlp)
    for (std::size_t h : m.hidden) widths.push_back(h);
  widths.push_back(classes);
  std::uint64_t total = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l)
    total = add(total, add(mul(widths[l], widths[l + 1]), widths[l + 1]));  // weights and biases
  return total;
}

void check_model_size(const model_spec& m, std::uint64_t dim, std::uint64_t classes) {
  const std::uint64_t params = eigen_model_params(m, dim, classes);
  if (params <= kMaxModelParams) return;
  std::string shape = std::to_string(dim);
  if (m.kind == model_kind::mlp)
    for (std::size_t h : m.hidden) shape += "-" + std::to_string(h);
  shape += "-" + std::to_string(classes);
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(params) * sizeof(float) / double(1ull << 30));
  const bool saturated = params == std::numeric_limits<std::uint64_t>::max();
  throw config_error("model: " + std::string(name_of(m.kind)) + " " + shape + " has " +
                     (saturated ? "more than 2^64" : std::to_string(params)) + " parameters (" + gib +
                     " GiB per copy of the model), more than the limit of " + std::to_string(kMaxModelParams) +
                     " (2^28)" + (m.kind == model_kind::mlp ? "; use narrower or fewer hidden layers" : "; use fewer features or classes"));
}

}  // namespace qgossip
