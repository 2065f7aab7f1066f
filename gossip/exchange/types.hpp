#pragma once
// The exchange's vocabulary (gossip/exchange.hpp): its options, what a round sends and to whom, and
// what it delivers.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gossip/received_bytes.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

struct exchange_options {
  int rank = -1;
  std::vector<int> neighbours;  // sorted ascending, unique, without rank
  std::uint64_t run_id = 0;     // hash of the resolved config
  // Deadline of the first round, which also waits for the neighbours to start.
  std::chrono::milliseconds first_deadline{60000};
  // Deadline of every later round, counted from the start of round().
  std::chrono::milliseconds round_deadline{30000};
  // How many iterations ahead of the current one a peer's message is buffered (1: plain gossip).
  std::uint64_t lookahead = 1;
  // Largest payload sent or accepted (match zmq_options::max_payload_bytes).
  std::uint64_t max_payload_bytes = 256u << 20;
  // A rejoining state travels in chunks of at most this many of its bytes (network.max_message_mib;
  // at most max_payload_bytes less the chunk header), and one larger than max_state_bytes is refused.
  std::size_t max_chunk_bytes = 64u << 20;
  std::uint64_t max_state_bytes = std::uint64_t{1} << 32;
  // A neighbour whose link brought this many rejected messages misbehaves (exchange_events::
  // peer_failed); 0: never.
  std::uint32_t max_rejected = 16;
  // A neighbour silent at a round's deadline is a failure (exchange_events::peer_failed may drop it
  // and the round goes on) rather than the round's time-out, unless every peer of the round was silent
  // (then this node is the one cut off). Off: the round fails with errc::timeout.
  bool drop_silent = false;
  // A neighbour silent at a round's deadline but alive (transport_liveness::alive: a program busy
  // between two steps, an evaluation, a checkpoint) is waited for instead: the round goes on
  // waiting, telling exchange_events::waiting once per round_deadline, until its message comes, its
  // link is lost, or live_wait from the round's start has passed (0: no bound, for as long as it is
  // alive); then it is judged as a silent one is. nullopt: every silent peer is judged at the
  // deadline.
  std::optional<std::chrono::milliseconds> live_wait;
  // Asynchronous gossip (train.max_staleness > 0): train messages are delivered by gather(), each
  // peer's in its order (iteration = the previous one + 1; a gap is rejected), as they arrive, never
  // held for a round; round() is then for probes only.
  bool asynchronous = false;
};

inline constexpr std::chrono::milliseconds kStopCheckInterval{100};
// How often an asynchronous round waiting on flow control looks at its links' queues again.
inline constexpr std::chrono::milliseconds kBacklogPoll{2};
// How often exchange::finish looks whether a neighbour still running its rounds was heard from.
inline constexpr std::chrono::milliseconds kHeardPoll{500};
// An asynchronous round takes at most kMostTakenPerLink messages per link (in all: that many times
// its links, whichever they came on) of what has already arrived before it decides whether it may
// go on (async_gather::look); the rest stays queued for its next rounds. Without a bound a node far
// behind its neighbours could stay in one round while their next messages kept arriving as fast as
// it took them. 16 is the ZeroMQ transport's receive_hwm: a node up to 16 times slower than its
// neighbours still takes all their messages and holds them back by nothing.
inline constexpr std::size_t kMostTakenPerLink = 16;

// What a round sends on one link, to neighbour `peer`: a message per edge (outgoing_message::
// per_link; asynchronous gossip on a busy uplink: exchange::gather's sends). The payload must stay
// valid during the call.
struct link_message {
  int peer = -1;
  std::span<const std::byte> payload;
};

// What this node sends in a round. The payloads must stay valid during round() or gather().
struct outgoing_message {
  std::uint16_t codec = 0;
  std::uint32_t codec_tag = 0;
  std::uint64_t count = 0;
  std::span<const std::byte> payload;
  // Set: keeps `payload` valid past the round, so that the transport may send it without a copy
  // (transport::send_all_kept); the sender encodes anew into it only once nothing else holds it.
  std::shared_ptr<const void> payload_owner{};
  // A train round's message per edge, in both protocols (round() and gather()): each listed peer
  // gets its own payload in place of `payload`, with the same codec fields; every other peer the
  // round sends to gets `payload`. A listed peer must be one the round sends to, at most once.
  std::span<const link_message> per_link{};

  // What a send of p may keep: payload_owner when p is `payload` itself, else none (a copy).
  [[nodiscard]] std::shared_ptr<const void> owner_of(std::span<const std::byte> p) const {
    return payload_owner && p.data() == payload.data() ? payload_owner : nullptr;
  }
};

// Who a directed round talks to: sorted, unique subsets of the exchange's neighbours.
struct round_peers {
  std::span<const int> send_to;
  std::span<const int> receive_from;
};

// A validated message from one neighbour, for a caller that collects its round's messages.
struct inbound_message {
  wire_header header;
  received_bytes payload;  // handed over by the exchange (moved, not copied)
};

}  // namespace qgossip
