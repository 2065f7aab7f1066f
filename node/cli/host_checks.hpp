#pragma once
// Checks `qgossip launch` (and `qgossip run`) make before a node starts:
//  - a node of `qgossip run` is one process: topology.group_size > 1 is for a program's nodes
//    (--exec, qgossip.Node; docs/python.md, "Groups");
//  - every node's host must be an address of this machine, for the launcher starts every node here
//    (a host elsewhere would leave its neighbours waiting start_timeout_s for it);
//  - a node's port inside the kernel's ephemeral range (net.ipv4.ip_local_port_range) may be taken
//    at random by the nodes' own outgoing connections ("Address already in use" now and then).
// The decisions take their facts as arguments (the machine's addresses, the range), so they are
// tested without this machine's; the *_here functions read them from the system.
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "node/config/config.hpp"

namespace qgossip {

// The first node whose host `is_local` says is not this machine, as an error message; nullopt when
// every host is here.
[[nodiscard]] std::optional<std::string> foreign_host(
    const topology_config& t, const std::function<bool(int rank, const std::string& host)>& is_local);
// True when `host` resolves to a loopback address or to an address of one of this machine's
// interfaces (node/run/node_network.hpp: resolve_host, is_local_address). Throws config_error
// naming rank's host when it does not resolve.
[[nodiscard]] bool is_local_host(int rank, const std::string& host);

// With topology.group_size > 1, the error for nodes of `qgossip run` (one process each); else nullopt.
[[nodiscard]] std::optional<std::string> group_for_run_nodes(const run_config& c);

// A warning naming the nodes' ports that fall inside `range` (low, high), or nullopt.
[[nodiscard]] std::optional<std::string> ephemeral_port_warning(const topology_config& t,
                                                                std::pair<int, int> range);
// /proc/sys/net/ipv4/ip_local_port_range, or nullopt when it cannot be read.
[[nodiscard]] std::optional<std::pair<int, int>> ephemeral_port_range_here();

}  // namespace qgossip
