#include "node/cli/host_checks.hpp"

#include <algorithm>
#include <fstream>
#include <vector>

#include "node/run/node_network.hpp"

namespace qgossip {

std::optional<std::string> group_for_run_nodes(const run_config& c) {
  if (c.topology.group_size <= 1) return std::nullopt;
  return "topology.group_size: " + std::to_string(c.topology.group_size) +
         " processes a node is for a program's nodes (qgossip launch --exec, qgossip.Node; docs/python.md, "
         "\"Groups\"); a node of `qgossip run` is one process: remove it or set it to 1";
}

std::optional<std::string> foreign_host(const topology_config& t,
                                        const std::function<bool(int rank, const std::string& host)>& is_local) {
  for (std::size_t r = 0; r < t.nodes.size(); ++r) {
    const std::string& host = t.nodes[r].host;
    if (is_local(static_cast<int>(r), host)) continue;
    return "topology: node " + std::to_string(r) + "'s host " + host +
           " is not an address of this machine, and qgossip launch starts every node here; start each node on "
           "its own host with `qgossip run --config RUN.yaml --rank R` (README, \"Several hosts\"), or give "
           "--exec-prefix when the addresses live in network namespaces here (scripts/cluster.sh)";
  }
  return std::nullopt;
}

bool is_local_host(int rank, const std::string& host) {
  const std::vector<std::string> addresses = resolve_host(host, "rank " + std::to_string(rank));
  return std::any_of(addresses.begin(), addresses.end(), [](const std::string& a) { return is_local_address(a); });
}

std::optional<std::string> ephemeral_port_warning(const topology_config& t, std::pair<int, int> range) {
  std::vector<int> inside;
  for (const auto& node : t.nodes)
    if (node.port >= range.first && node.port <= range.second) inside.push_back(node.port);
  if (inside.empty()) return std::nullopt;
  return "warning: " + std::to_string(inside.size()) + " of the nodes' ports (from " + std::to_string(inside.front()) +
         ") lie in this kernel's ephemeral range " + std::to_string(range.first) + "-" + std::to_string(range.second) +
         " (/proc/sys/net/ipv4/ip_local_port_range), which the nodes' own outgoing connections take ports from: a "
         "node may fail at random with \"Address already in use\"; move topology.base_port below " +
         std::to_string(range.first) + " (e.g. --set topology.base_port=" +
         std::to_string(std::max(1024, range.first - static_cast<int>(t.nodes.size()) - 1000)) + ")";
}

std::optional<std::pair<int, int>> ephemeral_port_range_here() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (!(in >> low >> high) || low <= 0 || high < low) return std::nullopt;
  return std::make_pair(low, high);
}

}  // namespace qgossip
