#pragma once
// The exchange's synchronous round (exchange::round, gossip/exchange.hpp): send this round's message
// to its peers, take theirs (early ones buffered, late ones refused), fail on a silent neighbour or
// drop it (drop_silent). It handles train messages (synchronous gossip) and probes.
//
// The iteration is the per-edge sequence number. A neighbour is at most `lookahead` rounds ahead,
// so a message for a later iteration up to that is buffered (per sender and kind) until its round;
// a repeat of a delivered (sender, kind, iteration) or anything older is a duplicate; anything
// further ahead is a gap, a protocol violation: rejected. A message for the current round from a
// peer not expected to send in it is rejected.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gossip/exchange/core.hpp"

namespace qgossip {

class sync_round final : public exchange_protocol {
 public:
  // Registers for probes, and for train messages unless the exchange is asynchronous.
  explicit sync_round(exchange_core& core);

  // exchange::round: train messages go to exchange_events::train_message, and also to *out when
  // out is given; probes to *out (REQUIRES: given).
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               std::vector<inbound_message>* out, const round_peers& peers);

  void on_message(std::size_t k, const wire_header& h, received_bytes& payload) override;
  void on_drop(std::size_t k) override;
  void on_finished(std::size_t k) override;
  void on_readmit(std::size_t k, std::uint64_t iteration) override;

 private:
  struct slot {  // a message buffered for a later round
    bool used = false;
    wire_header header;
    received_bytes payload;
    void release() {  // the payload's memory too: a slot keeps nothing between messages
      used = false;
      payload.clear();
    }
  };
  [[nodiscard]] status check_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                   const round_peers& peers) const;
  // The round's message to peers.send_to (each of msg.per_link its own), live links only.
  [[nodiscard]] status send_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                  const round_peers& peers, transport_clock::time_point start);
  [[nodiscard]] status send_payload(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                    std::span<const int> to, std::span<const std::byte> payload,
                                    transport_clock::time_point start);
  // out's slots for the peers of receive_from in the round, the messages buffered for it delivered
  // into them; returns how many the round expects.
  std::size_t expect_round(std::uint64_t iteration, std::span<const int> receive_from);
  // The wait's end at its deadline: the round's time-out, or its silent peers' failures, but for
  // those `spared` (alive: waited for, wait_for_live).
  status at_deadline(std::uint64_t iteration, std::size_t expected, std::chrono::milliseconds waited,
                     std::span<const int> spared = {});
  // At a deadline with live_wait on: true when the round waits on for its silent peers that are
  // alive (plan.deadline moved, exchange_events::waiting told), those not alive judged first
  // (dropped where drop_silent, else the round's time-out in `s`).
  bool wait_for_live(transport_clock::time_point start, wait_plan& plan, std::uint64_t iteration,
                     std::size_t expected, status& s);
  void buffer(std::size_t k, const wire_header& h, received_bytes& payload);
  void deliver(std::size_t k, const wire_header& h, received_bytes& payload);
  // Leaves peer k's entry of the round under way: no longer waited for, its message not delivered.
  void vacate(std::size_t k);
  void compact();
  void expire_before(std::uint64_t iteration);
  [[nodiscard]] status refused_by_all() const;
  [[nodiscard]] std::string silent_message(std::uint64_t iteration, std::chrono::milliseconds waited) const;

  exchange_core& core_;
  // The round under way (between rounds: a train round with no codec, delivering nowhere).
  message_kind kind_ = message_kind::train;
  codec_expectation codec_{};
  std::vector<inbound_message>* out_ = nullptr;
  // Per neighbour and kind, up to lookahead + 1 buffered messages (a message is buffered only for
  // iterations base .. base + lookahead).
  std::vector<std::array<std::vector<slot>, 2>> buffered_;
  std::vector<int> out_index_;  // per neighbour: its entry of the round (-1: not expected to send)
  std::vector<bool> filled_;
  std::vector<bool> vacated_;  // per entry: its peer was dropped mid-round
  std::size_t missing_ = 0;
  std::vector<int> live_send_;  // scratch: the round's send_to less dropped peers
  std::vector<int> alive_;      // scratch: the round's silent peers that are alive (wait_for_live)
  std::array<std::byte, kWireHeaderBytes> header_{};
};

}  // namespace qgossip
