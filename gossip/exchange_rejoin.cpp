// The exchange's part in rejoining (docs/failures.md, "Rejoining"): join messages, which come even
// from a neighbour this node dropped, the join_state messages that re-create the copies on an edge,
// and taking a neighbour back from a given round on. The protocol itself (who offers, who accepts,
// which state goes where) is the node's: node/run/rejoining.hpp.
#include <algorithm>
#include <array>

#include "core/errors.hpp"
#include "gossip/exchange.hpp"

namespace qgossip {

std::optional<std::size_t> exchange::index_of(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) return std::nullopt;
  return static_cast<std::size_t>(it - nb.begin());
}

void exchange::handle_join(const wire_header& h) {
  stats_.notice_bytes_received += kWireHeaderBytes + h.payload_bytes;
  ++stats_.messages_delivered;
  if (!options_.on_join) return;
  if (status s = options_.on_join(static_cast<int>(h.sender), h, rx_.payload); !s) {
    if (s.code() == errc::corrupt) {
      reject(reject_reason::notice, static_cast<int>(h.sender), s.message());
      return;
    }
    if (pending_failure_.is_ok()) pending_failure_ = s;
  }
}

void exchange::hold_state(std::size_t k, const wire_header& h) {
  stats_.notice_bytes_received += kWireHeaderBytes + h.payload_bytes;
  ++stats_.messages_delivered;
  if (states_[k]) ++stats_.duplicates;  // superseded before anyone took it
  inbound_message& held = states_[k].emplace();
  held.header = h;
  std::swap(held.payload, rx_.payload);
}


status exchange::send_join(int peer, std::uint32_t model_size, std::span<const std::byte> payload,
                           std::optional<std::uint64_t> run_id) {
  if (!index_of(peer)) return status::error(errc::invalid, "rank " + std::to_string(peer) + " is not a neighbour");
  if (payload.size() > options_.max_payload_bytes)
    return status::error(errc::invalid, "join message of " + std::to_string(payload.size()) + " bytes");
  std::array<std::byte, kWireHeaderBytes> header{};
  wire_header h = header_for(message_kind::join, base_, {.count = model_size, .payload = payload});
  if (run_id) h.run_id = *run_id;
  encode_header(h, payload, header);
  const int to[1] = {peer};
  return send_outside_rounds(to, header, payload);
}

status exchange::send_state(int peer, std::uint64_t iteration, std::uint32_t model_size,
                            std::span<const float> values) {
  if (!index_of(peer)) return status::error(errc::invalid, "rank " + std::to_string(peer) + " is not a neighbour");
  const auto payload = std::as_bytes(values);
  if (payload.size() > options_.max_payload_bytes)
    return status::error(errc::invalid, "a state of " + std::to_string(payload.size()) +
                                            " bytes exceeds max_payload_bytes (network.max_message_mib)");
  std::array<std::byte, kWireHeaderBytes> header{};
  encode_header(header_for(message_kind::join_state, iteration, {.count = model_size, .payload = payload}), payload,
                header);
  const int to[1] = {peer};
  return send_outside_rounds(to, header, payload);
}

status exchange::wait_until(transport_clock::time_point deadline, const std::function<bool()>& done) {
  if (!failed_.is_ok())
    return status::error(errc::invalid, "the exchange is unusable after a failed round (" + failed_.to_string() + ")");
  std::vector<inbound_message> none;
  while (pending_failure_.is_ok() && !done()) {
    if (options_.should_stop && options_.should_stop())
      return status::error(errc::cancelled, "stopped while rejoining");
    const auto now = transport_clock::now();
    if (now >= deadline) return status::error(errc::timeout, "timed out");
    const auto slice_end = options_.should_stop ? std::min(deadline, now + kStopCheckInterval) : deadline;
    bool got = false;
    if (status s = receive_one(slice_end, message_kind::train, codec_expectation{}, none, got); !s) return fail(s);
  }
  if (options_.log) flush_log_limits();
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  return status::ok();
}

bool exchange::take_state(int peer, std::uint64_t iteration, inbound_message& out) {
  const auto k = index_of(peer);
  if (!k || !states_[*k]) return false;
  if (states_[*k]->header.iteration != iteration) {
    if (states_[*k]->header.iteration < iteration) states_[*k].reset();  // an earlier attempt's
    return false;
  }
  out = std::move(*states_[*k]);
  states_[*k].reset();
  return true;
}

status exchange::poll() {
  if (!failed_.is_ok()) return status::ok();  // the round that failed says why
  std::vector<inbound_message> none;
  for (bool got = true; got && pending_failure_.is_ok();)
    if (status s = receive_one(transport_clock::now(), message_kind::train, codec_expectation{}, none, got); !s)
      return fail(s);
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  return status::ok();
}

bool exchange::heard_from(int peer) const {
  const auto k = index_of(peer);
  return k && delivered_[*k][kind_index(message_kind::train)].has_value();
}

void exchange::refresh_link(int peer) {
  if (index_of(peer)) transport_.watch_peer(peer);
}

void exchange::restart_at(std::uint64_t iteration) {
  QG_ENFORCE(iteration >= 1 && iteration > base_, "restart at " << iteration << " while at iteration " << base_);
  base_ = iteration - 1;
  for (auto& last : last_round_) last = iteration - 1;
  started_ = true;
}

void exchange::readmit(int peer, std::uint64_t iteration) {
  const auto k = index_of(peer);
  QG_ENFORCE(k && iteration >= 1 && iteration > base_, "readmit rank " << peer << " at " << iteration
                                                                       << " while at iteration " << base_);
  dropped_[*k] = false;
  joins_at_[*k] = iteration;
  for (auto& d : delivered_[*k]) d = iteration - 1;
  for (auto& per_kind : buffered_[*k])
    for (slot& s : per_kind) s.used = false;
  finished_[*k].reset();
  acked_[*k] = false;
  closed_[*k] = false;
  rejected_on_link_[*k] = 0;
  // Its copies of this node were set when it was admitted: the link's messages count from there.
  last_sent_[*k] = iteration - 1;
  last_sent_bytes_[*k] = 0;
  taken_at_send_[*k].reset();
  transport_.watch_peer(peer);
  note("took rank " + std::to_string(peer) + " back: its messages count again from iteration " +
       std::to_string(iteration));
}

}  // namespace qgossip
