#include "node/run/node_network.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "gossip/zmq/curve_keys.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

// An address as family + raw bytes (comparable), with its text.
struct ip_address {
  int family = 0;
  std::string bytes;
  std::string text;
  bool operator<(const ip_address& o) const { return std::tie(family, bytes) < std::tie(o.family, o.bytes); }
};

std::optional<ip_address> to_ip(const sockaddr* sa) {
  if (!sa) return std::nullopt;
  char text[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return ip_address{AF_INET, std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof in->sin_addr),
                      text};
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return ip_address{
        AF_INET6, std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof in6->sin6_addr), text};
  }
  return std::nullopt;
}

bool is_loopback_address(const ip_address& a) {
  if (a.family == AF_INET) return static_cast<unsigned char>(a.bytes[0]) == 127;  // all of 127/8 is lo's
  return a.family == AF_INET6 && a.bytes == std::string(15, '\0') + '\1';
}

// This machine's addresses (every interface's, as getifaddrs lists them).
std::set<ip_address> local_addresses() {
  std::set<ip_address> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i; i = i->ifa_next)
    if (auto a = to_ip(i->ifa_addr)) out.insert(*a);
  freeifaddrs(list);
  return out;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string ipc_endpoint(const run_config& c, int rank) {
  return "ipc:///tmp/qgossip-" + hex64(c.run_id) + "-" + std::to_string(rank);
}

}  // namespace

std::vector<std::string> resolve_host(const std::string& host, const std::string& who) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0)
    throw config_error(
        who + "'s host '" + host + "' does not resolve (getaddrinfo: " +
        (rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : std::string(gai_strerror(rc))) + ")");
  std::vector<std::string> out;
  for (const addrinfo* a = found; a; a = a->ai_next)
    if (auto ip = to_ip(a->ai_addr); ip && std::find(out.begin(), out.end(), ip->text) == out.end())
      out.push_back(ip->text);
  freeaddrinfo(found);
  return out;
}

bool is_local_address(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0) return false;
  const std::optional<ip_address> ip = to_ip(found->ai_addr);
  freeaddrinfo(found);
  if (!ip) return false;
  return is_loopback_address(*ip) || local_addresses().count(*ip) > 0;
}

void check_hosts(const run_config& c, int rank, const std::vector<int>& peers,
                 const std::function<void(const std::string&)>& warn) {
  if (c.network.transport != transport_kind::tcp) return;
  const auto& nodes = c.topology.nodes;
  const std::string& where = c.topology.file.empty() ? c.file : c.topology.file;
  auto field = [](int r) { return "topology.nodes[" + std::to_string(r) + "].host"; };
  std::map<std::string, std::vector<std::string>> resolved;  // each host name once
  auto resolve = [&](int r) -> const std::vector<std::string>& {
    const std::string& host = nodes[static_cast<std::size_t>(r)].host;
    auto it = resolved.find(host);
    if (it != resolved.end()) return it->second;
    try {
      return resolved[host] = resolve_host(host, r == rank ? "this node's (rank " + std::to_string(r) + ")"
                                                           : "rank " + std::to_string(r));
    } catch (const config_error& e) {
      throw config_error(where, 0, 0, e.message() + "; check " + field(r));
    }
  };
  const std::vector<std::string>& own = resolve(rank);
  for (int p : peers) (void)resolve(p);

  if (std::any_of(own.begin(), own.end(), [](const std::string& a) { return is_local_address(a); })) return;
  std::string mine;
  for (const auto& a : local_addresses()) mine += (mine.empty() ? "" : ", ") + a.text;
  std::string theirs;
  for (const auto& a : own) theirs += (theirs.empty() ? "" : ", ") + a;
  const std::string& host = nodes[static_cast<std::size_t>(rank)].host;
  const std::string what = "rank " + std::to_string(rank) + "'s host '" + host + "' (" + theirs +
                           ") is not an address of this machine (" + (mine.empty() ? "none found" : mine) +
                           ")";
  const std::string bind = bind_endpoint(c, rank);
  if (bind.find('*') == std::string::npos)
    throw config_error(where, 0, 0,
                       what + ", so the node cannot listen on " + bind + ": start rank " +
                           std::to_string(rank) + " on " + host + ", or fix " + field(rank));
  warn("warning: " + what + "; the node listens on every interface (" + bind +
       "), but its neighbours will connect to " + host + ": start rank " + std::to_string(rank) +
       " on that host, or fix " + field(rank));
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

double pace_bytes_per_s(double pace_mbit) { return pace_mbit * 1e6 / 8 * kPacePayloadShare; }

std::uint64_t unpaced_burst_bytes(double pace_mbit) {
  return static_cast<std::uint64_t>(std::llround(pace_mbit * 1e6 / 8 * kUnpacedBurstSeconds));
}

std::string bind_endpoint(const run_config& c, int rank) {
  if (c.network.transport == transport_kind::ipc) return ipc_endpoint(c, rank);
  const auto& a = c.topology.nodes[static_cast<std::size_t>(rank)];
  return "tcp://" + std::string(is_loopback(a.host) ? "127.0.0.1" : "*") + ":" + std::to_string(a.port);
}

std::string peer_endpoint(const run_config& c, int peer) {
  if (c.network.transport == transport_kind::ipc) return ipc_endpoint(c, peer);
  const auto& a = c.topology.nodes[static_cast<std::size_t>(peer)];
  return "tcp://" + (a.host == "localhost" ? std::string("127.0.0.1") : a.host) + ":" + std::to_string(a.port);
}

std::string shaping_description(const network_config& nw) {
  std::string out;
  if (nw.emulate_rate_mbit > 0 || nw.emulate_delay_ms > 0) {
    std::ostringstream os;
    os << "transport link emulation (gossip/link_emulation.hpp): each node's egress ";
    if (nw.emulate_rate_mbit > 0) os << "paced at " << nw.emulate_rate_mbit << " Mbit/s";
    else os << "unpaced";
    os << ", " << nw.emulate_delay_ms << " ms one-way delay per message";
    out = os.str();
  }
  if (nw.pace_mbit > 0) {
    std::ostringstream os;
    os << "sender paced: each node's TCP connections together at most " << nw.pace_mbit
       << " Mbit/s (network.pace_mbit, SO_MAX_PACING_RATE)";
    out += (out.empty() ? "" : "; ") + os.str();
  }
  if (!nw.shaping.empty()) out += (out.empty() ? "" : "; ") + nw.shaping;
  return out.empty() ? "none" : out;
}

std::filesystem::path keys_directory(const run_config& c) {
  if (!c.network.keys_dir.empty()) return c.network.keys_dir;
  return std::filesystem::path(c.output_dir) / c.name / "keys";
}

int ensure_run_keys(const std::filesystem::path& dir, int n) {
  std::vector<int> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ensure_run_keys(dir, ranks);
}

int ensure_run_keys(const std::filesystem::path& dir, const std::vector<int>& ranks) {
  int made = 0;
  for (int r : ranks) {
    std::error_code ec;
    if (std::filesystem::exists(secret_key_path(dir, r), ec)) {
      if (!std::filesystem::exists(public_key_path(dir, r), ec))
        write_curve_public_key(dir, r, curve_public_key(read_curve_secret_key(secret_key_path(dir, r))));
      continue;
    }
    write_curve_keypair(dir, r, generate_curve_keypair());
    ++made;
  }
  return made;
}

void write_run_keys(const std::filesystem::path& dir, const std::vector<int>& ranks, bool replace) {
  if (!replace)
    for (int r : ranks)
      for (const auto& f : {secret_key_path(dir, r), public_key_path(dir, r)}) {
        std::error_code ec;
        if (std::filesystem::exists(f, ec))
          throw config_error(f.string() + " exists already: keep the keys there, or replace them all with --force "
                                          "(then copy them to every host again)");
      }
  for (int r : ranks) write_curve_keypair(dir, r, generate_curve_keypair());
}

zmq_curve_keys load_node_keys(const run_config& c, int rank, const std::vector<int>& peers) {
  const std::filesystem::path dir = keys_directory(c);
  zmq_curve_keys keys;
  const auto secret_file = secret_key_path(dir, rank);
  keys.secret_key = read_curve_secret_key(secret_file);
  keys.public_key = curve_public_key(keys.secret_key);
  std::error_code ec;
  if (const auto own = public_key_path(dir, rank); std::filesystem::exists(own, ec) &&
                                                   read_curve_public_key(own) != keys.public_key)
    throw config_error(own.string() + " does not match " + secret_file.string() +
                       ": the keys are from different generations; regenerate them all (`qgossip keys --force`) "
                       "and copy them to every host");
  for (int p : peers) keys.peers[p] = read_curve_public_key(public_key_path(dir, p));
  return keys;
}

node_network::node_network(const run_config& c, int rank, const std::vector<int>& peers,
                           std::size_t largest_message, std::uint64_t lookahead)
    : linger_s_(c.network.linger_s),
      max_payload_(largest_message) {
  zmq_options zo;
  zo.max_payload_bytes = max_payload_;
  zo.linger = to_ms(c.network.linger_s);
  zo.send_timeout = to_ms(c.network.round_timeout_s);
  zo.send_hwm = static_cast<int>(std::max<std::uint64_t>(16, 2 * lookahead + 4));
  zo.receive_hwm = zo.send_hwm;
  if (c.network.heartbeat_s > 0) {  // network.heartbeat_s: a link silent this long is lost (4 PINGs per period)
    zo.heartbeat_timeout = to_ms(c.network.heartbeat_s);
    zo.heartbeat_interval = std::max(std::chrono::milliseconds(10), zo.heartbeat_timeout / 4);
  }
  zo.pace_bytes_per_s = pace_bytes_per_s(c.network.pace_mbit);
  zo.unpaced_burst_bytes = unpaced_burst_bytes(c.network.pace_mbit);
  if (c.network.security == security_kind::curve)
    zo.curve = load_node_keys(c, rank, peers);
  else
    say(rank, "warning: network.security is none: links are neither authenticated nor encrypted, and any "
              "process that reaches this node's port can send it messages (docs/security.md)");
  std::map<int, std::string> endpoints;
  for (int j : peers) endpoints[j] = peer_endpoint(c, j);
  zmq_ = std::make_unique<zmq_transport>(rank, bind_endpoint(c, rank), endpoints, zo);
  link_emulation emulation;
  emulation.rate_bits_per_s = c.network.emulate_rate_mbit * 1e6;
  emulation.delay = std::chrono::microseconds(static_cast<std::int64_t>(std::llround(c.network.emulate_delay_ms * 1000)));
  if (!emulation.pass_through()) emulated_ = std::make_unique<emulated_link_transport>(*zmq_, emulation);
}

status node_network::flush() {
  if (!emulated_) return status::ok();
  return emulated_->flush(std::chrono::steady_clock::now() + to_ms(linger_s_));
}

}  // namespace qgossip
