#include "gossip/exchange/core.hpp"

#include <algorithm>
#include <utility>

#include "core/errors.hpp"

namespace qgossip {

namespace {

reject_reason reason_of(wire_check c) {
  switch (c) {
    case wire_check::ok:
    case wire_check::truncated:
      return reject_reason::truncated;
    case wire_check::magic:
      return reject_reason::magic;
    case wire_check::version:
      return reject_reason::version;
    case wire_check::payload_size:
      return reject_reason::payload_size;
    case wire_check::crc:
      return reject_reason::crc;
    case wire_check::skipped:
      return reject_reason::skipped;
    case wire_check::kind:
      return reject_reason::kind;
    case wire_check::run_id:
      return reject_reason::run_id;
    case wire_check::sender:
      return reject_reason::sender;
    case wire_check::codec:
      return reject_reason::codec;
    case wire_check::codec_tag:
      return reject_reason::codec_tag;
    case wire_check::count:
      return reject_reason::count;
  }
  return reject_reason::malformed;
}

}  // namespace

exchange_core::exchange_core(transport& t, exchange_options options, exchange_events& events, link_control& links)
    : transport_(t),
      liveness_(t.liveness()),
      queues_(t.queues()),
      admission_(t.admission()),
      options_(std::move(options)),
      events_(events),
      control_(links) {
  const auto& nb = options_.neighbours;
  QG_ENFORCE(options_.rank >= 0, "rank=" << options_.rank);
  QG_ENFORCE(std::adjacent_find(nb.begin(), nb.end(), std::greater_equal<>()) == nb.end(),
             "neighbours of rank " << options_.rank << " must be sorted and unique");
  QG_ENFORCE(!std::binary_search(nb.begin(), nb.end(), options_.rank),
             "rank " << options_.rank << " is its own neighbour");
  QG_ENFORCE(nb.empty() || nb.front() >= 0, "negative neighbour rank " << nb.front());
  QG_ENFORCE(options_.first_deadline.count() > 0 && options_.round_deadline.count() > 0,
             "first_deadline=" << options_.first_deadline.count()
                               << "ms round_deadline=" << options_.round_deadline.count() << "ms");
  QG_ENFORCE(options_.lookahead >= 1 && options_.lookahead <= 4096, "lookahead=" << options_.lookahead);
  expect_.run_id = options_.run_id;
  expect_.senders = options_.neighbours;
  expect_.max_payload_bytes = options_.max_payload_bytes;
  links_.resize(nb.size());
}

void exchange_core::handle_kind(message_kind kind, exchange_protocol& p, bool even_dropped) {
  const auto i = static_cast<std::size_t>(kind);
  QG_ENFORCE(i < kKinds, "message kind " << i);
  handlers_[i] = &p;
  even_dropped_[i] = even_dropped;
  if (std::find(protocols_.begin(), protocols_.end(), &p) == protocols_.end()) protocols_.push_back(&p);
}

std::optional<std::size_t> exchange_core::index_of(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it == nb.end() || *it != peer) return std::nullopt;
  return static_cast<std::size_t>(it - nb.begin());
}

bool exchange_core::in_round(std::size_t k, std::uint64_t iteration) const {
  const neighbour_link& l = links_[k];
  return !l.dropped && (!l.finished || *l.finished >= iteration) && iteration >= l.joins_at;
}

status exchange_core::usable() const {
  if (failed_.is_ok()) return status::ok();
  return status::error(errc::invalid,
                       "the exchange is unusable after a failed round (" + failed_.to_string() + ")");
}

std::string exchange_core::describe(message_kind kind, std::uint64_t iteration) {
  return std::string(to_string(kind)) + " message for iteration " + std::to_string(iteration);
}

void exchange_core::note(const std::string& line) {
  events_.log("rank " + std::to_string(options_.rank) + ": " + line);
}

void exchange_core::reject(reject_reason reason, int peer, const std::string& detail) {
  ++stats_.rejected[static_cast<std::size_t>(reason)];
  const std::optional<std::size_t> k = index_of(peer);
  if (k) ++links_[*k].rejected_this_round;
  flush_log_limits();
  if (reject_log_.allow(static_cast<std::size_t>(reason)))
    note("rejected a message from transport peer " + std::to_string(peer) + " (" +
         std::string(to_string(reason)) + "): " + detail);
  if (!k || links_[*k].dropped || reason == reject_reason::departed) return;
  if (++links_[*k].rejected_on_link == options_.max_rejected)
    peer_failed(*k, "sent " + std::to_string(options_.max_rejected) +
                        " messages that were rejected (network.max_rejected), the last: " +
                        std::string(to_string(reason)));
}

void exchange_core::peer_failed(std::size_t k, const std::string& why) {
  if (links_[k].dropped || !pending_failure_.is_ok()) return;
  const int p = peer(k);
  if (events_.peer_failed(p, why, control_)) {
    drop(k);
    return;
  }
  pending_failure_ = status::error(errc::peer_lost, "rank " + std::to_string(p) + " " + why);
}

void exchange_core::set_pending(const status& s) {
  if (pending_failure_.is_ok()) pending_failure_ = s;
}

void exchange_core::drop(std::size_t k) {
  if (links_[k].dropped) return;
  links_[k].dropped = true;
  for (exchange_protocol* p : protocols_) p->on_drop(k);
  if (liveness_) liveness_->forget_peer(peer(k));
  note("dropped rank " + std::to_string(peer(k)) + ": no round waits for it any more");
}

void exchange_core::mark_finished(std::size_t k, std::uint64_t last_iteration) {
  links_[k].finished = last_iteration;
  for (exchange_protocol* p : protocols_) p->on_finished(k);
}

void exchange_core::readmit(std::size_t k, std::uint64_t iteration) {
  neighbour_link& l = links_[k];
  l.dropped = false;
  l.joins_at = iteration;
  for (auto& d : l.delivered) d = iteration - 1;
  l.finished.reset();
  l.closed = false;
  l.rejected_on_link = 0;
  for (exchange_protocol* p : protocols_) p->on_readmit(k, iteration);
  if (liveness_) liveness_->watch_peer(peer(k));
  note("took rank " + std::to_string(peer(k)) + " back: its messages count again from iteration " +
       std::to_string(iteration));
}

status exchange_core::fail(status s) {
  if (s.code() == errc::rejoin) {  // not a failure: the node rejoins, then rounds go on (readmit)
    pending_failure_ = status::ok();
    return s;
  }
  failed_ = s;
  return s;
}

bool exchange_core::accept(std::size_t k, const wire_header& h, received_bytes& payload,
                           const codec_expectation& codec) {
  wire_check c = wire_check::ok;
  if (status s = check_codec(h, codec, &c); !s) {
    reject(reason_of(c), static_cast<int>(h.sender), describe(h.kind, h.iteration) + ": " + s.message());
    if (c == wire_check::count && h.kind == message_kind::train)  // it will never send this node's size
      peer_failed(k, "sends train messages of " + std::to_string(h.count) + " values where this node's have " +
                         std::to_string(codec.count) + ": its model is not the same as this node's");
    return false;
  }
  if (h.kind != message_kind::train) return true;
  if (status v = events_.train_message(h, payload); !v) {
    refused_train(k, h, v);
    return false;
  }
  return true;
}

bool exchange_core::check_early(std::size_t k, const wire_header& h, std::span<const std::byte> payload,
                                const codec_expectation& codec) {
  if (h.kind != message_kind::train || codec.count == 0 || !check_codec(h, codec).is_ok()) return true;
  if (status v = events_.early_train_message(h, payload); !v) {
    refused_train(k, h, v);
    return false;
  }
  return true;
}

void exchange_core::refused_train(std::size_t k, const wire_header& h, const status& why) {
  reject(reject_reason::payload, static_cast<int>(h.sender), describe(h.kind, h.iteration) + ": " + why.message());
  peer_failed(k, "sent a " + describe(h.kind, h.iteration) + " " + std::string(exchange_events::kUndecodable) +
                     " (" + why.message() + ")");
}

wire_header exchange_core::header_for(message_kind kind, std::uint64_t iteration,
                                      const outgoing_message& msg) const {
  wire_header h;
  h.kind = kind;
  h.run_id = options_.run_id;
  h.sender = static_cast<std::uint32_t>(options_.rank);
  h.count = msg.count;
  h.iteration = iteration;
  h.codec = msg.codec;
  h.codec_tag = msg.codec_tag;
  h.payload_bytes = msg.payload.size();
  return h;
}

status exchange_core::send_outside_rounds(std::span<const int> peers, std::span<const std::byte> header,
                                          std::span<const std::byte> payload) {
  const auto start = transport_clock::now();
  status sent = transport_.send_all(peers, header, payload);
  stats_.send_time += transport_clock::now() - start;
  const std::uint64_t bytes = peers.size() * (header.size() + payload.size());
  stats_.messages_sent += peers.size();
  stats_.bytes_sent += bytes;
  stats_.notice_bytes_sent += bytes;
  return sent;
}

const transport_liveness* exchange_core::live_wait_open(transport_clock::time_point start) const {
  const auto& bound = options_.live_wait;
  if (!bound || (bound->count() > 0 && transport_clock::now() - start >= *bound)) return nullptr;
  return liveness_;
}

void exchange_core::wait_on_live(std::span<const int> peers, transport_clock::time_point start, wait_plan& plan) {
  const auto now = transport_clock::now();
  events_.waiting(peers, std::chrono::duration_cast<std::chrono::milliseconds>(now - start));
  plan.deadline = now + options_.round_deadline;
  if (options_.live_wait->count() > 0) plan.deadline = std::min(plan.deadline, start + *options_.live_wait);
}

void exchange_core::flush_log_limits() {
  reject_log_.flush([this](std::size_t reason, std::uint64_t suppressed) {
    note("... and " + std::to_string(suppressed) + " more messages rejected (" +
         std::string(to_string(static_cast<reject_reason>(reason))) + ") within " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(reject_log_.window()).count()) +
         " s, not logged one by one");
  });
}

void exchange_core::absorb_refusals() {
  if (!admission_) return;  // nothing refused: the counts stay 0
  const transport_refusals r = admission_->refusals();
  stats_.rejected[static_cast<std::size_t>(reject_reason::auth)] = r.auth;
  stats_.rejected[static_cast<std::size_t>(reject_reason::handshake)] = r.handshake;
  stats_.rejected[static_cast<std::size_t>(reject_reason::identity)] = r.identity;
  refusal_lines_.clear();
  admission_->take_refusal_log(refusal_lines_);
  for (const std::string& line : refusal_lines_) note(line);
}

void exchange_core::take_lost_peers() {
  if (!liveness_) return;  // receive() reports no loss without it
  lost_.clear();
  liveness_->take_lost_peers(lost_);
  for (int p : lost_) {
    const std::optional<std::size_t> k = index_of(p);
    if (!k) continue;
    if (links_[*k].finished) {  // it completed its run and exited: no failure, and its messages stay
      links_[*k].closed = true;
      liveness_->forget_peer(p);
      continue;
    }
    const std::string cause = liveness_->loss_cause(p);
    peer_failed(*k, "stopped: " + (cause.empty() ? "its link closed or it answered no heartbeat" : cause) + " (" +
                        transport_.peer_address(p) + ")");
  }
}

}  // namespace qgossip

namespace qgossip {

status exchange_core::wait(wait_plan& plan, function_ref<status(bool& done)> before,
                           function_ref<status(bool got, transport_clock::time_point slice_end)> after) {
  for (;;) {
    if (!pending_failure_.is_ok()) return pending_failure_;
    bool done = false;
    if (status s = before(done); !s || done) return s;
    if (!pending_failure_.is_ok()) return pending_failure_;
    // Slices, so that a stop request is seen within kStopCheckInterval even when the signal that
    // raised it landed outside the transport's wait.
    if (events_.stop_requested())
      return status::error(errc::cancelled,
                           std::string(plan.stopping) + (plan.round ? " " + std::to_string(plan.round) : ""));
    const auto now = transport_clock::now();
    auto slice_end = std::min(plan.deadline, now + kStopCheckInterval);
    if (plan.poll.count() > 0) slice_end = std::min(slice_end, now + plan.poll);
    bool got = false;
    if (status s = receive_one(slice_end, got); !s) return s;
    if (status s = after(got, slice_end); !s) return s;
  }
}

status exchange_core::drain(std::size_t most) {
  for (bool got = true; got && most > 0 && pending_failure_.is_ok(); --most)
    if (status s = receive_one(transport_clock::now(), got); !s) return s;
  return pending_failure_;
}

status exchange_core::receive_one(transport_clock::time_point until, bool& got) {
  got = false;
  const auto wait_start = transport_clock::now();
  status s = transport_.receive(until, rx_);
  stats_.wait_time += transport_clock::now() - wait_start;
  absorb_refusals();
  if (s.code() == errc::timeout) return status::ok();
  got = true;
  if (s.code() == errc::corrupt) {
    reject(reject_reason::malformed, rx_.peer, s.message());
    return status::ok();
  }
  if (s.code() == errc::peer_lost) {
    take_lost_peers();
    return status::ok();
  }
  if (!s) return s;
  ++stats_.messages_received;
  stats_.bytes_received += rx_.header.size() + rx_.payload.size();
  handle();
  rx_.payload.clear();  // what no protocol took: nothing of a frame is kept between receives
  return status::ok();
}

void exchange_core::handle() {
  wire_header h;
  wire_check c = wire_check::ok;
  if (status s = parse_header(rx_.header, rx_.payload, expect_, h, &c); !s) {
    if (c == wire_check::run_id && h.kind == message_kind::join && index_of(rx_.peer))
      events_.foreign_join(rx_.peer, h.run_id, control_);  // told why, under its own run id
    reject(reason_of(c), rx_.peer, s.message());
    return;
  }
  if (rx_.peer != static_cast<std::int64_t>(h.sender)) {
    reject(reject_reason::peer_mismatch, rx_.peer,
           "the header names sender " + std::to_string(h.sender) + " but the link is from rank " +
               std::to_string(rx_.peer));
    return;
  }
  const std::size_t k = *index_of(static_cast<int>(h.sender));  // parse_header checked the senders
  const auto i = static_cast<std::size_t>(h.kind);
  if (links_[k].dropped && !even_dropped_[i]) {
    reject(reject_reason::departed, rx_.peer,
           describe(h.kind, h.iteration) + " from rank " + std::to_string(h.sender) +
               ", which this node dropped");
    if (status s = events_.dropped_peer_heard(static_cast<int>(h.sender)); !s) set_pending(s);
    return;
  }
  if (h.kind == message_kind::notice) {
    handle_notice(h);
    return;
  }
  if (handlers_[i])
    handlers_[i]->on_message(k, h, rx_.payload);
  else
    ++stats_.expired;  // a kind no protocol of this exchange takes
}

void exchange_core::handle_notice(const wire_header& h) {
  stats_.notice_bytes_received += kWireHeaderBytes + h.payload_bytes;
  ++stats_.messages_delivered;
  if (status s = events_.notice(static_cast<int>(h.sender), rx_.payload, control_); !s) {
    if (s.code() == errc::corrupt) {
      reject(reject_reason::notice, static_cast<int>(h.sender), s.message());
      return;
    }
    set_pending(s);
  }
}

}  // namespace qgossip
