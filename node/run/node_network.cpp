#include "node/run/node_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/hash.hpp"

namespace qgossip {

namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string ipc_endpoint(const run_config& c, int rank) {
  return "ipc:///tmp/qgossip-" + hex64(c.run_id) + "-" + std::to_string(rank);
}

}  // namespace

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

std::string bind_endpoint(const run_config& c, int rank) {
  if (c.network.transport == "ipc") return ipc_endpoint(c, rank);
  const auto& a = c.topology.nodes[static_cast<std::size_t>(rank)];
  return "tcp://" + std::string(is_loopback(a.host) ? "127.0.0.1" : "*") + ":" + std::to_string(a.port);
}

std::string peer_endpoint(const run_config& c, int peer) {
  if (c.network.transport == "ipc") return ipc_endpoint(c, peer);
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
  if (!nw.shaping.empty()) out += (out.empty() ? "" : "; ") + nw.shaping;
  return out.empty() ? "none" : out;
}

node_network::node_network(const run_config& c, int rank, const std::vector<int>& peers,
                           std::size_t largest_message, std::uint64_t lookahead)
    : linger_s_(c.network.linger_s),
      max_payload_(static_cast<std::uint32_t>(
          std::min<std::size_t>(largest_message, std::numeric_limits<std::uint32_t>::max()))) {
  zmq_options zo;
  zo.max_payload_bytes = max_payload_;
  zo.linger = to_ms(c.network.linger_s);
  zo.send_timeout = to_ms(c.network.round_timeout_s);
  zo.send_hwm = static_cast<int>(std::max<std::uint64_t>(16, 2 * lookahead + 4));
  zo.receive_hwm = zo.send_hwm;
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
