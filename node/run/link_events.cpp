#include "node/run/link_events.hpp"

#include "node/run/run_control.hpp"

namespace qgossip {

void link_events::log(const std::string& line) { say(rank_, line); }

bool link_events::stop_requested() { return cancelled_ || qgossip::stop_requested(); }

// "waiting for rank 2: alive, 40 s behind" (network.stall_timeout_s).
void link_events::waiting(std::span<const int> peers, std::chrono::milliseconds waited) {
  std::string who;
  for (int p : peers) who += (who.empty() ? "rank " : ", rank ") + std::to_string(p);
  say(rank_, "waiting for " + who + ": alive, " + std::to_string(waited.count() / 1000) + " s behind");
}

// A message the inbox refuses (it does not decode, or is not finite) is the exchange's to reject and
// count, and a failure of its sender (exchange_events::kUndecodable in the cause, which makes it
// proven hostile: departures::proven_hostile).
status link_events::train_message(const wire_header& header, received_bytes& payload) {
  return inbox_ ? inbox_->accept(header, payload) : status::ok();
}

status link_events::early_train_message(const wire_header& header, std::span<const std::byte> payload) {
  return inbox_ ? inbox_->check(header, payload) : status::ok();
}

// Every pattern tells its peers why it stops, so that they stop naming the node that failed first
// (the centralized algorithms need every node: the config allows them only `stop`).
bool link_events::peer_failed(int peer, const std::string& why, link_control& links) {
  return membership_.left.failed(peer, why, links);
}

status link_events::notice(int from, std::span<const std::byte> payload, link_control& links) {
  return membership_.board.notice(from, payload, links);
}

status link_events::join(int from, const wire_header& header, std::span<const std::byte> payload,
                         link_control& links) {
  return membership_.back ? membership_.board.join_message(from, header.count, payload, links) : status::ok();
}

void link_events::foreign_join(int from, std::uint64_t run_id, link_control& links) {
  if (membership_.back) membership_.back->on_foreign_join(from, run_id, links);
}

status link_events::dropped_peer_heard(int from) {
  return membership_.back ? membership_.back->dropped_peer_heard(from) : status::ok();
}

}  // namespace qgossip
