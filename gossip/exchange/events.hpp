#pragma once
// What the exchange tells the node, and asks of it, while it receives (gossip/exchange.hpp): one
// typed interface, given at construction. node/run implements it (node/run/link_events.hpp); tests
// implement what they watch. Every method has a default that does what a node without an opinion
// wants, so an implementation overrides only what it handles. Called from inside the exchange's
// calls, on their thread, never later. A callback that may answer is handed the exchange as
// link_control (gossip/exchange/link_control.hpp): what it may do to the links in answer.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.hpp"
#include "gossip/exchange/link_control.hpp"
#include "gossip/received_bytes.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

class exchange_events {
 public:
  virtual ~exchange_events() = default;

  // One line per rejected, duplicate or expired message, and the transport's lines about refused
  // connections. Rejections are rate-limited per reason (a few lines per 10 s, then one line
  // counting the rest), so a flood of garbage cannot flood the log. Default: dropped.
  virtual void log(const std::string& line) {}
  // A round waits on past its deadline for `peers`, alive but silent (exchange_options::live_wait),
  // having waited `waited` since it began: once per round_deadline. Default: nothing.
  virtual void waiting(std::span<const int> peers, std::chrono::milliseconds waited) {}
  // Polled while the exchange waits (every kStopCheckInterval): true ends the wait with
  // errc::cancelled. The node passes its SIGINT/SIGTERM flag here. Default: never.
  virtual bool stop_requested() { return false; }

  // A train message that passed every check of the wire: the node decodes and keeps it (its inbox,
  // which may take the payload: move it out, leaving it empty for a caller that collects too) or
  // refuses it (then it is rejected, reason payload, and is a failure of its sender: peer_failed).
  // This is where a node's train messages go. Default: accepted (the caller collects them).
  virtual status train_message(const wire_header& header, received_bytes& payload) {
    return status::ok();
  }
  // A train message of a later round, checked as it arrives and kept until its round (a
  // synchronous round's neighbour one round ahead): an error is its refusal, as train_message's,
  // at once, so that nothing its sender sends after it (a notice) is read before it is refused.
  // train_message still takes it in its round. Default: accepted (checked then).
  virtual status early_train_message(const wire_header& header, std::span<const std::byte> payload) {
    return status::ok();
  }
  // A failed or misbehaving neighbour (docs/failures.md): its link was lost (the transport's
  // heartbeats or a closed connection: transport_liveness::take_lost_peers), a train message of it
  // was refused (it cannot send that round's message again), or max_rejected of the messages on its
  // link were rejected; why says which ("its link closed ..."). True drops it (exchange::drop) and
  // the round goes on without it; false ends the round with errc::peer_lost naming it
  // (network.on_peer_failure: stop). Default: false.
  virtual bool peer_failed(int peer, const std::string& why, link_control& links) { return false; }
  // The words peer_failed's `why` holds for a refused train message ("sent a train message for
  // iteration 10 that does not decode (...)"), which travel on in departure notices: a node that
  // learns of such a departure knows the rank was refused for what it sent (node/run/departures.hpp).
  static constexpr std::string_view kUndecodable = "that does not decode";
  // A valid notice (message_kind::notice) as it arrives, with its sender: errc::corrupt rejects it
  // (reason notice), another error ends the round with it. Default: ok (dropped, counted delivered).
  virtual status notice(int from, std::span<const std::byte> payload, link_control& links) { return status::ok(); }
  // Rejoining (docs/failures.md, "Rejoining"): a valid join message (message_kind::join) as it
  // arrives, also from a neighbour this node dropped, with its header (count: the sender's model
  // size) and payload (notice-format items). Errors as notice(). Default: ok (dropped).
  virtual status join(int from, const wire_header& header, std::span<const std::byte> payload,
                      link_control& links) {
    return status::ok();
  }
  // A message from a neighbour this node dropped arrived (it is rejected, reason departed): the
  // link to it moves again (a cut path healed, docs/failures.md). An error ends the round with it
  // (errc::rejoin: this node, cut off from the larger part of the run, asks to be admitted again).
  // Default: ok.
  virtual status dropped_peer_heard(int from) { return status::ok(); }
  // A neighbour's join message of another run (run id `run_id`; the message itself is rejected,
  // reason run_id): the node may answer it with exchange::send_join(..., run_id), which the joiner
  // can read. Default: nothing.
  virtual void foreign_join(int from, std::uint64_t run_id, link_control& links) {}
};

}  // namespace qgossip
