// The exchange's front door (gossip/exchange.hpp): each call goes to the protocol that runs it
// (gossip/exchange/); what no single protocol owns (notices, dropping, the waits between rounds,
// restarting) is said here in a few lines over the core.
#include "gossip/exchange.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "core/errors.hpp"

namespace qgossip {

exchange::exchange(transport& t, exchange_options options, exchange_events* events)
    : core_(t, std::move(options), events ? *events : default_events_, *this),
      rounds_(core_),
      async_(core_.options().asynchronous ? std::make_unique<async_gather>(core_) : nullptr),
      leaving_(core_, async_.get()),
      rejoin_(core_) {}

status exchange::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                       std::vector<inbound_message>& out) {
  const auto& all = core_.options().neighbours;
  return rounds_.round(kind, iteration, msg, &out, round_peers{all, all});
}

status exchange::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                       std::vector<inbound_message>& out, const round_peers& peers) {
  return rounds_.round(kind, iteration, msg, &out, peers);
}

status exchange::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                       const round_peers& peers) {
  return rounds_.round(kind, iteration, msg, nullptr, peers);
}

status exchange::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                        std::vector<inbound_message>* out) {
  QG_ENFORCE(async_, "gather() is for asynchronous gossip");
  return async_->gather(iteration, msg, need, out);
}

status exchange::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                        std::span<const link_message> sends, std::vector<inbound_message>* out) {
  QG_ENFORCE(async_, "gather() is for asynchronous gossip");
  return async_->gather(iteration, msg, need, out, sends);
}

bool exchange::link_busy(int peer, std::uint64_t iteration) const {
  return async_ && async_->link_busy(peer, iteration);
}

bool exchange::takes_messages(int peer) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  return k && core_.link_open(*k);
}

std::uint64_t exchange::newest(int peer) const { return async_ ? async_->newest(peer) : 0; }

bool exchange::all_finished() const { return leaving_.all_finished(); }

status exchange::send_notice(std::span<const int> to, std::span<const std::byte> payload,
                             std::uint64_t iteration) {
  // Not to peers that finished and exited, nor to those refusing this node's key: nothing would
  // take the message, and it would linger (or block until the send time-out).
  std::vector<int> peers;
  const std::vector<int> refusing =
      core_.admission() ? core_.admission()->peers_refusing_this_node() : std::vector<int>();
  for (int p : to) {
    const std::optional<std::size_t> k = core_.index_of(p);
    if (!std::binary_search(refusing.begin(), refusing.end(), p) && (!k || !core_.link(*k).closed))
      peers.push_back(p);
  }
  if (peers.empty()) return status::ok();
  if (payload.size() > core_.options().max_payload_bytes)
    return status::error(errc::invalid,
                         "notice of " + std::to_string(payload.size()) + " bytes exceeds max_payload_bytes");
  std::array<std::byte, kWireHeaderBytes> header{};
  encode_header(core_.header_for(message_kind::notice, iteration, {.payload = payload}), payload, header);
  return core_.send_outside_rounds(peers, header, payload);
}

status exchange::finish(std::uint64_t iteration, transport_clock::time_point deadline,
                        const std::function<void()>& late) {
  return leaving_.finish(iteration, deadline, late);
}

bool exchange::finished(int peer) const { return leaving_.finished(peer); }

void exchange::drop(int peer) {
  if (const std::optional<std::size_t> k = core_.index_of(peer)) core_.drop(*k);
}

bool exchange::dropped(int peer) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  return k && core_.link(*k).dropped;
}

status exchange::send_join(int peer, std::uint64_t model_size, std::span<const std::byte> payload,
                           std::optional<std::uint64_t> run_id) {
  return rejoin_.send_join(peer, model_size, payload, run_id);
}

status exchange::send_state(int peer, std::uint64_t iteration, std::uint64_t model_size,
                            std::span<const float> values) {
  return rejoin_.send_state(peer, iteration, model_size, values);
}

bool exchange::take_state(int peer, std::uint64_t iteration, inbound_message& out) {
  return rejoin_.take_state(peer, iteration, out);
}

std::uint64_t exchange::state_bytes_received() const { return rejoin_.state_bytes_received(); }

status exchange::wait_until(transport_clock::time_point deadline, const std::function<bool()>& done) {
  if (status s = core_.usable(); !s) return s;
  wait_plan plan{.deadline = deadline, .stopping = "stopped while rejoining"};
  status s = core_.wait(
      plan,
      [&](bool& over) {
        over = done();
        return status::ok();
      },
      [&](bool got, transport_clock::time_point slice_end) {
        return got || slice_end < plan.deadline ? status::ok() : status::error(errc::timeout, "timed out");
      });
  core_.flush_log_limits();
  if (s.code() == errc::cancelled || s.code() == errc::timeout) return s;
  return s ? s : core_.fail(s);
}

status exchange::poll() {
  if (!core_.usable()) return status::ok();  // the round that failed says why
  status s = core_.drain();
  return s ? s : core_.fail(s);
}

bool exchange::heard_from(int peer) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  return k && core_.link(*k).delivered[exchange_core::kind_index(message_kind::train)].has_value();
}

void exchange::refresh_link(int peer) {
  if (core_.index_of(peer) && core_.liveness()) core_.liveness()->watch_peer(peer);
}

void exchange::readmit(int peer, std::uint64_t iteration) {
  const std::optional<std::size_t> k = core_.index_of(peer);
  QG_ENFORCE(k && iteration >= 1 && iteration > core_.clock().base(),
             "readmit rank " << peer << " at " << iteration << " while at iteration " << core_.clock().base());
  core_.readmit(*k, iteration);
}

void exchange::restart_at(std::uint64_t iteration) {
  QG_ENFORCE(iteration >= 1, "restart at " << iteration << " while at iteration " << core_.clock().base());
  core_.clock().restart_at(iteration);
}

}  // namespace qgossip
