// The exchange's leaving (gossip/exchange.hpp, finish()): finished messages and their
// acknowledgements, and the wait until every live neighbour has finished and holds everything this
// node sent. The core is gossip/exchange.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "gossip/exchange.hpp"

namespace qgossip {

void exchange::handle_finished(std::size_t k, const wire_header& h) {
  stats_.notice_bytes_received += kWireHeaderBytes;
  ++stats_.messages_delivered;
  if (finished_[k]) {
    ++stats_.duplicates;
    return;
  }
  finished_[k] = h.iteration;
  if (out_index_[k] >= 0 && !filled_[k] && h.iteration < base_) {  // a round after its last stops waiting for it
    vacated_[static_cast<std::size_t>(out_index_[k])] = true;
    --missing_;
    out_index_[k] = -1;
  }
  // Tell it its finished message (and so everything it sent before) arrived: it may close its links
  // once every peer has said so. Best effort: without it, the peer leaves when this node's link closes.
  std::array<std::byte, kWireHeaderBytes> bytes{};
  encode_header(header_for(message_kind::finished_ack, h.iteration, {}), {}, bytes);
  const int peer = options_.neighbours[k];
  if (status sent = transport_.send_all(std::span<const int>(&peer, 1), bytes, {}); !sent) {
    note("could not acknowledge rank " + std::to_string(peer) + "'s finished message: " + sent.to_string());
    return;
  }
  ++stats_.messages_sent;
  stats_.bytes_sent += kWireHeaderBytes;
  stats_.notice_bytes_sent += kWireHeaderBytes;
}

void exchange::handle_finished_ack(std::size_t k) {
  stats_.notice_bytes_received += kWireHeaderBytes;
  ++stats_.messages_delivered;
  if (acked_[k]) ++stats_.duplicates;
  acked_[k] = true;
}

bool exchange::finished(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  return it != nb.end() && *it == peer && finished_[static_cast<std::size_t>(it - nb.begin())].has_value();
}

status exchange::finish(std::uint64_t iteration, transport_clock::time_point deadline,
                        const std::function<void(std::vector<inbound_message>&)>& late) {
  if (!failed_.is_ok())
    return status::error(errc::invalid, "the exchange is unusable after a failed round (" + failed_.to_string() + ")");
  draining_ = true;
  const auto& nb = options_.neighbours;
  encode_header(header_for(message_kind::finished, iteration, {}), {}, header_);
  live_send_.clear();
  for (std::size_t k = 0; k < nb.size(); ++k)
    if (link_open(k)) live_send_.push_back(nb[k]);
  if (!live_send_.empty()) {
    const auto start = transport_clock::now();
    status sent = transport_.send_all(live_send_, header_, {});
    stats_.send_time += transport_clock::now() - start;
    if (!sent) return fail(sent);
    stats_.messages_sent += live_send_.size();
    stats_.bytes_sent += live_send_.size() * kWireHeaderBytes;
    stats_.notice_bytes_sent += live_send_.size() * kWireHeaderBytes;
  }
  const auto patience = deadline - transport_clock::now();
  std::vector<inbound_message> arrived;
  auto unfinished = [&] {
    std::string who;
    for (std::size_t k = 0; k < nb.size(); ++k)
      if (!done_with(k))
        who += (who.empty() ? "rank " : ", rank ") + std::to_string(nb[k]) +
               (finished_[k] ? " (finished, but had not confirmed this node's finished message)" : "");
    return who;
  };
  while (pending_failure_.is_ok()) {
    const std::string who = unfinished();
    if (who.empty()) break;
    if (options_.should_stop && options_.should_stop())
      return fail(status::error(errc::cancelled, "stopped while waiting for the neighbours to finish"));
    const auto now = transport_clock::now();
    auto slice_end = options_.should_stop ? std::min(deadline, now + kStopCheckInterval) : deadline;
    slice_end = std::min(slice_end, now + kHeardPoll);
    bool got = false;
    delivered_count_ = 0;
    if (status s = receive_one(slice_end, message_kind::train, async_codec_, arrived, got); !s) return fail(s);
    if (delivered_count_ > 0) {  // a slower peer's last train messages (asynchronous gossip)
      arrived.resize(delivered_count_);
      if (late) late(arrived);
      deadline = transport_clock::now() + patience;  // it is still running its rounds: wait on
    } else if (unfinished_heard()) {
      deadline = transport_clock::now() + patience;  // alive, its next message held up on a slow path
    }
    if (!got && slice_end >= deadline)
      return status::error(errc::timeout, "finished at iteration " + std::to_string(iteration) + ", but " + who +
                                              " had not finished by the deadline");
  }
  if (options_.log) flush_log_limits();
  if (!pending_failure_.is_ok()) return fail(pending_failure_);
  return status::ok();
}

bool exchange::all_finished() const {
  for (std::size_t k = 0; k < dropped_.size(); ++k)
    if (!dropped_[k] && !finished_[k]) return false;
  return true;
}

// A peer is done with this node once it has finished (nothing more will come from it) and has
// acknowledged this node's finished message (it holds everything this node sent), or its link
// closed after it finished (it left, holding everything: it too waited for this node's finished).
bool exchange::done_with(std::size_t k) const {
  return dropped_[k] || (finished_[k] && (acked_[k] || closed_[k]));
}

bool exchange::unfinished_heard() {
  bool heard = false;
  for (std::size_t k = 0; k < options_.neighbours.size(); ++k) {
    if (done_with(k)) continue;
    const std::optional<std::uint64_t> bytes = transport_.bytes_heard(options_.neighbours[k]);
    if (bytes && heard_[k] && bytes != heard_[k]) heard = true;
    heard_[k] = bytes;
  }
  return heard;
}

}  // namespace qgossip
