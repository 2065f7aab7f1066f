#pragma once
// What the exchange counts (gossip/exchange.hpp): messages and bytes each way, what was rejected and
// why, and the time spent waiting and sending. Checkpoints carry the counters, so a resumed node's
// counts continue those of its checkpoint.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/state_io.hpp"

namespace qgossip {

// Why a received message was rejected.
enum class reject_reason : std::uint8_t {
  malformed,  // the transport could not split it into header and payload
  truncated,
  magic,
  version,
  payload_size,
  crc,
  skipped,  // not 0 on a message other than train (before wire version 6: `reserved` not 0)
  kind,
  run_id,
  sender,  // not a neighbour
  codec,
  codec_tag,
  count,
  peer_mismatch,  // the header's sender is not who the transport says sent it
  gap,            // an iteration two or more rounds ahead
  // Refused by the transport before receive() (transport_refusals; docs/security.md):
  auth,       // a connection whose CURVE key is not a neighbour's
  handshake,  // a connection that failed the handshake (not ZeroMQ, another mechanism, wrong key)
  identity,   // a message whose claimed routing id is not the rank its key proves
  payload,    // a train message the node refused (exchange_events::train_message: it does not decode)
  departed,   // from a neighbour this node dropped (drop(), exchange_events::peer_failed)
  notice,     // a notice (or join message) the node could not parse (exchange_events::notice, join)
  state,      // a join_state chunk that does not continue its state, or a state whose hash fails
};
inline constexpr std::size_t kRejectReasons = 22;
std::string_view to_string(reject_reason reason);

struct exchange_stats {
  std::uint64_t rounds = 0;                              // rounds completed
  std::uint64_t messages_sent = 0;                       // one per neighbour per round
  std::uint64_t bytes_sent = 0;                          // header + payload, every copy to every neighbour
  std::uint64_t probe_bytes_sent = 0;                    // the part of bytes_sent in probe messages
  std::uint64_t probe_bytes_received = 0;                // valid probe messages received (header + payload)
  std::uint64_t notice_bytes_sent = 0;                   // the part of bytes_sent in notices
  std::uint64_t notice_bytes_received = 0;               // valid notices received (header + payload)
  std::uint64_t messages_received = 0;                   // everything the transport delivered, valid or not
  std::uint64_t bytes_received = 0;                      // header + payload of those
  std::uint64_t messages_delivered = 0;                  // returned by round()
  std::uint64_t duplicates = 0;                          // repeats of delivered messages, or older iterations
  std::uint64_t expired = 0;                             // buffered for a round this node never ran
  std::array<std::uint64_t, kRejectReasons> rejected{};  // indexed by reject_reason; auth, handshake
                                                         // and identity are the transport's refusals
  std::chrono::nanoseconds wait_time{0};                 // inside transport receive()
  std::chrono::nanoseconds send_time{0};                 // inside transport send

  std::uint64_t rejected_for(reject_reason r) const { return rejected[static_cast<std::size_t>(r)]; }
  std::uint64_t rejected_total() const;
  // Every counter added (a resumed node's counters continue those of its checkpoint).
  exchange_stats& operator+=(const exchange_stats& o);
  // Checkpoints: every counter by its name. load_state also reads the positional form checkpoints
  // written before it had names ("exchange_counts", 10 or 12 counts, then "rejected", "wait_ns",
  // "send_ns"). Throws state_error for counts it cannot place.
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);
};

}  // namespace qgossip
