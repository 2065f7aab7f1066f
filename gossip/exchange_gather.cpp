// The exchange's asynchronous gather (gossip/exchange.hpp, gather()): send on the links that are
// not busy, take every neighbour's messages in order, wait only for the stale ones, and hold back
// while a link's backlog grows (flow control). The core is gossip/exchange.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "gossip/exchange.hpp"

namespace qgossip {

void exchange::deliver_in_order(std::size_t k, const wire_header& h, const codec_expectation& codec,
                                std::vector<inbound_message>& out) {
  auto& last = delivered_[k][kind_index(message_kind::train)];
  const std::uint64_t expected = last ? *last + 1 : 1;
  const int peer = options_.neighbours[k];
  if (h.iteration < expected) {
    ++stats_.duplicates;
    note("dropped a duplicate " + describe(h.kind, h.iteration) + " from rank " + std::to_string(peer));
    return;
  }
  // A sender whose uplink was busy sent nothing for h.skipped rounds before this one.
  if (h.skipped >= h.iteration || h.iteration - h.skipped != expected) {
    reject(reject_reason::gap, peer,
           describe(h.kind, h.iteration) + " after " + std::to_string(h.skipped) +
               " rounds without one, while its next was " + std::to_string(expected));
    return;
  }
  wire_check c = wire_check::ok;
  if (status st = check_codec(h, codec, &c); !st) {
    reject(reason_of(c), peer, describe(h.kind, h.iteration) + ": " + st.message());
    return;
  }
  if (options_.validate)
    if (status v = options_.validate(h, rx_.payload); !v) {
      reject(reject_reason::payload, peer, describe(h.kind, h.iteration) + ": " + v.message());
      peer_failed(k, "sent a " + describe(h.kind, h.iteration) + " that does not decode (" + v.message() + ")");
      return;
    }
  if (out.size() <= delivered_count_) out.resize(delivered_count_ + 1);
  out[delivered_count_].header = h;
  std::swap(out[delivered_count_].payload, rx_.payload);
  ++delivered_count_;
  last = h.iteration;
  ++stats_.messages_delivered;
}

std::uint64_t exchange::newest(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) return 0;
  return delivered_[static_cast<std::size_t>(it - nb.begin())][kind_index(message_kind::train)].value_or(0);
}

bool exchange::waiting_for(std::size_t k, std::uint64_t need) const {
  return !dropped_[k] && !finished_[k] && delivered_[k][kind_index(message_kind::train)].value_or(0) < need;
}

bool exchange::may_skip(std::size_t k, std::uint64_t iteration) const {
  const std::optional<std::uint64_t>& last = last_sent_[k];
  return last && iteration > *last && iteration - *last < kMaxSkipped;
}

bool exchange::link_busy(int peer, std::uint64_t iteration) const {
  const std::optional<std::size_t> k = index_of(peer);
  // A finished neighbour is no exception: it takes our messages until our last round, which sends
  // on every link, and a slow link to it is as busy as to any other.
  if (!k || !may_skip(*k, iteration) || !link_open(*k)) return false;
  const std::size_t last = last_sent_bytes_[*k];
  const std::optional<std::size_t> held = transport_.queued_bytes(peer);
  if (held && *held > last / 4) return true;
  // The last message not yet all taken by the operating system: the messaging library holds the
  // rest (its I/O thread not there yet, or the connection's send buffer full).
  const std::optional<std::uint64_t> taken = transport_.bytes_taken(peer);
  const std::optional<std::uint64_t>& before = taken_at_send_[*k];
  return taken && before && *taken >= *before && *taken - *before < last;
}

bool exchange::link_open(std::size_t k) const { return !dropped_[k] && !closed_[k]; }

bool exchange::takes_messages(int peer) const {
  const std::optional<std::size_t> k = index_of(peer);
  return k && link_open(*k);
}

status exchange::check_sends(std::uint64_t iteration, std::span<const link_message> sends) const {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const link_message& m = sends[i];
    if (!index_of(m.peer))
      return status::error(errc::invalid, "rank " + std::to_string(m.peer) + " is not a neighbour of rank " +
                                              std::to_string(options_.rank));
    for (std::size_t e = 0; e < i; ++e)
      if (sends[e].peer == m.peer)
        return status::error(errc::invalid,
                             "rank " + std::to_string(m.peer) + " is sent two messages in one round");
    if (m.payload.size() > options_.max_payload_bytes)
      return status::error(errc::invalid, "payload of " + std::to_string(m.payload.size()) +
                                              " bytes exceeds max_payload_bytes " +
                                              std::to_string(options_.max_payload_bytes));
  }
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k) {
    const int peer = options_.neighbours[k];
    const bool listed =
        std::any_of(sends.begin(), sends.end(), [&](const link_message& m) { return m.peer == peer; });
    const bool before_join = iteration < joins_at_[k];  // readmitted from a later round on
    if (!listed && link_open(k) && !before_join && !may_skip(k, iteration))
      return status::error(errc::invalid, describe(message_kind::train, iteration) +
                                              " sends nothing to rank " + std::to_string(peer) +
                                              ": before any message to it, or more rounds "
                                              "without one than the header counts (" +
                                              std::to_string(kMaxSkipped) + ")");
  }
  return status::ok();
}

status exchange::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                        std::vector<inbound_message>& out) {
  all_sends_.clear();
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k)
    if (link_open(k) && iteration >= joins_at_[k])
      all_sends_.push_back({options_.neighbours[k], msg.payload});
  return gather(iteration, msg, need, out, all_sends_);
}

status exchange::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                        std::vector<inbound_message>& out, std::span<const link_message> sends) {
  QG_ENFORCE(options_.asynchronous, "gather() is for asynchronous gossip");
  if (!failed_.is_ok())
    return status::error(errc::invalid, "the exchange is unusable after a failed round (" + failed_.to_string() + ")");
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  auto& last = last_round_[kind_index(message_kind::train)];
  if (last && iteration <= *last)
    return status::error(errc::invalid, describe(message_kind::train, iteration) + " after iteration " +
                                            std::to_string(*last) + ": rounds must not repeat or go back");
  if (status s = check_sends(iteration, sends); !s) return s;
  const auto waited = started_ ? options_.round_deadline : options_.first_deadline;
  const auto start = transport_clock::now();
  auto deadline = start + waited;
  if (!started_) first_gather_ = start;
  started_ = true;
  base_ = iteration;
  last = iteration;
  async_codec_ = {msg.codec, msg.codec_tag, msg.count};
  if (status sent = send_train(iteration, msg, sends, start); !sent) return fail(sent);
  delivered_count_ = 0;
  for (;;) {
    bool got = true;
    while (got && pending_failure_.is_ok())  // everything already here, without waiting
      if (status s = receive_one(transport_clock::now(), message_kind::train, async_codec_, out, got); !s) return fail(s);
    if (!pending_failure_.is_ok()) return fail(pending_failure_);
    if (status s = unheard_neighbours(); !s) return fail(s);
    bool waiting = false;
    for (std::size_t k = 0; k < options_.neighbours.size() && !waiting; ++k) waiting = waiting_for(k, need);
    // Flow control: no next round while a link still holds more than the last message sent on it
    // and the one before (nothing tells when it drains: look again every kBacklogPoll).
    bool backlogged = false;
    for (std::size_t k = 0; k < options_.neighbours.size() && !waiting && !backlogged; ++k)
      backlogged = link_backlogged(k, backlog_limit(k));
    if (!waiting && !backlogged) break;
    // A link that still drains, however slowly, is not a stall: the wait's deadline moves on.
    if (!waiting && backlog_progressed()) deadline = transport_clock::now() + waited;
    if (options_.should_stop && options_.should_stop())
      return fail(status::error(errc::cancelled, "stopped while waiting for round " + std::to_string(iteration)));
    auto slice_end = options_.should_stop ? std::min(deadline, transport_clock::now() + kStopCheckInterval) : deadline;
    if (!waiting) slice_end = std::min(slice_end, transport_clock::now() + kBacklogPoll);
    if (status s = receive_one(slice_end, message_kind::train, async_codec_, out, got); !s) return fail(s);
    if (!got && slice_end >= deadline)
      return fail(
          status::error(errc::timeout, waiting ? stale_message(need, waited) : backlog_message(waited)));
  }
  out.resize(delivered_count_);
  ++stats_.rounds;
  if (options_.log) flush_log_limits();
  return status::ok();
}

status exchange::unheard_neighbours() const {
  if (transport_clock::now() < first_gather_ + options_.first_deadline) return status::ok();
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k)
    if (waiting_for(k, 1)) return status::error(errc::timeout, stale_message(1, options_.first_deadline));
  return status::ok();
}

status exchange::send_train(std::uint64_t iteration, const outgoing_message& msg,
                            std::span<const link_message> sends, transport_clock::time_point start) {
  // Every peer still taking messages, a finished one included: it keeps its copy of us exact.
  status sent = status::ok();
  for (const link_message& m : sends) {
    const std::size_t k = *index_of(m.peer);
    if (!link_open(k)) continue;
    wire_header h = header_for(message_kind::train, iteration, msg);
    h.payload_bytes = static_cast<std::uint32_t>(m.payload.size());
    h.skipped = static_cast<std::uint16_t>(iteration - last_sent_[k].value_or(0) - 1);
    encode_header(h, m.payload, header_);
    taken_at_send_[k] = transport_.bytes_taken(m.peer);
    sent = transport_.send_all(std::span<const int>(&m.peer, 1), header_, m.payload);
    if (!sent) break;
    last_sent_[k] = iteration;
    last_sent_bytes_[k] = kWireHeaderBytes + m.payload.size();
    ++stats_.messages_sent;
    stats_.bytes_sent += last_sent_bytes_[k];
  }
  stats_.send_time += transport_clock::now() - start;
  return sent;
}

std::size_t exchange::backlog_limit(std::size_t k) const { return 2 * last_sent_bytes_[k]; }

bool exchange::link_backlogged(std::size_t k, std::size_t limit) const {
  if (!link_open(k) || finished_[k]) return false;
  const std::optional<std::size_t> held = transport_.queued_bytes(options_.neighbours[k]);
  return held && *held > limit;
}

bool exchange::backlog_progressed() {
  bool progressed = false;
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k) {
    if (!link_backlogged(k, backlog_limit(k))) continue;
    const std::optional<std::uint64_t> acked = transport_.bytes_acknowledged(options_.neighbours[k]);
    if (acked && acked != backlog_acked_[k]) progressed = true;
    backlog_acked_[k] = acked;
  }
  return progressed;
}

std::string exchange::backlog_message(std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k) {
    if (!link_backlogged(k, backlog_limit(k))) continue;
    const int peer = options_.neighbours[k];
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(peer) + " (" +
           std::to_string(transport_.queued_bytes(peer).value_or(0)) + " of " +
           std::to_string(backlog_limit(k)) + " bytes)";
  }
  return "the links to " + who + " still held more bytes of this node's messages than their last two " +
         "messages' after " + std::to_string(waited.count()) +
         " ms, none of them acknowledged by the neighbour's host meanwhile";
}

std::string exchange::stale_message(std::uint64_t need, std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k) {
    if (!waiting_for(k, need)) continue;
    const int peer = options_.neighbours[k];
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(peer);
    const std::string address = transport_.peer_address(peer);
    if (!address.empty()) who += " (" + address + "?)";
    who += " [at " + std::to_string(newest(peer)) + "]";
  }
  return "no message of iteration " + std::to_string(need) + " or later from " + who + " within " +
         std::to_string(waited.count()) + " ms";
}

}  // namespace qgossip
