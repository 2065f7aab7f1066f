#include "gossip/exchange/rejoin.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

namespace qgossip {

rejoin_messages::rejoin_messages(exchange_core& core) : core_(core) {
  assemblies_.resize(core_.size());
  states_.resize(core_.size());
  core_.handle_kind(message_kind::join, *this, /*even_dropped=*/true);
  core_.handle_kind(message_kind::join_state, *this, /*even_dropped=*/true);
}

void rejoin_messages::on_message(std::size_t k, const wire_header& h, received_bytes& payload) {
  core_.stats().notice_bytes_received += kWireHeaderBytes + h.payload_bytes;
  ++core_.stats().messages_delivered;
  if (h.kind == message_kind::join_state) {
    on_chunk(k, h, payload);
    return;
  }
  if (status s = core_.events().join(static_cast<int>(h.sender), h, payload, core_.links()); !s) {
    if (s.code() == errc::corrupt) {
      core_.reject(reject_reason::notice, static_cast<int>(h.sender), s.message());
      return;
    }
    core_.set_pending(s);
  }
}

// A state is held once its last chunk is in, with that chunk's header (kind, iteration, count).
void rejoin_messages::on_chunk(std::size_t k, const wire_header& h, std::span<const std::byte> payload) {
  state_assembly& a = assemblies_[k];
  if (status s = a.add(h.iteration, payload, core_.options().max_state_bytes); !s) {
    core_.reject(reject_reason::state, static_cast<int>(h.sender), s.message());
    return;
  }
  state_bytes_ += payload.size();
  if (!a.complete()) return;
  if (states_[k]) ++core_.stats().duplicates;  // superseded before anyone took it
  inbound_message& held = states_[k].emplace();
  held.header = h;
  held.payload = received_bytes(a.take());
}

status rejoin_messages::send_to(int peer, const wire_header& h, std::span<const std::byte> payload) {
  std::array<std::byte, kWireHeaderBytes> header{};
  encode_header(h, payload, header);
  const int to[1] = {peer};
  return core_.send_outside_rounds(to, header, payload);
}

status rejoin_messages::send_join(int peer, std::uint64_t model_size, std::span<const std::byte> payload,
                                  std::optional<std::uint64_t> run_id) {
  if (!core_.index_of(peer))
    return status::error(errc::invalid, "rank " + std::to_string(peer) + " is not a neighbour");
  if (payload.size() > core_.options().max_payload_bytes)
    return status::error(errc::invalid, "join message of " + std::to_string(payload.size()) + " bytes");
  wire_header h = core_.header_for(message_kind::join, core_.clock().base(), {.count = model_size, .payload = payload});
  if (run_id) h.run_id = *run_id;
  return send_to(peer, h, payload);
}

status rejoin_messages::send_state(int peer, std::uint64_t iteration, std::uint64_t model_size,
                                   std::span<const float> values) {
  if (!core_.index_of(peer))
    return status::error(errc::invalid, "rank " + std::to_string(peer) + " is not a neighbour");
  const std::size_t room = core_.options().max_payload_bytes;
  if (room <= kChunkHeaderBytes)
    return status::error(errc::invalid, "messages of at most " + std::to_string(room) + " bytes cannot carry a state");
  const std::size_t chunk = std::min(core_.options().max_chunk_bytes, room - kChunkHeaderBytes);
  // A few chunks in flight, not the whole state queued in the transport (each chunk a copy there):
  // before each, what the transport held when the state began plus kStateChunksInFlight − 1 chunks.
  transport_queues* queues = core_.net().queues();
  const std::uint64_t message = kWireHeaderBytes + kChunkHeaderBytes + chunk;
  const std::uint64_t room_before_each = (queues ? queues->held_bytes() : 0) + (kStateChunksInFlight - 1) * message;
  const auto patience = core_.options().round_deadline + slowest_message_time(kStateChunksInFlight * message);
  return send_chunks(std::as_bytes(values), chunk, [&](std::span<const std::byte> payload) {
    if (queues && !queues->wait_held_at_most(room_before_each, transport_clock::now() + patience))
      return status::error(errc::timeout, "rank " + std::to_string(peer) + " took none of this node's state for " +
                                              std::to_string(patience.count()) + " ms (its link or the node stalls)");
    return send_to(peer, core_.header_for(message_kind::join_state, iteration, {.count = model_size, .payload = payload}),
                   payload);
  });
}

bool rejoin_messages::take_state(int peer, std::uint64_t iteration, inbound_message& out) {
  const std::optional<std::size_t> k = core_.index_of(peer);
  if (!k || !states_[*k]) return false;
  std::optional<inbound_message>& held = states_[*k];
  if (held->header.iteration != iteration) {
    if (held->header.iteration < iteration) held.reset();  // an earlier attempt's
    return false;
  }
  out = std::move(*held);
  held.reset();
  return true;
}

}  // namespace qgossip
