// The exchange's synchronous round (gossip/exchange.hpp, round()): send this round's message to its
// peers, take theirs (early ones buffered, late ones refused), fail on a silent neighbour. The
// exchange's core (parsing, checks, counts) is gossip/exchange.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "gossip/exchange.hpp"

namespace qgossip {

void exchange::handle_round_message(std::size_t k, const wire_header& h, message_kind kind,
                                    const codec_expectation& codec, std::vector<inbound_message>& out) {
  if (h.skipped != 0) {  // synchronous rounds skip none
    reject(reject_reason::skipped, rx_.peer, describe(h.kind, h.iteration) + " says it follows " +
                                                 std::to_string(h.skipped) + " rounds without a message");
    return;
  }
  if (draining_) {  // after this node's last round (finish): for a round it will not run
    ++stats_.expired;
    return;
  }
  const std::size_t ki = kind_index(h.kind);
  const auto& last = delivered_[k][ki];
  if (h.iteration < base_ || (last && h.iteration <= *last)) {
    ++stats_.duplicates;
    note("dropped a duplicate " + describe(h.kind, h.iteration) + " from rank " + std::to_string(h.sender) +
         " (now at iteration " + std::to_string(base_) + ")");
    return;
  }
  if (h.iteration > base_ + options_.lookahead) {
    reject(reject_reason::gap, rx_.peer,
           describe(h.kind, h.iteration) + " while at iteration " + std::to_string(base_) +
               ": a neighbour can be at most " + std::to_string(options_.lookahead) + " round(s) ahead");
    return;
  }
  if (h.kind == message_kind::probe) stats_.probe_bytes_received += kWireHeaderBytes + h.payload_bytes;
  if (h.kind == kind && h.iteration == base_) {
    if (out_index_[k] < 0) {
      reject(reject_reason::sender, rx_.peer, describe(h.kind, h.iteration) + ": rank " + std::to_string(h.sender) +
                                                  " is not expected to send in this round");
      return;
    }
    deliver(k, h, rx_.payload, codec, out);
    return;
  }
  // Early: for the next iteration, or for another kind's round of this one.
  auto& slots = buffered_[k][ki];
  for (const slot& s : slots)
    if (s.used && s.header.iteration == h.iteration) {
      ++stats_.duplicates;
      note("dropped a duplicate " + describe(h.kind, h.iteration) + " from rank " + std::to_string(h.sender) +
           " (already buffered)");
      return;
    }
  // Used slots hold distinct iterations in [base_, base_ + lookahead] (older ones expired), so one is free.
  auto free = std::find_if(slots.begin(), slots.end(), [](const slot& s) { return !s.used; });
  QG_ENFORCE(free != slots.end(), "no free buffer slot for rank " << h.sender);
  free->used = true;
  free->header = h;
  std::swap(free->payload, rx_.payload);
}

status exchange::refused_by_all() const {
  const std::vector<int> refusing = transport_.peers_refusing_this_node();
  if (refusing.empty()) return status::ok();
  std::string who;
  for (std::size_t k = 0; k < out_index_.size(); ++k) {
    if (out_index_[k] < 0 || filled_[k]) continue;
    if (!std::binary_search(refusing.begin(), refusing.end(), options_.neighbours[k])) return status::ok();
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(options_.neighbours[k]);
  }
  if (who.empty()) return status::ok();
  return status::error(errc::refused, who + " refused this node's key (CURVE): it is not among the keys they allow "
                                      "(another run's keys, or a node not in their topology; docs/security.md)");
}

std::string exchange::silent_message(message_kind kind, std::uint64_t iteration,
                                     std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < filled_.size(); ++k) {
    if (filled_[k] || out_index_[k] < 0) continue;
    const int peer = options_.neighbours[k];
    if (!who.empty()) who += ", ";
    who += "rank " + std::to_string(peer);
    const std::string address = transport_.peer_address(peer);
    if (!address.empty()) who += " (" + address + "?)";
    if (rejected_this_round_[k] > 0)
      who += " [" + std::to_string(rejected_this_round_[k]) + " of its messages rejected, see the log]";
  }
  return std::string("no ") + (kind == message_kind::train ? "" : "probe ") + "message from " + who +
         " for iteration " + std::to_string(iteration) + " within " + std::to_string(waited.count()) + " ms";
}

status exchange::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                       std::vector<inbound_message>& out) {
  return round(kind, iteration, msg, out, round_peers{options_.neighbours, options_.neighbours});
}

status exchange::check_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                             const round_peers& peers) const {
  if (kind != message_kind::train && kind != message_kind::probe)
    return status::error(errc::invalid,
                         "unknown message kind " + std::to_string(static_cast<unsigned>(kind)));
  const auto& last = last_round_[kind_index(kind)];
  if ((started_ && iteration < base_) || (last && iteration <= *last))
    return status::error(errc::invalid, describe(kind, iteration) + " after iteration " +
                                            std::to_string(last && *last > base_ ? *last : base_) +
                                            ": rounds must not repeat or go back");
  if (msg.payload.size() > options_.max_payload_bytes)
    return status::error(errc::invalid, "payload of " + std::to_string(msg.payload.size()) +
                                            " bytes exceeds max_payload_bytes " +
                                            std::to_string(options_.max_payload_bytes));
  const auto& nb = options_.neighbours;
  for (std::span<const int> list : {peers.send_to, peers.receive_from})
    for (std::size_t i = 0; i < list.size(); ++i)
      if ((i > 0 && list[i] <= list[i - 1]) || !std::binary_search(nb.begin(), nb.end(), list[i]))
        return status::error(errc::invalid, "round peers must be sorted, unique neighbours; rank " +
                                                std::to_string(list[i]) + " is not");
  return status::ok();
}

status exchange::send_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                            std::span<const int> send_to, transport_clock::time_point start) {
  const auto& nb = options_.neighbours;
  encode_header(header_for(kind, iteration, msg), msg.payload, header_);
  live_send_.clear();
  for (int p : send_to) {
    const auto k = static_cast<std::size_t>(std::lower_bound(nb.begin(), nb.end(), p) - nb.begin());
    if (in_round(k, iteration) && !closed_[k]) live_send_.push_back(p);
  }
  if (!live_send_.empty()) {
    status sent = transport_.send_all(live_send_, header_, msg.payload);
    stats_.send_time += transport_clock::now() - start;
    if (!sent) return sent;
  }
  const std::uint64_t bytes = live_send_.size() * (kWireHeaderBytes + msg.payload.size());
  stats_.messages_sent += live_send_.size();
  stats_.bytes_sent += bytes;
  if (kind == message_kind::probe) stats_.probe_bytes_sent += bytes;
  return status::ok();
}

std::size_t exchange::expect_round(message_kind kind, std::uint64_t iteration, const codec_expectation& codec,
                                   std::span<const int> receive_from, std::vector<inbound_message>& out) {
  const auto& nb = options_.neighbours;
  std::fill(out_index_.begin(), out_index_.end(), -1);
  std::size_t expected = 0;
  for (int p : receive_from) {
    const auto k = static_cast<std::size_t>(std::lower_bound(nb.begin(), nb.end(), p) - nb.begin());
    if (in_round(k, iteration)) out_index_[k] = static_cast<int>(expected++);
  }
  out.resize(expected);
  vacated_.assign(expected, false);
  std::fill(filled_.begin(), filled_.end(), false);
  std::fill(rejected_this_round_.begin(), rejected_this_round_.end(), 0);
  missing_ = expected;
  for (std::size_t k = 0; k < nb.size(); ++k)
    for (slot& s : buffered_[k][kind_index(kind)])
      if (s.used && s.header.iteration == iteration) {
        s.used = false;
        if (out_index_[k] < 0)
          reject(reject_reason::sender, nb[k], describe(kind, iteration) + ": rank " + std::to_string(nb[k]) +
                                                   " is not expected to send in this round");
        else
          deliver(k, s.header, s.payload, codec, out);
      }
  return expected;
}

status exchange::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                       std::vector<inbound_message>& out, const round_peers& peers) {
  if (!failed_.is_ok())
    return status::error(errc::invalid,
                         "the exchange is unusable after a failed round (" + failed_.to_string() + ")");
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  if (status s = check_round(kind, iteration, msg, peers); !s) return s;
  const auto& nb = options_.neighbours;
  const auto waited = started_ ? options_.round_deadline : options_.first_deadline;
  const auto start = transport_clock::now();
  const auto deadline = start + waited;
  started_ = true;
  base_ = iteration;
  last_round_[kind_index(kind)] = iteration;
  expire_before(iteration);
  if (status sent = send_round(kind, iteration, msg, peers.send_to, start); !sent) return fail(sent);
  const codec_expectation codec{msg.codec, msg.codec_tag, msg.count};
  const std::size_t expected = expect_round(kind, iteration, codec, peers.receive_from, out);

  while (missing_ > 0 && pending_failure_.is_ok()) {
    if (options_.should_stop && options_.should_stop())
      return fail(status::error(errc::cancelled, "stopped while waiting for round " + std::to_string(iteration)));
    // With a stop check, wait in slices so a stop request is seen within kStopCheckInterval
    // even when the signal that raised it landed outside the transport's wait.
    const auto slice_end =
        options_.should_stop ? std::min(deadline, transport_clock::now() + kStopCheckInterval) : deadline;
    bool got = false;
    if (status s = receive_one(slice_end, kind, codec, out, got); !s) return fail(s);
    if (!got)
      if (status r = refused_by_all(); !r) return fail(r);
    if (!got && slice_end >= deadline) {
      const std::string silent = silent_message(kind, iteration, waited);
      // Every peer silent: this node is the one cut off (or nobody started); no peer is blamed.
      if (!options_.drop_silent || missing_ == expected) return fail(status::error(errc::timeout, silent));
      for (std::size_t k = 0; k < nb.size(); ++k)  // each a failure: dropped (continue) or the end
        if (out_index_[k] >= 0 && !filled_[k])
          peer_failed(k, "sent nothing for " + describe(kind, iteration) + " within " + std::to_string(waited.count()) + " ms");
    }
  }
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  compact(out);
  ++stats_.rounds;
  if (options_.log) flush_log_limits();
  return status::ok();
}

}  // namespace qgossip
