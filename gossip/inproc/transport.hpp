#pragma once
// The in-process transport: n ranks, each a thread of one process, joined by an inproc_network of
// mailboxes (one unbounded FIFO per rank). It is the test and simulation backend: messages are
// copied, never lost or reordered unless a faulty_transport wrapper says so, and a send never blocks.
// Of gossip/transport.hpp's interfaces it has the queue figures only: a send hands the message to
// the peer's mailbox, so nothing of it is ever held on this side (queued_bytes is 0), and there is
// no connection whose progress to count (bytes_taken and bytes_acknowledged are nullopt, "cannot
// tell": a 0 would be a connection that took nothing yet, a busy uplink).
// No link dies (no liveness) and nothing is refused (no admission).
//
//   inproc_network net(3);
//   inproc_transport t0 = net.endpoint(0);   // hand each endpoint to its rank's thread
//
// Thread safety: the network and different endpoints may be used from any threads concurrently;
// one endpoint is used by one thread at a time. Endpoints keep the network alive.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gossip/transport.hpp"

namespace qgossip {

namespace inproc_detail {
struct network_state;
}

class inproc_transport final : public transport, public transport_queues {
 public:
  inproc_transport(inproc_transport&&) noexcept = default;
  inproc_transport& operator=(inproc_transport&&) noexcept = default;
  ~inproc_transport() override = default;

  int rank() const { return rank_; }

  // errc::invalid for a peer outside [0, size) or this rank itself. The peer need not have taken
  // its endpoint yet: the message waits in its mailbox.
  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override;
  status receive(transport_clock::time_point deadline, inbound_frames& out) override;
  // Empty: the rank says it all.
  [[nodiscard]] std::string peer_address(int /*peer*/) const override { return {}; }
  [[nodiscard]] transport_liveness* liveness() override { return nullptr; }
  [[nodiscard]] transport_queues* queues() override { return this; }
  [[nodiscard]] transport_admission* admission() override { return nullptr; }

  [[nodiscard]] std::optional<std::size_t> queued_bytes(int /*peer*/) const override { return 0; }
  [[nodiscard]] std::optional<std::uint64_t> bytes_taken(int /*peer*/) const override { return std::nullopt; }
  [[nodiscard]] std::optional<std::uint64_t> bytes_acknowledged(int /*peer*/) const override {
    return std::nullopt;
  }

 private:
  friend class inproc_network;
  inproc_transport(std::shared_ptr<inproc_detail::network_state> net, int rank)
      : net_(std::move(net)), rank_(rank) {}

  std::shared_ptr<inproc_detail::network_state> net_;
  int rank_;
};

class inproc_network {
 public:
  // REQUIRES: size >= 1.
  explicit inproc_network(int size);

  int size() const;
  // The endpoint of rank. REQUIRES: 0 <= rank < size, and at most one live endpoint per rank (two
  // would steal each other's messages).
  inproc_transport endpoint(int rank);

 private:
  std::shared_ptr<inproc_detail::network_state> state_;
};

}  // namespace qgossip
