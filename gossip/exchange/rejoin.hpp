#pragma once
// The exchange's part in rejoining (docs/failures.md, "Rejoining"): join messages, which come even
// from a neighbour this node dropped (they go to exchange_events::join), and the join_state
// messages that re-create the copies on an edge, held until the node takes them. A state goes in
// chunks of at most exchange_options::max_chunk_bytes (gossip/exchange/state_chunks.hpp), put
// together again here; the node takes it whole. Who offers, who accepts and which state goes where
// is the node's: node/run/returns.hpp.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gossip/exchange/core.hpp"
#include "gossip/exchange/state_chunks.hpp"

namespace qgossip {

class rejoin_messages final : public exchange_protocol {
 public:
  // A state's chunks queued in the transport at once (transport_queues::wait_held_at_most); the
  // rest wait on this node's state, which send_state reads in place.
  static constexpr std::uint64_t kStateChunksInFlight = 2;

  // Registers for join and join_state messages, from dropped neighbours too.
  explicit rejoin_messages(exchange_core& core);

  // exchange::send_join, send_state and take_state.
  status send_join(int peer, std::uint64_t model_size, std::span<const std::byte> payload,
                   std::optional<std::uint64_t> run_id);
  status send_state(int peer, std::uint64_t iteration, std::uint64_t model_size,
                    std::span<const float> values);
  [[nodiscard]] bool take_state(int peer, std::uint64_t iteration, inbound_message& out);
  // Bytes of join_state chunks taken so far, from every neighbour: a state's transfer is alive while
  // this grows.
  [[nodiscard]] std::uint64_t state_bytes_received() const { return state_bytes_; }

  void on_message(std::size_t k, const wire_header& h, received_bytes& payload) override;

 private:
  status send_to(int peer, const wire_header& h, std::span<const std::byte> payload);

  void on_chunk(std::size_t k, const wire_header& h, std::span<const std::byte> payload);

  exchange_core& core_;
  std::vector<state_assembly> assemblies_;              // per neighbour: the state arriving
  std::vector<std::optional<inbound_message>> states_;  // per neighbour: its latest whole state
  std::uint64_t state_bytes_ = 0;                       // state_bytes_received
};

}  // namespace qgossip
