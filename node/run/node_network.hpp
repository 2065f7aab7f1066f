#pragma once
// A node's links: the ZeroMQ transport bound at the node's address and connected to its peers,
// wrapped in link emulation (gossip/link_emulation.hpp) when network.emulate asks for it; and the
// endpoint names both sides agree on.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "gossip/link_emulation.hpp"
#include "gossip/zmq/transport.hpp"
#include "node/config/config.hpp"

namespace qgossip {

// Where rank listens: loopback runs stay on loopback, a multi-host run listens on every interface.
[[nodiscard]] std::string bind_endpoint(const run_config& c, int rank);
// Where a node connects to reach peer.
[[nodiscard]] std::string peer_endpoint(const run_config& c, int peer);
// How the run's network is shaped, for run.json: the transport's own emulation, shaping done
// outside qgossip (network.shaping, e.g. scripts/cluster.sh's tc), both, or "none".
[[nodiscard]] std::string shaping_description(const network_config& nw);

std::chrono::milliseconds to_ms(double seconds);

// network.pace_mbit (the egress link's rate, 10^6 bit/s, as tc counts it: headers included) as the
// transport's payload pace, bytes per second (zmq_options::pace_bytes_per_s): kPacePayloadShare of
// it, leaving the rest for the TCP/IP headers (66 bytes per 1448-byte segment) and the ACKs of what
// the node receives, so the shaper's queue stays empty. 0 for 0.
inline constexpr double kPacePayloadShare = 0.95;
[[nodiscard]] double pace_bytes_per_s(double pace_mbit);
// A fan-out of at most this many bytes leaves unpaced (zmq_options::unpaced_burst_bytes): what the
// link carries in kUnpacedBurstSeconds, half of TCP's minimum retransmission timeout (200 ms).
inline constexpr double kUnpacedBurstSeconds = 0.1;
[[nodiscard]] std::uint64_t unpaced_burst_bytes(double pace_mbit);

// The addresses `host` resolves to (numeric text, each once). Throws config_error "<who>'s host
// 'X' does not resolve (getaddrinfo: reason)" at once, instead of the connection being retried
// until the start time-out.
[[nodiscard]] std::vector<std::string> resolve_host(const std::string& host, const std::string& who);
// True when the numeric address is one of this machine's: an interface's (getifaddrs) or loopback
// (all of 127/8, ::1).
[[nodiscard]] bool is_local_address(const std::string& address);
// Over tcp (ipc names no hosts), before the node binds: this node's host and each peer's must
// resolve (config_error naming the host, the rank and its topology.nodes[r].host). This node's own
// host must be an address of this machine: a config_error when the node binds that address (a
// loopback host); when it listens on every interface (any other host) `warn` is told instead,
// since a routed or NAT'd name may still reach it.
void check_hosts(const run_config& c, int rank, const std::vector<int>& peers,
                 const std::function<void(const std::string&)>& warn);

// Where the run's CURVE keys are (docs/security.md): network.keys_dir, else <output.dir>/<name>/keys.
[[nodiscard]] std::filesystem::path keys_directory(const run_config& c);
// For `qgossip launch`: gives every rank 0..n-1 without a secret key in dir a fresh keypair
// (node-<r>.key, mode 0600, and node-<r>.pub), and a rank with a secret key but no public key its
// public key; keeps the rest. Returns how many keypairs it generated. Throws config_error.
int ensure_run_keys(const std::filesystem::path& dir, int n);
// The same for the ranks listed only (`qgossip keys --ranks`: a host makes its own ranks' keys).
int ensure_run_keys(const std::filesystem::path& dir, const std::vector<int>& ranks);
// For `qgossip keys`: fresh keypairs for the ranks listed in dir. Throws config_error when one of the
// files exists already, unless `replace`.
void write_run_keys(const std::filesystem::path& dir, const std::vector<int>& ranks, bool replace);
// This node's keys for the transport: its keypair (node-<rank>.key; node-<rank>.pub, when present,
// must match it) and the public key of each peer. Throws config_error naming the file that is
// missing, malformed, or readable by others.
[[nodiscard]] zmq_curve_keys load_node_keys(const run_config& c, int rank, const std::vector<int>& peers);

class node_network {
 public:
  // Binds and connects (throws config_error for a port in use, a bad endpoint, or, with
  // network.security curve, a missing or malformed key file). Messages up to largest_message bytes;
  // peers may run up to lookahead iterations ahead. With security none, prints a warning line.
  node_network(const run_config& c, int rank, const std::vector<int>& peers, std::size_t largest_message,
               std::uint64_t lookahead);

  [[nodiscard]] transport& link() { return emulated_ ? static_cast<transport&>(*emulated_) : *zmq_; }
  [[nodiscard]] std::uint64_t max_payload_bytes() const { return max_payload_; }
  // After a failure: what is still queued gets 250 ms more to leave, not network.linger_s, so that
  // exit does not linger, yet the notice just sent saying why reaches the live neighbours (with
  // linger 0 a neighbour could see the link close first and name this node, not the cause).
  void abandon_queued() { zmq_->abandon_queued(std::chrono::milliseconds{250}); }
  // After success: let messages still in the emulated link leave, up to network.linger_s.
  [[nodiscard]] status flush();

 private:
  double linger_s_;
  std::uint64_t max_payload_;
  std::unique_ptr<zmq_transport> zmq_;
  std::unique_ptr<emulated_link_transport> emulated_;
};

}  // namespace qgossip
