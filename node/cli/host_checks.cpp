#include "node/cli/host_checks.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

namespace qgossip {

std::optional<std::string> foreign_host(const topology_config& t,
                                        const std::function<bool(const std::string&)>& is_local) {
  for (std::size_t r = 0; r < t.nodes.size(); ++r) {
    const std::string& host = t.nodes[r].host;
    if (is_local(host)) continue;
    return "topology: node " + std::to_string(r) + "'s host " + host +
           " is not an address of this machine, and qgossip launch starts every node here; start each node on "
           "its own host with `qgossip run --config RUN.yaml --rank R` (README, \"Several hosts\"), or give "
           "--exec-prefix when the addresses live in network namespaces here (scripts/cluster.sh)";
  }
  return std::nullopt;
}

namespace {

// The address bytes of a sockaddr (IPv4 or IPv6), empty for other families.
std::string address_bytes(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(a);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof in->sin_addr);
  }
  if (a->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof in6->sin6_addr);
  }
  return {};
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return false;
}

}  // namespace

bool is_local_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> resolved(found, &freeaddrinfo);
  std::vector<std::string> mine;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) == 0) {
    for (const ifaddrs* i = interfaces; i; i = i->ifa_next)
      if (i->ifa_addr) mine.push_back(address_bytes(i->ifa_addr));
    freeifaddrs(interfaces);
  }
  for (const addrinfo* a = found; a; a = a->ai_next) {
    if (is_loopback(a->ai_addr)) return true;
    const std::string bytes = address_bytes(a->ai_addr);
    for (const std::string& m : mine)
      if (!bytes.empty() && m == bytes) return true;
  }
  return false;
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
