#include "node/config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>

#include "algorithms/compress/isgq.hpp"
#include "core/hash.hpp"
#include "node/config/yaml_reader.hpp"
#include "topology/graph.hpp"

namespace qgossip {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kGraphs{"ring", "torus", "complete", "star", "hypercube", "exponential", "edge_list"};
const std::vector<std::string> kWeights{"uniform", "metropolis_hastings", "explicit"};
const std::vector<std::string> kModels{"mlp", "softmax", "lenet5", "resnet20", "torchscript"};
const std::vector<std::string> kTorchModels{"lenet5", "resnet20", "torchscript"};
const std::vector<std::string> kBuffers{"local", "average"};
const std::vector<std::string> kInits{"he", "pytorch"};
const std::vector<std::string> kDevices{"auto", "cpu", "cuda"};
const std::vector<std::string> kDatasets{"fashion-mnist", "cifar10", "npy", "synthetic"};
const std::vector<std::string> kPartitions{"iid", "label"};
const std::vector<std::string> kSchedules{"constant", "step", "multistep", "cosine"};
const std::vector<std::string> kTransports{"tcp", "ipc"};
const std::vector<std::string> kSecurity{"curve", "none"};
const std::vector<std::string> kPeerFailure{"stop", "continue"};

std::string one_of(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Reads key as one of `allowed`, with a hint on a near miss.
std::string get_choice(yaml_reader& r, std::string_view key, std::string def, const std::vector<std::string>& allowed) {
  auto node = r.child(key);
  if (!node) return def;
  if (!node->IsScalar()) throw r.error_at(*node, r.key_path(key) + ": expected one of " + one_of(allowed));
  const std::string v = node->Scalar();
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  std::string msg = r.key_path(key) + ": unknown value '" + v + "'; expected one of " + one_of(allowed);
  std::string hint = closest_match(v, allowed);
  if (!hint.empty()) msg += " (did you mean '" + hint + "'?)";
  throw r.error_at(*node, msg);
}

// A number as a person would write it: 0, 1e-12, 0.999999, 1e+06 (the shortest text that reads
// back as the same double), not std::to_string's 0.000000.
std::string number_text(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}
std::string number_text(std::int64_t v) { return std::to_string(v); }

// The position of key's value, or of the mapping when the key is absent (a default out of range).
YAML::Node value_node(yaml_reader& r, std::string_view key) {
  auto node = r.child(key);
  return node ? *node : YAML::Node();
}

template <class T>
T in_range(yaml_reader& r, std::string_view key, T value, T lo, T hi) {
  if (value < lo || value > hi)
    throw r.error_at(value_node(r, key), r.key_path(key) + ": " + number_text(value) + " is out of range [" +
                                             number_text(lo) + ", " + number_text(hi) + "]");
  return value;
}

int get_int_in(yaml_reader& r, std::string_view key, int def, int lo, int hi) {
  return static_cast<int>(in_range<std::int64_t>(r, key, r.get_int(key, def), lo, hi));
}

double get_double_in(yaml_reader& r, std::string_view key, double def, double lo, double hi) {
  return in_range<double>(r, key, r.get_double(key, def), lo, hi);
}

// A quantity that must be > 0 (a rate, a length of time): "train.lr: the learning rate must be > 0,
// got 0" rather than a range whose lower end is a tiny stand-in for zero. `smallest` is the least
// value accepted (a guard against underflow downstream), `what` names the quantity.
double get_positive_double(yaml_reader& r, std::string_view key, double def, double smallest, double hi,
                           const std::string& what) {
  const double v = r.get_double(key, def);
  const std::string say = r.key_path(key) + ": " + what;
  if (v <= 0) throw r.error_at(value_node(r, key), say + " must be > 0, got " + number_text(v));
  if (v < smallest)
    throw r.error_at(value_node(r, key),
                     say + " must be at least " + number_text(smallest) + ", got " + number_text(v));
  if (v > hi)
    throw r.error_at(value_node(r, key),
                     say + " must be at most " + number_text(hi) + ", got " + number_text(v));
  return v;
}

// Host names that mean the same address, so that "localhost" and "127.0.0.1" are one host when
// ports are compared.
std::string same_host_key(const std::string& host) {
  std::string h;
  for (char ch : host) h += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return h == "localhost" ? "127.0.0.1" : h;
}

topology_config parse_topology(yaml_reader& r) {
  topology_config t;
  t.file = r.file();
  t.graph = get_choice(r, "graph", t.graph, kGraphs);
  t.weights = get_choice(r, "weights", t.weights, kWeights);
  t.host = r.get_string("host", t.host);
  t.base_port = get_int_in(r, "base_port", t.base_port, 1, 65535);
  t.rows = get_int_in(r, "rows", 0, 0, 1 << 16);
  t.cols = get_int_in(r, "cols", 0, 0, 1 << 16);
  t.dim = get_int_in(r, "dim", 0, 0, 62);

  // Where each listed node's port was given (its value, or the node's mapping when it defaults to
  // base_port + i), for the duplicate-port message.
  std::vector<YAML::Node> port_nodes;
  if (auto nodes = r.child("nodes")) {
    if (!nodes->IsSequence()) throw r.error_at(*nodes, "topology.nodes: expected a list of {host, port, gpu}");
    if (nodes->size() > static_cast<std::size_t>(kMaxNodes))
      throw r.error_at(*nodes, "topology.nodes lists " + std::to_string(nodes->size()) + " nodes; at most " +
                                   std::to_string(kMaxNodes) + " are supported");
    for (std::size_t i = 0; i < nodes->size(); ++i) {
      const std::string path = "topology.nodes[" + std::to_string(i) + "]";
      yaml_reader nr((*nodes)[i], r.file(), path);
      node_address a;
      a.host = nr.get_string("host", t.host);
      if (a.host.empty()) throw nr.error(path + ".host: empty host name");
      if (auto port = nr.child("port")) {
        a.port = get_int_in(nr, "port", 0, 1, 65535);
        port_nodes.push_back(*port);
      } else {
        const std::int64_t p = std::int64_t{t.base_port} + static_cast<std::int64_t>(i);
        if (p > 65535)
          throw nr.error(path + ": no port given, and base_port + " + std::to_string(i) + " = " +
                         std::to_string(p) + " is past 65535 (give the node a port, or lower base_port)");
        a.port = static_cast<int>(p);
        port_nodes.push_back((*nodes)[i]);
      }
      a.gpu = get_int_in(nr, "gpu", -1, -1, 1024);
      nr.finish();
      t.nodes.push_back(a);
    }
  }
  if (auto edges = r.child("edges")) {
    if (!edges->IsSequence()) throw r.error_at(*edges, "topology.edges: expected a list of [i, j] pairs");
    for (std::size_t k = 0; k < edges->size(); ++k) {
      YAML::Node e = (*edges)[k];
      std::string what = "topology.edges[" + std::to_string(k) + "]";
      if (!e.IsSequence() || e.size() != 2) throw r.error_at(e, what + ": expected a pair [i, j]");
      t.edges.emplace_back(static_cast<int>(r.to_int(e[0], what)), static_cast<int>(r.to_int(e[1], what)));
    }
  }
  if (auto m = r.child("matrix")) {
    if (!m->IsSequence()) throw r.error_at(*m, "topology.matrix: expected a list of rows");
    for (std::size_t i = 0; i < m->size(); ++i) {
      YAML::Node row = (*m)[i];
      std::string what = "topology.matrix[" + std::to_string(i) + "]";
      if (!row.IsSequence()) throw r.error_at(row, what + ": expected a list of numbers");
      std::vector<double> values;
      for (std::size_t j = 0; j < row.size(); ++j)
        values.push_back(r.to_double(row[j], what + "[" + std::to_string(j) + "]"));
      t.matrix.push_back(std::move(values));
    }
  }
  // The number of nodes, in 64 bits (a torus of 65536x32768 would overflow an int), refused above
  // kMaxNodes (topology/graph.hpp: W is dense, the analysis O(n^3)).
  const std::string most = "; at most " + std::to_string(kMaxNodes) + " nodes are supported";
  if (t.graph == "torus" && t.rows > 0 && t.cols > 0) {
    const std::int64_t cells = std::int64_t{t.rows} * std::int64_t{t.cols};
    if (cells > kMaxNodes)
      throw r.error_at(value_node(r, "rows"), "topology: a torus of " + std::to_string(t.rows) + "x" +
                                                  std::to_string(t.cols) + " has " + std::to_string(cells) +
                                                  " nodes" + most);
  }
  if (t.graph == "hypercube" && t.dim > 0 && (std::int64_t{1} << t.dim) > kMaxNodes)
    throw r.error_at(value_node(r, "dim"), "topology: a hypercube of dim " + std::to_string(t.dim) +
                                               " has 2^" + std::to_string(t.dim) + " = " +
                                               std::to_string(std::int64_t{1} << t.dim) + " nodes" + most);
  if (t.matrix.size() > static_cast<std::size_t>(kMaxNodes))
    throw r.error_at(value_node(r, "matrix"),
                     "topology.matrix has " + std::to_string(t.matrix.size()) + " rows" + most);
  const std::int64_t default_n = !t.nodes.empty() ? std::int64_t(t.nodes.size())
                                 : t.graph == "torus" && t.rows > 0 && t.cols > 0
                                     ? std::int64_t{t.rows} * t.cols
                                 : t.graph == "hypercube" && t.dim > 0 ? std::int64_t{1} << t.dim
                                 : !t.matrix.empty()                   ? std::int64_t(t.matrix.size())
                                                                       : 0;
  const std::int64_t n = r.get_int("n", default_n);
  if (n > kMaxNodes)
    throw r.error_at(value_node(r, "n"), "topology.n: " + std::to_string(n) + " nodes" + most);
  t.n = static_cast<int>(in_range<std::int64_t>(r, "n", n, 0, kMaxNodes));
  if (t.n < 1) throw r.error("topology: missing 'n' (the number of nodes), or list them under 'nodes'");
  if (!t.nodes.empty() && static_cast<int>(t.nodes.size()) != t.n)
    throw r.error("topology: n is " + std::to_string(t.n) + " but 'nodes' lists " + std::to_string(t.nodes.size()));
  if (t.nodes.empty()) {
    const std::int64_t last = std::int64_t{t.base_port} + t.n - 1;
    if (last > 65535)
      throw r.error_at(value_node(r, "base_port"),
                       "topology: base_port " + std::to_string(t.base_port) +
                           " with n = " + std::to_string(t.n) + " puts node " + std::to_string(t.n - 1) +
                           " on port " + std::to_string(last) +
                           ", past 65535 (node r listens on base_port + r): lower base_port");
    for (int i = 0; i < t.n; ++i) t.nodes.push_back({t.host, t.base_port + i, -1});
  } else {
    // Two nodes on one host cannot listen on one port: the second would fail to bind (or, across
    // hosts that name themselves alike, the neighbours would reach the wrong node).
    std::map<std::pair<std::string, int>, std::size_t> taken;
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      const auto [it, fresh] = taken.emplace(std::pair{same_host_key(t.nodes[i].host), t.nodes[i].port}, i);
      if (!fresh)
        throw r.error_at(port_nodes[i], "topology.nodes[" + std::to_string(i) + "]: " + t.nodes[i].host +
                                            ":" + std::to_string(t.nodes[i].port) + " is already node " +
                                            std::to_string(it->second) + "'s (" + t.nodes[it->second].host +
                                            ":" + std::to_string(t.nodes[it->second].port) +
                                            "); nodes on the same host need different ports");
    }
  }
  if (t.weights == "explicit" && t.matrix.empty())
    throw r.error("topology: weights: explicit needs 'matrix' (n rows of n weights)");
  if (t.weights != "explicit" && !t.matrix.empty())
    throw r.error("topology: 'matrix' is only read with weights: explicit");
  if (t.graph == "edge_list" && t.edges.empty()) throw r.error("topology: graph: edge_list needs an 'edges' list");
  if (t.graph != "edge_list" && !t.edges.empty()) throw r.error("topology: 'edges' is only read with graph: edge_list");
  r.finish();
  return t;
}

topology_config load_topology_node(const YAML::Node& node, const std::string& file, const std::string& path) {
  yaml_reader r(node, file, path);
  return parse_topology(r);
}

codec_spec parse_compressor(yaml_reader& root) {
  auto node = root.child("compressor");
  if (!node) return codec_spec{"identity", {}};
  codec_spec spec;
  try {
    if (node->IsScalar()) {
      spec = parse_codec_spec(node->Scalar());
    } else {
      yaml_reader r(*node, root.file(), "compressor");
      spec.name = r.require_string("name");
      for (auto it = node->begin(); it != node->end(); ++it) {
        const std::string& k = it->first.Scalar();
        if (k == "name") continue;
        if (!it->second.IsScalar()) throw r.error_at(it->second, "compressor." + k + ": expected a scalar");
        spec.params.emplace_back(k, it->second.Scalar());
      }
    }
    if (spec.name == "isgq")
      (void)make_isgq(spec);  // not a vector codec: it encodes a layer's factors (all-gather only)
    else
      (void)make_compressor(spec);  // validates name, parameters and values now, with a position
  } catch (const config_error& e) {
    if (e.has_position()) throw;
    throw root.error_at(*node, "compressor: " + e.message());
  }
  return spec;
}

// train.checkpoint_every: a whole number of rounds. Minutes are refused with the reason: every node
// must checkpoint at the same round, and a round count measured from each node's clock is not the
// same on every node (docs/checkpoints.md, "When").
int get_checkpoint_every(yaml_reader& t, int def) {
  if (auto v = t.child("checkpoint_every"); v && v->IsScalar()) {
    const std::string text = v->Scalar();
    if (!text.empty() && (text.back() == 'm' || text.back() == 's' || text.find("min") != std::string::npos))
      throw t.error_at(*v, t.key_path("checkpoint_every") + ": '" + text +
                               "' is a time; give a number of rounds (every node must checkpoint at the same "
                               "round, which a time measured on each node does not give; a round takes about "
                               "wall_s / iteration of an earlier run's node-<rank>.csv)");
  }
  return get_int_in(t, "checkpoint_every", def, 0, 1 << 30);
}

void emit_codec(YAML::Emitter& y, const codec_spec& c) {
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name;
  for (const auto& [k, v] : c.params) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
}

std::string canonical_yaml(const run_config& c) {
  YAML::Emitter y;
  y.SetDoublePrecision(17);
  y << YAML::BeginMap;
  y << YAML::Key << "name" << YAML::Value << c.name;
  y << YAML::Key << "seed" << YAML::Value << c.seed;
  const auto& t = c.topology;
  y << YAML::Key << "topology" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "graph" << YAML::Value << t.graph << YAML::Key << "n" << YAML::Value << t.n;
  if (t.graph == "torus") y << YAML::Key << "rows" << YAML::Value << t.rows << YAML::Key << "cols" << YAML::Value << t.cols;
  if (t.graph == "hypercube") y << YAML::Key << "dim" << YAML::Value << t.dim;
  if (!t.edges.empty()) {
    y << YAML::Key << "edges" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (auto [a, b] : t.edges) y << YAML::Flow << YAML::BeginSeq << a << b << YAML::EndSeq;
    y << YAML::EndSeq;
  }
  y << YAML::Key << "weights" << YAML::Value << t.weights;
  if (!t.matrix.empty()) {
    y << YAML::Key << "matrix" << YAML::Value << YAML::BeginSeq;
    for (const auto& row : t.matrix) y << YAML::Flow << row;
    y << YAML::EndSeq;
  }
  y << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : t.nodes)
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "host" << YAML::Value << a.host << YAML::Key << "port"
      << YAML::Value << a.port << YAML::Key << "gpu" << YAML::Value << a.gpu << YAML::EndMap;
  y << YAML::EndSeq << YAML::EndMap;
  y << YAML::Key << "algorithm" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.algorithm;
  if (c.algorithm == "choco")
    y << YAML::Key << "consensus_step" << YAML::Value << c.algorithm_params.consensus_step;
  y << YAML::EndMap;
  y << YAML::Key << "compressor" << YAML::Value;
  emit_codec(y, c.compressor);
  y << YAML::Key << "device" << YAML::Value << c.device;
  y << YAML::Key << "model" << YAML::Value << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << c.model.kind
    << YAML::Key << "hidden" << YAML::Value << YAML::Flow << c.model.hidden;
  if (!is_torch_model(c.model.kind)) y << YAML::Key << "init" << YAML::Value << c.model.init;
  if (is_torch_model(c.model.kind))
    y << YAML::Key << "path" << YAML::Value << c.model.path << YAML::Key << "threads" << YAML::Value
      << c.model.threads << YAML::Key << "buffers" << YAML::Value << c.model.buffers;
  y << YAML::EndMap;
  const auto& d = c.data;
  y << YAML::Key << "data" << YAML::Value << YAML::BeginMap << YAML::Key << "dataset" << YAML::Value << d.dataset
    << YAML::Key << "dir" << YAML::Value << d.dir << YAML::Key << "partition" << YAML::Value << d.partition
    << YAML::Key << "skew" << YAML::Value << d.skew << YAML::Key << "standardize" << YAML::Value << d.standardize
    << YAML::Key << "augment" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "crop_padding"
    << YAML::Value << d.augment.crop_padding << YAML::Key << "flip" << YAML::Value << d.augment.flip << YAML::EndMap;
  if (d.dataset == "synthetic")
    y << YAML::Key << "synthetic" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "train"
      << YAML::Value << d.synthetic_train << YAML::Key << "test" << YAML::Value << d.synthetic_test << YAML::Key
      << "dim" << YAML::Value << d.synthetic_dim << YAML::Key << "classes" << YAML::Value << d.synthetic_classes
      << YAML::Key << "noise" << YAML::Value << d.synthetic_noise << YAML::EndMap;
  y << YAML::EndMap;
  const auto& tr = c.train;
  y << YAML::Key << "train" << YAML::Value << YAML::BeginMap << YAML::Key << "epochs" << YAML::Value << tr.epochs
    << YAML::Key << "batch" << YAML::Value << tr.batch << YAML::Key << "lr" << YAML::Value << tr.lr.lr;
  y << YAML::Key << "schedule" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "kind" << YAML::Value
    << to_string(tr.lr.kind) << YAML::Key << "gamma" << YAML::Value << tr.lr.gamma << YAML::Key << "step_epochs"
    << YAML::Value << tr.lr.step_epochs << YAML::Key << "milestones" << YAML::Value << YAML::Flow
    << tr.lr.milestones << YAML::Key << "warmup_epochs" << YAML::Value << tr.lr.warmup_epochs << YAML::Key
    << "warmup_start" << YAML::Value << tr.lr.warmup_start;
  if (tr.lr.kind == lr_kind::cosine) y << YAML::Key << "final_factor" << YAML::Value << tr.lr.final_factor;
  y << YAML::EndMap;
  y << YAML::Key << "eval_every" << YAML::Value << tr.eval_every << YAML::Key << "eval_examples" << YAML::Value
    << tr.eval_examples << YAML::Key << "log_every" << YAML::Value << tr.log_every << YAML::Key << "diverge_loss"
    << YAML::Value << tr.diverge_loss << YAML::Key << "momentum" << YAML::Value << tr.momentum << YAML::Key
    << "weight_decay" << YAML::Value << tr.weight_decay << YAML::Key << "consensus_every" << YAML::Value
    << tr.consensus_every << YAML::Key << "local_steps" << YAML::Value << tr.local_steps << YAML::Key << "outer"
    << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "lr" << YAML::Value << tr.outer.lr << YAML::Key
    << "momentum" << YAML::Value << tr.outer.momentum << YAML::Key << "nesterov" << YAML::Value << tr.outer.nesterov
    << YAML::EndMap;
  y << YAML::Key << "checkpoint_every" << YAML::Value << tr.checkpoint_every << YAML::EndMap;
  const auto& nw = c.network;
  y << YAML::Key << "network" << YAML::Value << YAML::BeginMap << YAML::Key << "transport" << YAML::Value
    << nw.transport << YAML::Key << "start_timeout_s" << YAML::Value << nw.start_timeout_s << YAML::Key
    << "round_timeout_s" << YAML::Value << nw.round_timeout_s << YAML::Key << "linger_s" << YAML::Value
    << nw.linger_s << YAML::Key << "emulate" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
    << "rate_mbit" << YAML::Value << nw.emulate_rate_mbit << YAML::Key << "delay_ms" << YAML::Value
    << nw.emulate_delay_ms << YAML::EndMap << YAML::Key << "pace_mbit" << YAML::Value << nw.pace_mbit
    << YAML::Key << "shaping" << YAML::Value << nw.shaping
    << YAML::Key << "security" << YAML::Value << nw.security << YAML::Key << "on_peer_failure" << YAML::Value
    << nw.on_peer_failure << YAML::Key << "heartbeat_s" << YAML::Value << nw.heartbeat_s << YAML::Key
    << "max_rejected" << YAML::Value << nw.max_rejected << YAML::EndMap;  // keys_dir: host-local
  y << YAML::Key << "output" << YAML::Value << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << c.output_dir
    << YAML::EndMap;
  y << YAML::EndMap;
  return y.c_str();
}

}  // namespace

const std::vector<std::string>& algorithm_names() {
  static const std::vector<std::string> names{"dpsgd", "naive", "dcd", "ecd", "choco", "allreduce", "allgather"};
  return names;
}

topology_config load_topology_config(const std::string& file) {
  return load_topology_node(load_yaml_file(file, "a topology YAML file"), file, "topology");
}

run_config load_run_config(const std::string& file, const std::vector<std::string>& overrides) {
  YAML::Node root = load_yaml_file(file, "a run YAML file");
  for (const auto& o : overrides) apply_override(root, o);
  yaml_reader r(root, file, "");
  run_config c;
  c.file = file;
  c.name = r.get_string("name", fs::path(file).stem().string());
  if (c.name.empty() || c.name.find('/') != std::string::npos || c.name == "." || c.name == "..")
    throw r.error("name: '" + c.name + "' must be a plain directory name");
  c.seed = static_cast<std::uint64_t>(in_range<std::int64_t>(r, "seed", r.get_int("seed", 1), 0,
                                                              std::numeric_limits<std::int64_t>::max()));

  auto topo = r.child("topology");
  if (!topo) throw r.error("missing required key 'topology' (a mapping, or the path of a topology YAML file)");
  if (topo->IsScalar()) {
    fs::path p = topo->Scalar();
    if (p.is_relative()) p = fs::path(file).parent_path() / p;
    try {
      c.topology = load_topology_config(p.string());
    } catch (const config_error& e) {
      if (e.has_position()) throw;
      throw r.error_at(*topo, "topology: " + e.message());
    }
  } else {
    c.topology = load_topology_node(*topo, file, "topology");
  }

  if (auto a = r.child("algorithm"); a && a->IsMap()) {
    yaml_reader ar(*a, file, "algorithm");
    c.algorithm = get_choice(ar, "name", c.algorithm, algorithm_names());
    c.algorithm_params.consensus_step = get_positive_double(
        ar, "consensus_step", c.algorithm_params.consensus_step, 1e-9, 1.0, "the consensus step size");
    if (c.algorithm != "choco" && ar.has("consensus_step"))
      throw ar.error("algorithm.consensus_step is only read by choco");
    ar.finish();
  } else {
    c.algorithm = get_choice(r, "algorithm", c.algorithm, algorithm_names());
  }
  c.compressor = parse_compressor(r);

  c.device = get_choice(r, "device", c.device, kDevices);
  // Where a model too large is reported: model.hidden, else model. (reset: a YAML::Node assigned
  // to would have its referent overwritten.)
  YAML::Node model_size_at;
  if (auto node = r.child("model")) model_size_at.reset(*node);
  if (auto m = r.map("model")) {
    if (auto h = m->child("hidden")) model_size_at.reset(*h);
    c.model.kind = get_choice(*m, "kind", c.model.kind, kModels);
    std::vector<std::int64_t> def(c.model.hidden.begin(), c.model.hidden.end());
    if (c.model.kind != "mlp") def.clear();
    auto hidden = m->get_int_list("hidden", def);
    c.model.hidden.clear();
    for (auto h : hidden) {
      if (h < 1 || h > (1 << 20)) throw m->error("model.hidden: layer widths must be in [1, 1048576]");
      c.model.hidden.push_back(static_cast<std::size_t>(h));
    }
    if (c.model.kind == "softmax" && !c.model.hidden.empty())
      throw m->error("model.hidden: softmax regression has no hidden layers (use kind: mlp)");
    if (c.model.kind == "mlp" && c.model.hidden.empty())
      throw m->error("model.hidden: an mlp needs at least one hidden layer (use kind: softmax for none)");
    if (is_torch_model(c.model.kind) && !c.model.hidden.empty())
      throw m->error("model.hidden: only mlp has configurable hidden layers; " + c.model.kind + " has a fixed architecture");
    c.model.path = m->get_string("path", "");
    if (c.model.kind == "torchscript" && c.model.path.empty())
      throw m->error("model.path: kind torchscript needs the file torch.jit.save wrote (docs/models.md)");
    if (c.model.kind != "torchscript" && !c.model.path.empty())
      throw m->error("model.path: only kind torchscript reads a model file");
    if (!c.model.path.empty() && fs::path(c.model.path).is_relative())
      c.model.path = (fs::path(file).parent_path() / c.model.path).lexically_normal().string();
    c.model.init = get_choice(*m, "init", c.model.init, kInits);
    if (is_torch_model(c.model.kind) && m->has("init"))
      throw m->error("model.init is for the Eigen models (mlp, softmax); " + c.model.kind +
                     " uses torch's own initialization");
    c.model.threads = get_int_in(*m, "threads", c.model.threads, 1, 256);
    c.model.buffers = get_choice(*m, "buffers", c.model.buffers, kBuffers);
    if (!is_torch_model(c.model.kind) && (m->has("threads") || m->has("buffers")))
      throw m->error("model.threads and model.buffers are for the libtorch models (" + c.model.kind + " is Eigen)");
    m->finish();
  }

  if (auto d = r.map("data")) {
    c.data.dataset = get_choice(*d, "dataset", c.data.dataset, kDatasets);
    c.data.dir = d->get_string("dir", c.data.dir);
    c.data.partition = get_choice(*d, "partition", c.data.partition, kPartitions);
    c.data.skew = get_double_in(*d, "skew", c.data.skew, 0.0, 1.0);
    c.data.standardize = d->get_bool("standardize", c.data.standardize);
    // data.cache: true | false | a directory (node/data/data_cache.hpp); results never depend on it.
    if (const std::string cache = d->get_string("cache", "true"); cache == "false" || cache == "no" || cache == "off")
      c.data.cache = false;
    else if (cache.empty())
      throw d->error("data.cache: expected true, false or a directory, got an empty string");
    else if (cache != "true" && cache != "yes" && cache != "on")
      c.data.cache_dir = cache;
    if (auto a = d->map("augment")) {
      c.data.augment.crop_padding = get_int_in(*a, "crop_padding", c.data.augment.crop_padding, 0, 64);
      c.data.augment.flip = a->get_bool("flip", c.data.augment.flip);
      a->finish();
    }
    if (c.data.dataset == "synthetic" && (c.data.augment.crop_padding > 0 || c.data.augment.flip))
      throw d->error("data.augment: crops and flips are for images; synthetic data are feature vectors");
    if (auto s = d->map("synthetic")) {
      c.data.synthetic_train = get_int_in(*s, "train", c.data.synthetic_train, 1, 10'000'000);
      c.data.synthetic_test = get_int_in(*s, "test", c.data.synthetic_test, 1, 10'000'000);
      c.data.synthetic_dim = get_int_in(*s, "dim", c.data.synthetic_dim, 1, 1 << 20);
      c.data.synthetic_classes = get_int_in(*s, "classes", c.data.synthetic_classes, 2, 1 << 16);
      c.data.synthetic_noise = get_double_in(*s, "noise", c.data.synthetic_noise, 0.0, 1e6);
      s->finish();
    }
    d->finish();
  }

  if (auto t = r.map("train")) {
    c.train.epochs = get_positive_double(*t, "epochs", c.train.epochs, 1e-6, 1e6, "the number of epochs");
    c.train.batch = get_int_in(*t, "batch", c.train.batch, 1, 1 << 20);
    c.train.lr.lr = get_positive_double(*t, "lr", c.train.lr.lr, 1e-12, 1e6, "the learning rate");
    if (auto s = t->map("schedule")) {
      auto& sc = c.train.lr;
      sc.total_epochs = c.train.epochs;  // cosine decays over the whole run
      sc.kind = parse_lr_kind(get_choice(*s, "kind", to_string(sc.kind), kSchedules));
      sc.gamma = get_positive_double(*s, "gamma", sc.gamma, 1e-12, 1.0, "the decay factor");
      sc.step_epochs =
          get_positive_double(*s, "step_epochs", sc.step_epochs, 1e-9, 1e6, "the step length in epochs");
      sc.warmup_epochs = get_double_in(*s, "warmup_epochs", sc.warmup_epochs, 0.0, 1e6);
      sc.warmup_start = get_double_in(*s, "warmup_start", sc.warmup_start, 0.0, 1.0);
      sc.final_factor = get_double_in(*s, "final_factor", sc.final_factor, 0.0, 1.0);
      if (sc.kind != lr_kind::cosine && s->has("final_factor"))
        throw s->error("train.schedule.final_factor is only read by kind: cosine");
      if (auto ms = s->child("milestones")) {
        if (!ms->IsSequence()) throw s->error_at(*ms, "train.schedule.milestones: expected a list of epochs");
        for (std::size_t i = 0; i < ms->size(); ++i)
          sc.milestones.push_back(s->to_double((*ms)[i], "train.schedule.milestones[" + std::to_string(i) + "]"));
      }
      try {
        (void)lr_schedule(sc);  // the schedule's own checks (increasing milestones, ...), placed here
      } catch (const config_error& e) {
        throw s->error("train.schedule: " + e.message());
      }
      s->finish();
    }
    c.train.eval_every = get_double_in(*t, "eval_every", c.train.eval_every, 0.0, 1e6);
    c.train.eval_examples = get_int_in(*t, "eval_examples", c.train.eval_examples, 0, 1 << 30);
    c.train.log_every = get_int_in(*t, "log_every", c.train.log_every, 1, 1 << 30);
    c.train.diverge_loss = get_positive_double(*t, "diverge_loss", c.train.diverge_loss, 1e-6, 1e300,
                                               "the divergence threshold");
    c.train.momentum = get_double_in(*t, "momentum", c.train.momentum, 0.0, 0.999999);
    c.train.weight_decay = get_double_in(*t, "weight_decay", c.train.weight_decay, 0.0, 1e6);
    c.train.consensus_every = get_int_in(*t, "consensus_every", c.train.consensus_every, 0, 1 << 30);
    c.train.local_steps = get_int_in(*t, "local_steps", c.train.local_steps, 1, 1 << 20);
    if (auto o = t->map("outer")) {
      c.train.outer.lr = get_positive_double(*o, "lr", c.train.outer.lr, 1e-12, 1e6, "the outer learning rate");
      c.train.outer.momentum = get_double_in(*o, "momentum", c.train.outer.momentum, 0.0, 0.999999);
      c.train.outer.nesterov = o->get_bool("nesterov", c.train.outer.nesterov);
      o->finish();
    }
    c.train.checkpoint_every = get_checkpoint_every(*t, c.train.checkpoint_every);
    t->finish();
  }

  if (auto n = r.map("network")) {
    c.network.transport = get_choice(*n, "transport", c.network.transport, kTransports);
    c.network.start_timeout_s = get_positive_double(*n, "start_timeout_s", c.network.start_timeout_s, 0.01,
                                                    86400, "the start time-out");
    c.network.round_timeout_s = get_positive_double(*n, "round_timeout_s", c.network.round_timeout_s, 0.01,
                                                    86400, "the round time-out");
    c.network.linger_s = get_double_in(*n, "linger_s", c.network.linger_s, 0.0, 3600);
    if (auto e = n->map("emulate")) {
      c.network.emulate_rate_mbit = get_double_in(*e, "rate_mbit", c.network.emulate_rate_mbit, 0.0, 1e6);
      c.network.emulate_delay_ms = get_double_in(*e, "delay_ms", c.network.emulate_delay_ms, 0.0, 3.6e6);
      e->finish();
    }
    c.network.pace_mbit = get_double_in(*n, "pace_mbit", c.network.pace_mbit, 0.0, 1e6);
    c.network.shaping = n->get_string("shaping", c.network.shaping);
    c.network.security = get_choice(*n, "security", c.network.security, kSecurity);
    c.network.keys_dir = n->get_string("keys_dir", c.network.keys_dir);
    c.network.on_peer_failure = get_choice(*n, "on_peer_failure", c.network.on_peer_failure, kPeerFailure);
    c.network.heartbeat_s = get_double_in(*n, "heartbeat_s", c.network.heartbeat_s, 0.0, 3600);
    if (c.network.heartbeat_s > 0 && c.network.heartbeat_s < 0.05)
      throw n->error_at(*n->child("heartbeat_s"), n->key_path("heartbeat_s") +
                                                      ": expected 0 (off) or at least 0.05 s, received " +
                                                      std::to_string(c.network.heartbeat_s));
    c.network.max_rejected = get_int_in(*n, "max_rejected", c.network.max_rejected, 0, 1 << 30);
    n->finish();
  }
  if (auto o = r.map("output")) {
    c.output_dir = o->get_string("dir", c.output_dir);
    o->finish();
  }
  r.finish();

  if (c.algorithm == "dpsgd" && c.compressor.name != "identity")
    throw r.error("algorithm: dpsgd is the full-precision reference and sends raw floats; remove 'compressor' "
                  "or use naive, dcd or ecd to compress");
  if (c.compressor.name == "isgq" && c.algorithm != "allgather")
    throw r.error("compressor: isgq sends each node's gradient factors to every node; use algorithm: allgather");
  if (c.compressor.name == "isgq" && (c.train.momentum > 0 || c.train.weight_decay > 0))
    throw r.error("compressor: isgq encodes the raw loss gradient's factors, so train.momentum and "
                  "train.weight_decay cannot be applied before sending; set them to 0");
  if (c.compressor.name == "isgq" && (c.train.local_steps > 1 || !c.train.outer.is_identity()))
    throw r.error("compressor: isgq encodes one gradient's factors; train.local_steps > 1 and train.outer send a "
                  "change of several steps, which has no such factors; use another codec");
  if (is_torch_model(c.model.kind)) {
    if (c.compressor.name == "isgq")
      throw r.error("compressor: isgq needs the gradient factors of a fully connected Eigen model (mlp or "
                    "softmax); " + c.model.kind + " is a libtorch model");
    if ((c.model.kind == "lenet5" || c.model.kind == "resnet20") && c.data.dataset == "synthetic")
      throw r.error("model: " + c.model.kind + " takes images; data.dataset synthetic has none (use fashion-mnist, "
                    "cifar10 or npy)");
    if (c.train.checkpoint_every > 0 && c.model.buffers == "local" && c.model.kind != "lenet5")
      throw r.error("train.checkpoint_every: " + c.model.kind + " with model.buffers: local keeps BatchNorm "
                    "running statistics inside the module, which checkpoints do not hold yet; use buffers: "
                    "average (they then travel with the model and are checkpointed), or no checkpoints");
    if (c.model.buffers == "average" && (c.train.momentum > 0 || c.train.weight_decay > 0))
      throw r.error("model.buffers: average sends BatchNorm statistics as part of the model, stepped by plain "
                    "SGD; set train.momentum and train.weight_decay to 0, or keep buffers local");
  } else if (c.device == "cuda") {
    throw r.error("device: cuda trains the libtorch models (lenet5, resnet20, torchscript); " + c.model.kind +
                  " runs on the CPU (use device: auto or cpu)");
  }
  if (c.network.on_peer_failure == "continue" && (c.algorithm == "allreduce" || c.algorithm == "allgather"))
    throw r.error("network.on_peer_failure: continue trains on around a failed neighbour on the graph; " + c.algorithm +
                  " needs every node in every round: use stop, or a decentralized algorithm (dpsgd, naive, dcd, ecd, choco)");
  if (c.network.on_peer_failure == "continue" && c.train.consensus_every > 0)
    throw r.error("network.on_peer_failure: continue cannot be combined with train.consensus_every: the consensus "
                  "probe gathers every node's model and would wait for one that left; set consensus_every: 0");
  if (c.algorithm == "allreduce" && c.compressor.name != "identity")
    throw r.error("algorithm: allreduce sums full-precision gradients with a ring all-reduce; remove 'compressor' "
                  "or use allgather to send compressed gradients to every node");
  // The model's size, where the data's shape is known without reading it (npy: at node start).
  const bool shape_known = c.data.dataset != "npy";
  const std::uint64_t dim = c.data.dataset == "fashion-mnist" ? 784
                            : c.data.dataset == "cifar10"     ? 3072
                                                          : static_cast<std::uint64_t>(c.data.synthetic_dim);
  const std::uint64_t classes =
      c.data.dataset == "synthetic" ? static_cast<std::uint64_t>(c.data.synthetic_classes) : 10;
  if (shape_known) {
    try {
      check_model_size(c.model, dim, classes);
    } catch (const config_error& e) {
      throw r.error_at(model_size_at, e.message());
    }
  }
  c.canonical = canonical_yaml(c);
  c.run_id = hash64(c.canonical);
  return c;
}

std::uint64_t eigen_model_params(const model_spec& m, std::uint64_t dim, std::uint64_t classes) {
  if (m.kind != "mlp" && m.kind != "softmax") return 0;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  auto add = [](std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; };
  auto mul = [](std::uint64_t a, std::uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; };
  std::vector<std::uint64_t> widths{dim};
  if (m.kind == "mlp")
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
  if (m.kind == "mlp")
    for (std::size_t h : m.hidden) shape += "-" + std::to_string(h);
  shape += "-" + std::to_string(classes);
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.1f", static_cast<double>(params) * sizeof(float) / double(1ull << 30));
  const bool saturated = params == std::numeric_limits<std::uint64_t>::max();
  throw config_error(
      "model: " + m.kind + " " + shape + " has " + (saturated ? "more than 2^64" : std::to_string(params)) +
      " parameters (" + gib + " GiB per copy of the model), more than the limit of " +
      std::to_string(kMaxModelParams) + " (2^28)" +
      (m.kind == "mlp" ? "; use narrower or fewer hidden layers" : "; use fewer features or classes"));
}

bool is_torch_model(const std::string& kind) {
  return std::find(kTorchModels.begin(), kTorchModels.end(), kind) != kTorchModels.end();
}

}  // namespace qgossip
