#pragma once
// What this node does with what its exchange tells it (gossip/exchange/events.hpp): train messages
// into the inbox (decoded once, as they arrive), failed peers and notices to the failure handling
// (node/run/peer_failures.hpp), join messages to rejoining (node/run/rejoining.hpp), lines to the
// node's log, and the stop flag of SIGINT/SIGTERM. Parts a pattern lacks (no inbox for a ring, no
// rejoining unless nodes come back) are null: what they would hear keeps the exchange's default.
#include <cstdint>
#include <span>
#include <string>

#include "gossip/exchange/events.hpp"
#include "node/run/message_inbox.hpp"
#include "node/run/peer_failures.hpp"
#include "node/run/rejoining.hpp"

namespace qgossip {

class link_events final : public exchange_events {
 public:
  link_events(int rank, peer_failures& failures, message_inbox* inbox, rejoining* rejoin)
      : rank_(rank), failures_(failures), inbox_(inbox), rejoin_(rejoin) {}

  void log(const std::string& line) override;
  bool stop_requested() override;
  status train_message(const wire_header& header, std::span<const std::byte> payload) override;
  bool peer_failed(int peer, const std::string& why) override;
  status notice(int from, std::span<const std::byte> payload) override;
  status join(int from, const wire_header& header, std::span<const std::byte> payload) override;
  void foreign_join(int from, std::uint64_t run_id) override;
  status dropped_peer_heard(int from) override;

 private:
  int rank_;
  peer_failures& failures_;
  message_inbox* inbox_;
  rejoining* rejoin_;
};

}  // namespace qgossip
