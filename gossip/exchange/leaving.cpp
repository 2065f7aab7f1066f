#include "gossip/exchange/leaving.hpp"

#include <string>
#include <vector>

namespace qgossip {

leaving::leaving(exchange_core& core, async_gather* async) : core_(core), async_(async) {
  acked_.resize(core_.size());
  heard_.resize(core_.size());
  core_.handle_kind(message_kind::finished, *this);
  core_.handle_kind(message_kind::finished_ack, *this);
}

void leaving::on_message(std::size_t k, const wire_header& h, received_bytes&) {
  core_.stats().notice_bytes_received += kWireHeaderBytes;
  ++core_.stats().messages_delivered;
  if (h.kind == message_kind::finished) {
    handle_finished(k, h);
    return;
  }
  if (acked_[k]) ++core_.stats().duplicates;
  acked_[k] = true;
}

void leaving::on_readmit(std::size_t k, std::uint64_t) { acked_[k] = false; }

void leaving::handle_finished(std::size_t k, const wire_header& h) {
  if (core_.link(k).finished) {
    ++core_.stats().duplicates;
    return;
  }
  core_.mark_finished(k, h.iteration);
  // Tell it its finished message (and so everything it sent before) arrived: it may close its links
  // once every peer has said so. Best effort: without it, the peer leaves when this node's link closes.
  std::array<std::byte, kWireHeaderBytes> bytes{};
  encode_header(core_.header_for(message_kind::finished_ack, h.iteration, {}), {}, bytes);
  const int peer = core_.peer(k);
  if (status sent = core_.net().send_all(std::span<const int>(&peer, 1), bytes, {}); !sent) {
    core_.note("could not acknowledge rank " + std::to_string(peer) +
               "'s finished message: " + sent.to_string());
    return;
  }
  ++core_.stats().messages_sent;
  core_.stats().bytes_sent += kWireHeaderBytes;
  core_.stats().notice_bytes_sent += kWireHeaderBytes;
}

bool leaving::finished(int peer) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  return k && core_.link(*k).finished.has_value();
}

bool leaving::all_finished() const {
  for (std::size_t k = 0; k < core_.size(); ++k)
    if (!core_.link(k).dropped && !core_.link(k).finished) return false;
  return true;
}

status leaving::send_finished(std::uint64_t iteration) {
  encode_header(core_.header_for(message_kind::finished, iteration, {}), {}, header_);
  std::vector<int> live;
  for (std::size_t k = 0; k < core_.size(); ++k)
    if (core_.link_open(k)) live.push_back(core_.peer(k));
  if (live.empty()) return status::ok();
  return core_.send_outside_rounds(live, header_, {});
}

status leaving::finish(std::uint64_t iteration, transport_clock::time_point deadline,
                       const std::function<void()>& late) {
  if (status s = core_.usable(); !s) return s;
  core_.clock().drain();
  if (status sent = send_finished(iteration); !sent) return core_.fail(sent);
  const auto patience = deadline - transport_clock::now();
  if (async_) async_->take_delivered();  // from here on, only the late ones count
  std::string who;
  wait_plan plan{.deadline = deadline,
                 .poll = kHeardPoll,
                 .stopping = "stopped while waiting for the neighbours to finish"};
  status s = core_.wait(
      plan,
      [&](bool& done) {
        who = unfinished();
        done = who.empty();
        return status::ok();
      },
      [&](bool got, transport_clock::time_point slice_end) {
        if (async_ && async_->take_delivered() > 0) {  // a slower peer's last train messages
          if (late) late();
          plan.deadline = transport_clock::now() + patience;  // it is still running its rounds: wait on
        } else if (unfinished_heard()) {
          plan.deadline =
              transport_clock::now() + patience;  // alive, its next message held up on a slow path
        }
        if (got || slice_end < plan.deadline) return status::ok();
        return status::error(errc::timeout, "finished at iteration " + std::to_string(iteration) + ", but " +
                                                who + " had not finished by the deadline");
      });
  core_.flush_log_limits();
  if (s.code() == errc::timeout) return s;
  return s ? s : core_.fail(s);
}

bool leaving::done_with(std::size_t k) const {
  const neighbour_link& l = core_.link(k);
  return l.dropped || (l.finished && (acked_[k] || l.closed));
}

std::string leaving::unfinished() const {
  std::string who;
  for (std::size_t k = 0; k < core_.size(); ++k)
    if (!done_with(k))
      who +=
          (who.empty() ? "rank " : ", rank ") + std::to_string(core_.peer(k)) +
          (core_.link(k).finished ? " (finished, but had not confirmed this node's finished message)" : "");
  return who;
}

bool leaving::unfinished_heard() {
  const transport_liveness* liveness = core_.liveness();
  if (!liveness) return false;  // nothing to hear: every bytes_heard would be nullopt
  bool heard = false;
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (done_with(k)) continue;
    const std::optional<std::uint64_t> bytes = liveness->bytes_heard(core_.peer(k));
    if (bytes && heard_[k] && bytes != heard_[k]) heard = true;
    heard_[k] = bytes;
  }
  return heard;
}

}  // namespace qgossip
