#pragma once
// What this node does with what its exchange tells it (gossip/exchange/events.hpp): train messages
// into the inbox (decoded once, as they arrive), failed peers to the departures part, notices and
// join messages to the membership's board (node/run/node_membership.hpp), which hands each item to
// the part registered for it, lines to the node's log, and the stop flag of SIGINT/SIGTERM. Parts a
// pattern lacks (no inbox for a ring; no returns unless nodes come back) are null: what they would
// hear keeps the exchange's default.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "gossip/exchange/events.hpp"
#include "node/run/message_inbox.hpp"
#include "node/run/node_membership.hpp"

namespace qgossip {

class link_events final : public exchange_events {
 public:
  link_events(int rank, node_membership& membership, message_inbox* inbox)
      : rank_(rank), membership_(membership), inbox_(inbox) {}

  void log(const std::string& line) override;
  bool stop_requested() override;
  status train_message(const wire_header& header, received_bytes& payload) override;
  status early_train_message(const wire_header& header, std::span<const std::byte> payload) override;
  bool peer_failed(int peer, const std::string& why, link_control& links) override;
  status notice(int from, std::span<const std::byte> payload, link_control& links) override;
  status join(int from, const wire_header& header, std::span<const std::byte> payload, link_control& links) override;
  void foreign_join(int from, std::uint64_t run_id, link_control& links) override;
  status dropped_peer_heard(int from) override;
  void waiting(std::span<const int> peers, std::chrono::milliseconds waited) override;
  // Ends the exchange's wait under way, from another thread (an overlapped round's, when the
  // program's loop fails meanwhile): stop_requested() is true from now on. Thread-safe.
  void cancel() { cancelled_ = true; }

 private:
  std::atomic<bool> cancelled_{false};
  int rank_;
  node_membership& membership_;
  message_inbox* inbox_;
};

}  // namespace qgossip
