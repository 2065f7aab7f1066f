#include "gossip/exchange/async_gather.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {

namespace {

// Flow control and the busy-uplink test read the transport's queue figures; without them a node
// would run ahead of a slow link unthrottled, so the exchange is not built.
const transport_queues& queue_figures(const exchange_core& core) {
  QG_ENFORCE(core.queues() != nullptr,
             "asynchronous gossip (exchange_options::asynchronous) needs a transport with queue figures "
             "for its flow control (transport::queues(): queued_bytes, bytes_taken, bytes_acknowledged), "
             "and this transport has none");
  return *core.queues();
}

}  // namespace

async_gather::async_gather(exchange_core& core) : core_(core), queues_(queue_figures(core)) {
  QG_ENFORCE(core_.options().asynchronous, "gather() is for asynchronous gossip");
  const std::size_t n = core_.size();
  last_sent_.resize(n);
  last_sent_bytes_.resize(n);
  taken_at_send_.resize(n);
  backlog_acked_.resize(n);
  core_.handle_kind(message_kind::train, *this);
}

void async_gather::on_message(std::size_t k, const wire_header& h, received_bytes& payload) {
  auto& last = core_.link(k).delivered[exchange_core::kind_index(message_kind::train)];
  const std::uint64_t expected = last ? *last + 1 : 1;
  const int peer = core_.peer(k);
  if (h.iteration < expected) {
    ++core_.stats().duplicates;
    core_.note("dropped a duplicate " + exchange_core::describe(h.kind, h.iteration) + " from rank " +
               std::to_string(peer));
    return;
  }
  // A sender whose uplink was busy sent nothing for h.skipped rounds before this one.
  if (h.skipped >= h.iteration || h.iteration - h.skipped != expected) {
    core_.reject(reject_reason::gap, peer,
                 exchange_core::describe(h.kind, h.iteration) + " after " + std::to_string(h.skipped) +
                     " rounds without one, while its next was " + std::to_string(expected));
    return;
  }
  if (!core_.accept(k, h, payload, codec_)) return;
  if (out_) {
    if (out_->size() <= delivered_) out_->resize(delivered_ + 1);
    (*out_)[delivered_].header = h;
    (*out_)[delivered_].payload = std::move(payload);
  }
  ++delivered_;
  ++delivered_since_;
  last = h.iteration;
  ++core_.stats().messages_delivered;
}

void async_gather::on_readmit(std::size_t k, std::uint64_t iteration) {
  // Its copies of this node were set when it was admitted: the link's messages count from there.
  last_sent_[k] = iteration - 1;
  last_sent_bytes_[k] = 0;
  taken_at_send_[k].reset();
}

std::size_t async_gather::take_delivered() { return std::exchange(delivered_since_, 0); }

std::uint64_t async_gather::newest(int peer) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  return k ? core_.link(*k).delivered[exchange_core::kind_index(message_kind::train)].value_or(0) : 0;
}

bool async_gather::waiting_for(std::size_t k, std::uint64_t need) const {
  const neighbour_link& l = core_.link(k);
  return !l.dropped && !l.finished &&
         l.delivered[exchange_core::kind_index(message_kind::train)].value_or(0) < need;
}

bool async_gather::may_skip(std::size_t k, std::uint64_t iteration) const {
  const std::optional<std::uint64_t>& last = last_sent_[k];
  return last && iteration > *last && iteration - *last < kMaxSkipped;
}

bool async_gather::link_busy(int peer, std::uint64_t iteration) const {
  const std::optional<std::size_t> k = core_.index_of(peer);
  // A finished neighbour is no exception: it takes our messages until our last round, which sends
  // on every link, and a slow link to it is as busy as to any other.
  if (!k || !may_skip(*k, iteration) || !core_.link_open(*k)) return false;
  const std::size_t last = last_sent_bytes_[*k];
  const std::optional<std::size_t> held = queues_.queued_bytes(peer);
  if (held && *held > last / 4) return true;
  // The last message not yet all taken by the operating system: the messaging library holds the
  // rest (its I/O thread not there yet, or the connection's send buffer full).
  const std::optional<std::uint64_t> taken = queues_.bytes_taken(peer);
  const std::optional<std::uint64_t>& before = taken_at_send_[*k];
  return taken && before && *taken >= *before && *taken - *before < last;
}

status async_gather::check_sends(std::uint64_t iteration, std::span<const link_message> sends) const {
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const link_message& m = sends[i];
    if (!core_.index_of(m.peer))
      return status::error(errc::invalid, "rank " + std::to_string(m.peer) + " is not a neighbour of rank " +
                                              std::to_string(core_.options().rank));
    for (std::size_t e = 0; e < i; ++e)
      if (sends[e].peer == m.peer)
        return status::error(errc::invalid,
                             "rank " + std::to_string(m.peer) + " is sent two messages in one round");
    if (m.payload.size() > core_.options().max_payload_bytes)
      return status::error(errc::invalid, "payload of " + std::to_string(m.payload.size()) +
                                              " bytes exceeds max_payload_bytes " +
                                              std::to_string(core_.options().max_payload_bytes));
  }
  for (std::size_t k = 0; k < core_.size(); ++k) {
    const int peer = core_.peer(k);
    const bool listed =
        std::any_of(sends.begin(), sends.end(), [&](const link_message& m) { return m.peer == peer; });
    const bool before_join = iteration < core_.link(k).joins_at;  // readmitted from a later round on
    if (!listed && core_.link_open(k) && !before_join && !may_skip(k, iteration))
      return status::error(errc::invalid, exchange_core::describe(message_kind::train, iteration) +
                                              " sends nothing to rank " + std::to_string(peer) +
                                              ": before any message to it, or more rounds "
                                              "without one than the header counts (" +
                                              std::to_string(kMaxSkipped) + ")");
  }
  return status::ok();
}

status async_gather::send_train(std::uint64_t iteration, const outgoing_message& msg,
                                std::span<const link_message> sends, transport_clock::time_point start) {
  // Every peer still taking messages, a finished one included: it keeps its copy of us exact.
  status sent = status::ok();
  for (const link_message& m : sends) {
    const std::size_t k = *core_.index_of(m.peer);
    if (!core_.link_open(k)) continue;
    wire_header h = core_.header_for(message_kind::train, iteration, msg);
    h.payload_bytes = m.payload.size();
    h.skipped = static_cast<std::uint16_t>(iteration - last_sent_[k].value_or(0) - 1);
    encode_header(h, m.payload, header_);
    taken_at_send_[k] = queues_.bytes_taken(m.peer);
    sent = core_.net().send_all_kept(std::span<const int>(&m.peer, 1), header_, m.payload, msg.owner_of(m.payload));
    if (!sent) break;
    last_sent_[k] = iteration;
    last_sent_bytes_[k] = kWireHeaderBytes + m.payload.size();
    ++core_.stats().messages_sent;
    core_.stats().bytes_sent += last_sent_bytes_[k];
  }
  core_.stats().send_time += transport_clock::now() - start;
  return sent;
}

status async_gather::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                            std::vector<inbound_message>* out) {
  all_sends_.clear();
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (!core_.link_open(k) || iteration < core_.link(k).joins_at) continue;
    const int peer = core_.peer(k);
    const auto own = std::find_if(msg.per_link.begin(), msg.per_link.end(),
                                  [peer](const link_message& m) { return m.peer == peer; });
    all_sends_.push_back({peer, own != msg.per_link.end() ? own->payload : msg.payload});
  }
  return gather(iteration, msg, need, out, all_sends_);
}

status async_gather::gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                            std::vector<inbound_message>* out, std::span<const link_message> sends) {
  if (status s = core_.usable(); !s) return s;
  if (!core_.pending().is_ok()) return core_.fail(core_.pending());
  round_clock& clock = core_.clock();
  if (status s = clock.check(message_kind::train, iteration, /*against_base=*/false); !s) return s;
  if (status s = check_sends(iteration, sends); !s) return s;
  const auto start = transport_clock::now();
  if (!clock.started()) first_gather_ = start;
  const auto waited =
      clock.begin(message_kind::train, iteration, core_.options().first_deadline, core_.options().round_deadline);
  codec_ = {msg.codec, msg.codec_tag, msg.count};
  if (status sent = send_train(iteration, msg, sends, start); !sent) return core_.fail(sent);
  out_ = out;
  delivered_ = 0;
  wait_plan plan{.deadline = start + waited,
                 .stopping = "stopped while waiting for round",
                 .round = iteration};
  bool waiting = false;
  status s = core_.wait(
      plan,
      [&](bool& done) {
        status looked = look(need, plan, waited, done);
        waiting = !done && plan.poll.count() == 0;
        return looked;
      },
      [&](bool got, transport_clock::time_point slice_end) {
        if (got || slice_end < plan.deadline || wait_for_live(need, waiting, start, plan)) return status::ok();
        return status::error(errc::timeout, waiting ? stale_message(need, waited) : backlog_message(waited));
      });
  if (out_) out_->resize(delivered_);
  out_ = nullptr;
  if (!s) return core_.fail(s);
  ++core_.stats().rounds;
  core_.flush_log_limits();
  return status::ok();
}

status async_gather::look(std::uint64_t need, wait_plan& plan, std::chrono::milliseconds waited, bool& done) {
  // What is already here, without waiting: up to kMostTakenPerLink messages per link, in all.
  if (status s = core_.drain(kMostTakenPerLink * core_.size()); !s) return s;
  if (status s = unheard_neighbours(); !s) return s;
  bool waiting = false;
  for (std::size_t k = 0; k < core_.size() && !waiting; ++k) waiting = waiting_for(k, need);
  // Flow control: no next round while a link still holds more than the last message sent on it
  // and the one before (nothing tells when it drains: look again every kBacklogPoll).
  bool backlogged = false;
  for (std::size_t k = 0; k < core_.size() && !waiting && !backlogged; ++k) backlogged = link_backlogged(k);
  done = !waiting && !backlogged;
  if (done) return status::ok();
  // A link that still drains, however slowly, is not a stall: the wait's deadline moves on.
  if (!waiting && backlog_progressed()) plan.deadline = transport_clock::now() + waited;
  plan.poll = waiting ? std::chrono::milliseconds{0} : kBacklogPoll;
  return status::ok();
}

bool async_gather::wait_for_live(std::uint64_t need, bool for_message, transport_clock::time_point start,
                                 wait_plan& plan) {
  const transport_liveness* liveness = core_.live_wait_open(start);
  if (!liveness) return false;
  alive_.clear();
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (!(for_message ? waiting_for(k, need) : link_backlogged(k))) continue;
    if (!liveness->alive(core_.peer(k))) return false;
    alive_.push_back(core_.peer(k));
  }
  if (alive_.empty()) return false;
  core_.wait_on_live(alive_, start, plan);
  return true;
}

status async_gather::unheard_neighbours() const {
  if (transport_clock::now() < first_gather_ + core_.options().first_deadline) return status::ok();
  for (std::size_t k = 0; k < core_.size(); ++k)
    if (waiting_for(k, 1))
      return status::error(errc::timeout, stale_message(1, core_.options().first_deadline));
  return status::ok();
}

std::size_t async_gather::backlog_limit(std::size_t k) const { return 2 * last_sent_bytes_[k]; }

bool async_gather::link_backlogged(std::size_t k) const {
  if (!core_.link_open(k) || core_.link(k).finished) return false;
  const std::optional<std::size_t> held = queues_.queued_bytes(core_.peer(k));
  return held && *held > backlog_limit(k);
}

bool async_gather::backlog_progressed() {
  bool progressed = false;
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (!link_backlogged(k)) continue;
    const std::optional<std::uint64_t> acked = queues_.bytes_acknowledged(core_.peer(k));
    if (acked && acked != backlog_acked_[k]) progressed = true;
    backlog_acked_[k] = acked;
  }
  return progressed;
}

std::string async_gather::backlog_message(std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (!link_backlogged(k)) continue;
    const int peer = core_.peer(k);
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(peer) + " (" +
           std::to_string(queues_.queued_bytes(peer).value_or(0)) + " of " +
           std::to_string(backlog_limit(k)) + " bytes)";
  }
  return "the links to " + who + " still held more bytes of this node's messages than their last two " +
         "messages' after " + std::to_string(waited.count()) +
         " ms, none of them acknowledged by the neighbour's host meanwhile";
}

std::string async_gather::stale_message(std::uint64_t need, std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < core_.size(); ++k) {
    if (!waiting_for(k, need)) continue;
    const int peer = core_.peer(k);
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(peer);
    const std::string address = core_.net().peer_address(peer);
    if (!address.empty()) who += " (" + address + "?)";
    who += " [at " + std::to_string(newest(peer)) + "]";
  }
  return "no message of iteration " + std::to_string(need) + " or later from " + who + " within " +
         std::to_string(waited.count()) + " ms";
}

}  // namespace qgossip
