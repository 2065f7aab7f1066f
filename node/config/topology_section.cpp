// The topology: section (node/config/sections.hpp): a graph kind and its size, or explicit edges
// and weights, and where each node listens: listed, at host + base_port, or taken from the Slurm
// step (nodes: {from: slurm}, node/config/slurm_step.hpp).
#include <algorithm>
#include <map>

#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

// Host names that mean the same address, so that "localhost" and "127.0.0.1" are one host when
// ports are compared.
std::string same_host_key(const std::string& host) {
  std::string h;
  for (char ch : host) h += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return h == "localhost" ? "127.0.0.1" : h;
}

// Where read_nodes found what the later checks may have to report.
struct node_positions {
  std::vector<YAML::Node> ports;  // per listed node: its port, or its mapping when the port defaults
  YAML::Node key;                 // the `nodes` key
  YAML::Node base_port;           // nodes: {from: ...}: its base_port's value, or the mapping
};

// topology.nodes: {from: slurm, base_port: P}: the hosts are resolved once n is known (place_nodes).
void read_node_source(yaml_reader& r, topology_config& t, const YAML::Node& nodes, node_positions& at) {
  yaml_reader nr(nodes, r, r.key_path("nodes"));
  if (!nr.has("from"))
    throw nr.error("topology.nodes: expected a list of {host, port, gpu}, or {from: slurm, base_port: P}");
  t.nodes_from = get_choice(nr, "from", node_source::slurm);
  t.base_port = get_int_in(nr, "base_port", t.base_port, 1, 65535);
  at.base_port = value_node(nr, "base_port");
  nr.finish();
  if (r.has("host"))
    throw r.error_at(value_node(r, "host"), "topology.host: not read with nodes: {from: " + to_text(*t.nodes_from) +
                                                "}, which takes every node's host from the Slurm step");
}

// topology.nodes: each node's host, port (default base_port + i) and GPU, or where they come from.
node_positions read_nodes(yaml_reader& r, topology_config& t) {
  node_positions at;
  auto nodes = r.child("nodes");
  if (!nodes) return at;
  at.key = r.key_node("nodes");
  if (nodes->IsMap()) {
    read_node_source(r, t, *nodes, at);
    return at;
  }
  if (!nodes->IsSequence())
    throw r.error_at(*nodes, "topology.nodes: expected a list of {host, port, gpu}, or {from: slurm, base_port: P}");
  if (nodes->size() > static_cast<std::size_t>(kMaxNodes))
    throw r.error_at(*nodes, "topology.nodes lists " + std::to_string(nodes->size()) + " nodes; at most " +
                                 std::to_string(kMaxNodes) + " are supported");
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const std::string path = "topology.nodes[" + std::to_string(i) + "]";
    yaml_reader nr((*nodes)[i], r, path);
    node_address a;
    a.host = nr.get_string("host", t.host);
    if (a.host.empty()) throw nr.error(path + ".host: empty host name");
    if (auto port = nr.child("port")) {
      a.port = get_int_in(nr, "port", 0, 1, 65535);
      at.ports.push_back(*port);
    } else {
      const std::int64_t p = std::int64_t{t.base_port} + static_cast<std::int64_t>(i);
      if (p > 65535)
        throw nr.error(path + ": no port given, and base_port + " + std::to_string(i) + " = " + std::to_string(p) +
                       " is past 65535 (give the node a port, or lower base_port)");
      a.port = static_cast<int>(p);
      at.ports.push_back((*nodes)[i]);
    }
    a.gpu = get_int_in(nr, "gpu", -1, -1, 1024);
    nr.finish();
    t.nodes.push_back(a);
  }
  return at;
}

// topology.edges (graph: edge_list) and topology.matrix (weights: explicit).
void read_edges_and_matrix(yaml_reader& r, topology_config& t) {
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
      for (std::size_t j = 0; j < row.size(); ++j) values.push_back(r.to_double(row[j], what + "[" + std::to_string(j) + "]"));
      t.matrix.push_back(std::move(values));
    }
  }
}

// The number of nodes, in 64 bits (a torus of 65536x32768 would overflow an int), refused above
// kMaxNodes (topology/graph.hpp: W is dense, the analysis O(n^3)).
int count_nodes(yaml_reader& r, const topology_config& t) {
  const std::string most = "; at most " + std::to_string(kMaxNodes) + " nodes are supported";
  const bool torus = t.graph == graph_kind::torus && t.rows > 0 && t.cols > 0;
  if (torus && std::int64_t{t.rows} * t.cols > kMaxNodes)
    throw r.error_at(value_node(r, "rows"), "topology: a torus of " + std::to_string(t.rows) + "x" +
                                                std::to_string(t.cols) + " has " +
                                                std::to_string(std::int64_t{t.rows} * t.cols) + " nodes" + most);
  if (t.graph == graph_kind::hypercube && t.dim > 0 && (std::int64_t{1} << t.dim) > kMaxNodes)
    throw r.error_at(value_node(r, "dim"), "topology: a hypercube of dim " + std::to_string(t.dim) + " has 2^" +
                                               std::to_string(t.dim) + " = " + std::to_string(std::int64_t{1} << t.dim) +
                                               " nodes" + most);
  if (t.matrix.size() > static_cast<std::size_t>(kMaxNodes))
    throw r.error_at(value_node(r, "matrix"), "topology.matrix has " + std::to_string(t.matrix.size()) + " rows" + most);
  const std::int64_t default_n = !t.nodes.empty()                            ? std::int64_t(t.nodes.size())
                                 : torus                                     ? std::int64_t{t.rows} * t.cols
                                 : t.graph == graph_kind::hypercube && t.dim > 0 ? std::int64_t{1} << t.dim
                                 : !t.matrix.empty()                         ? std::int64_t(t.matrix.size())
                                                                             : 0;
  const std::int64_t n = r.get_int("n", default_n);
  if (n > kMaxNodes) throw r.error_at(value_node(r, "n"), "topology.n: " + std::to_string(n) + " nodes" + most);
  const int count = static_cast<int>(in_range<std::int64_t>(r, "n", n, 0, kMaxNodes));
  if (count < 1 && t.nodes_from)
    throw r.error("topology: missing 'n' (the number of nodes: nodes: {from: " + to_text(*t.nodes_from) +
                  "} gives their hosts, the step must run n tasks)");
  if (count < 1) throw r.error("topology: missing 'n' (the number of nodes), or list them under 'nodes'");
  if (!t.nodes.empty() && static_cast<int>(t.nodes.size()) != count)
    throw r.error("topology: n is " + std::to_string(count) + " but 'nodes' lists " + std::to_string(t.nodes.size()));
  return count;
}

// nodes: {from: slurm}: node r at the host of the step's task r (of task r × g with topology.group_size
// g: its speaker's), port base_port + r. Every rank reads the same step-wide variables, so every rank
// resolves the same list.
void place_from_slurm(yaml_reader& r, topology_config& t, const node_positions& at, const env_lookup& env) {
  const int group = std::max(t.group_size, 1);
  const std::int64_t last = std::int64_t{t.base_port} + t.n - 1;
  if (last > 65535)
    throw r.error_at(at.base_port, "topology.nodes: base_port " + std::to_string(t.base_port) + " with n = " +
                                       std::to_string(t.n) + " puts node " + std::to_string(t.n - 1) + " on port " +
                                       std::to_string(last) + ", past 65535 (node r listens on base_port + r)");
  slurm_placement p;
  try {
    p = slurm_step_placement(env, t.n, group);
  } catch (const config_error& e) {
    throw r.error_at(at.key, "topology.nodes: " + e.message());
  }
  for (int i = 0; i < t.n; ++i)
    t.nodes.push_back({p.task_hosts[static_cast<std::size_t>(i) * static_cast<std::size_t>(group)], t.base_port + i, -1});
  t.nodes_origin = p.source;
}

// Without a node list every node is at host, base_port + r; with one, two nodes on one host cannot
// listen on one port (the second would fail to bind, or the neighbours reach the wrong node).
void place_nodes(yaml_reader& r, topology_config& t, const node_positions& at, const env_lookup& env) {
  if (t.nodes_from) return place_from_slurm(r, t, at, env);
  if (t.nodes.empty()) {
    const std::int64_t last = std::int64_t{t.base_port} + t.n - 1;
    if (last > 65535)
      throw r.error_at(value_node(r, "base_port"),
                       "topology: base_port " + std::to_string(t.base_port) + " with n = " + std::to_string(t.n) +
                           " puts node " + std::to_string(t.n - 1) + " on port " + std::to_string(last) +
                           ", past 65535 (node r listens on base_port + r): lower base_port");
    for (int i = 0; i < t.n; ++i) t.nodes.push_back({t.host, t.base_port + i, -1});
    return;
  }
  std::map<std::pair<std::string, int>, std::size_t> taken;
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const auto [it, fresh] = taken.emplace(std::pair{same_host_key(t.nodes[i].host), t.nodes[i].port}, i);
    if (!fresh)
      throw r.error_at(at.ports[i], "topology.nodes[" + std::to_string(i) + "]: " + t.nodes[i].host + ":" +
                                        std::to_string(t.nodes[i].port) + " is already node " +
                                        std::to_string(it->second) + "'s (" + t.nodes[it->second].host + ":" +
                                        std::to_string(t.nodes[it->second].port) +
                                        "); nodes on the same host need different ports");
  }
}

// nodes: the resolved list (run.json), or {from: slurm, base_port: P} as given (the run id).
void emit_nodes(YAML::Emitter& y, const topology_config& t, node_hosts hosts) {
  if (t.nodes_from && hosts == node_hosts::as_given) {
    y << YAML::Key << "nodes" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value
      << to_text(*t.nodes_from) << YAML::Key << "base_port" << YAML::Value << t.base_port << YAML::EndMap;
    return;
  }
  y << YAML::Key << "nodes" << YAML::Value;
  if (t.nodes_from)
    y << YAML::Comment("{from: " + to_text(*t.nodes_from) + ", base_port: " + std::to_string(t.base_port) +
                       "}, resolved from " + t.nodes_origin);
  y << YAML::BeginSeq;
  for (const auto& a : t.nodes)
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "host" << YAML::Value << a.host << YAML::Key << "port"
      << YAML::Value << a.port << YAML::Key << "gpu" << YAML::Value << a.gpu << YAML::EndMap;
  y << YAML::EndSeq;
}

}  // namespace

topology_config read_topology(yaml_reader& r, const env_lookup& env) {
  topology_config t;
  t.file = r.file();
  t.graph = get_choice(r, "graph", t.graph);
  t.weights = get_choice(r, "weights", t.weights);
  t.host = r.get_string("host", t.host);
  t.base_port = get_int_in(r, "base_port", t.base_port, 1, 65535);
  t.rows = get_int_in(r, "rows", 0, 0, 1 << 16);
  t.cols = get_int_in(r, "cols", 0, 0, 1 << 16);
  t.dim = get_int_in(r, "dim", 0, 0, 62);
  t.group_size = r.has("group_size") ? get_int_in(r, "group_size", 1, 1, 1 << 16) : 0;
  const node_positions at = read_nodes(r, t);
  read_edges_and_matrix(r, t);
  t.n = count_nodes(r, t);
  place_nodes(r, t, at, env);
  const bool explicit_weights = t.weights == weight_kind::explicit_matrix;
  if (explicit_weights && t.matrix.empty()) throw r.error("topology: weights: explicit needs 'matrix' (n rows of n weights)");
  if (!explicit_weights && !t.matrix.empty()) throw r.error("topology: 'matrix' is only read with weights: explicit");
  const bool edge_list = t.graph == graph_kind::edge_list;
  if (edge_list && t.edges.empty()) throw r.error("topology: graph: edge_list needs an 'edges' list");
  if (!edge_list && !t.edges.empty()) throw r.error("topology: 'edges' is only read with graph: edge_list");
  r.finish();
  return t;
}

void emit_topology(YAML::Emitter& y, const topology_config& t, node_hosts hosts) {
  y << YAML::BeginMap;
  y << YAML::Key << "graph" << YAML::Value << std::string(name_of(t.graph)) << YAML::Key << "n" << YAML::Value << t.n;
  if (t.graph == graph_kind::torus) y << YAML::Key << "rows" << YAML::Value << t.rows << YAML::Key << "cols" << YAML::Value << t.cols;
  if (t.graph == graph_kind::hypercube) y << YAML::Key << "dim" << YAML::Value << t.dim;
  if (!t.edges.empty()) {
    y << YAML::Key << "edges" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (auto [a, b] : t.edges) y << YAML::Flow << YAML::BeginSeq << a << b << YAML::EndSeq;
    y << YAML::EndSeq;
  }
  y << YAML::Key << "weights" << YAML::Value << std::string(name_of(t.weights));
  if (!t.matrix.empty()) {
    y << YAML::Key << "matrix" << YAML::Value << YAML::BeginSeq;
    for (const auto& row : t.matrix) y << YAML::Flow << row;
    y << YAML::EndSeq;
  }
  emit_nodes(y, t, hosts);
  if (t.group_size > 0) y << YAML::Key << "group_size" << YAML::Value << t.group_size;  // absent: run ids as before
  y << YAML::EndMap;
}

}  // namespace qgossip
