#pragma once
// A node's links: the ZeroMQ transport bound at the node's address and connected to its peers,
// wrapped in link emulation (gossip/link_emulation.hpp) when network.emulate asks for it; and the
// endpoint names both sides agree on.
#include <chrono>
#include <cstddef>
#include <cstdint>
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

class node_network {
 public:
  // Binds and connects (throws config_error for a port in use or a bad endpoint). Messages up to
  // largest_message bytes; peers may run up to lookahead iterations ahead.
  node_network(const run_config& c, int rank, const std::vector<int>& peers, std::size_t largest_message,
               std::uint64_t lookahead);

  [[nodiscard]] transport& link() { return emulated_ ? static_cast<transport&>(*emulated_) : *zmq_; }
  [[nodiscard]] std::uint32_t max_payload_bytes() const { return max_payload_; }
  // After a failure: drop what is still queued so that exit does not linger.
  void abandon_queued() { zmq_->abandon_queued(); }
  // After success: let messages still in the emulated link leave, up to network.linger_s.
  [[nodiscard]] status flush();

 private:
  double linger_s_;
  std::uint32_t max_payload_;
  std::unique_ptr<zmq_transport> zmq_;
  std::unique_ptr<emulated_link_transport> emulated_;
};

}  // namespace qgossip
