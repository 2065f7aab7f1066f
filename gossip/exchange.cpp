#include "gossip/exchange.hpp"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {

reject_reason exchange::reason_of(wire_check c) {
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

std::string exchange::describe(message_kind kind, std::uint64_t iteration) {
  return std::string(to_string(kind)) + " message for iteration " + std::to_string(iteration);
}

std::string_view to_string(reject_reason reason) {
  switch (reason) {
    case reject_reason::malformed:
      return "malformed";
    case reject_reason::truncated:
      return "truncated";
    case reject_reason::magic:
      return "magic";
    case reject_reason::version:
      return "version";
    case reject_reason::payload_size:
      return "payload_size";
    case reject_reason::crc:
      return "crc";
    case reject_reason::skipped:
      return "skipped";
    case reject_reason::kind:
      return "kind";
    case reject_reason::run_id:
      return "run_id";
    case reject_reason::sender:
      return "sender";
    case reject_reason::codec:
      return "codec";
    case reject_reason::codec_tag:
      return "codec_tag";
    case reject_reason::count:
      return "count";
    case reject_reason::peer_mismatch:
      return "peer_mismatch";
    case reject_reason::gap:
      return "gap";
    case reject_reason::auth:
      return "auth";
    case reject_reason::handshake:
      return "handshake";
    case reject_reason::identity:
      return "identity";
    case reject_reason::payload:
      return "payload";
    case reject_reason::departed:
      return "departed";
    case reject_reason::notice:
      return "notice";
  }
  return "unknown";
}

std::uint64_t exchange_stats::rejected_total() const {
  return std::accumulate(rejected.begin(), rejected.end(), std::uint64_t{0});
}

namespace {

// Every counter of exchange_stats with its name, for += and the checkpoints.
using counter = std::uint64_t exchange_stats::*;
constexpr std::pair<const char*, counter> kCounters[] = {
    {"traffic.rounds", &exchange_stats::rounds},
    {"traffic.messages_sent", &exchange_stats::messages_sent},
    {"traffic.bytes_sent", &exchange_stats::bytes_sent},
    {"traffic.probe_bytes_sent", &exchange_stats::probe_bytes_sent},
    {"traffic.probe_bytes_received", &exchange_stats::probe_bytes_received},
    {"traffic.notice_bytes_sent", &exchange_stats::notice_bytes_sent},
    {"traffic.notice_bytes_received", &exchange_stats::notice_bytes_received},
    {"traffic.messages_received", &exchange_stats::messages_received},
    {"traffic.bytes_received", &exchange_stats::bytes_received},
    {"traffic.messages_delivered", &exchange_stats::messages_delivered},
    {"traffic.duplicates", &exchange_stats::duplicates},
    {"traffic.expired", &exchange_stats::expired},
};

void load_rejected(state_reader& in, exchange_stats& s) {
  const std::vector<std::uint64_t> rejected = in.get_u64s("rejected");
  if (rejected.size() > kRejectReasons)  // reasons are only appended: an older checkpoint has fewer
    in.fail("rejected holds " + std::to_string(rejected.size()) + " counts, expected at most " +
            std::to_string(kRejectReasons));
  std::copy(rejected.begin(), rejected.end(), s.rejected.begin());
}

// The form before counters had names: a list in this order.
void load_positional(state_reader& in, exchange_stats& s) {
  constexpr counter kOrder[] = {&exchange_stats::rounds, &exchange_stats::messages_sent, &exchange_stats::bytes_sent,
                                &exchange_stats::probe_bytes_sent, &exchange_stats::probe_bytes_received,
                                &exchange_stats::messages_received, &exchange_stats::bytes_received,
                                &exchange_stats::messages_delivered, &exchange_stats::duplicates,
                                &exchange_stats::expired, &exchange_stats::notice_bytes_sent,
                                &exchange_stats::notice_bytes_received};
  const std::vector<std::uint64_t> c = in.get_u64s("exchange_counts");
  if (c.size() != 10 && c.size() != 12)  // 10: written before notices existed
    in.fail("exchange_counts holds " + std::to_string(c.size()) + " counts, expected 12");
  for (std::size_t i = 0; i < c.size(); ++i) s.*kOrder[i] = c[i];
}

}  // namespace

exchange_stats& exchange_stats::operator+=(const exchange_stats& o) {
  for (const auto& [name, c] : kCounters) this->*c += o.*c;
  for (std::size_t r = 0; r < kRejectReasons; ++r) rejected[r] += o.rejected[r];
  wait_time += o.wait_time;
  send_time += o.send_time;
  return *this;
}

void exchange_stats::save_state(state_writer& out) const {
  for (const auto& [name, c] : kCounters) out.put_u64(name, this->*c);
  out.put_u64s("rejected", rejected);
  out.put_i64("wait_ns", static_cast<std::int64_t>(wait_time.count()));
  out.put_i64("send_ns", static_cast<std::int64_t>(send_time.count()));
}

void exchange_stats::load_state(state_reader& in) {
  if (in.next_name() == "exchange_counts")
    load_positional(in, *this);
  else
    for (const auto& [name, c] : kCounters) this->*c = in.get_u64(name);
  load_rejected(in, *this);
  wait_time = std::chrono::nanoseconds(in.get_i64("wait_ns"));
  send_time = std::chrono::nanoseconds(in.get_i64("send_ns"));
}

exchange::exchange(transport& t, exchange_options options) : transport_(t), options_(std::move(options)) {
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
  expect_.run_id = options_.run_id;
  expect_.senders = options_.neighbours;
  QG_ENFORCE(options_.lookahead >= 1 && options_.lookahead <= 4096, "lookahead=" << options_.lookahead);
  expect_.max_payload_bytes = options_.max_payload_bytes;
  delivered_.resize(nb.size());
  buffered_.resize(nb.size());
  for (auto& per_kind : buffered_)
    for (auto& slots : per_kind) slots.resize(options_.lookahead + 1);
  out_index_.assign(nb.size(), -1);
  filled_.resize(nb.size());
  rejected_this_round_.resize(nb.size());
  rejected_on_link_.resize(nb.size());
  dropped_.resize(nb.size());
  finished_.resize(nb.size());
  acked_.resize(nb.size());
  backlog_acked_.resize(nb.size());
  last_sent_.resize(nb.size());
  last_sent_bytes_.resize(nb.size());
  taken_at_send_.resize(nb.size());
  heard_.resize(nb.size());
  closed_.resize(nb.size());
  states_.resize(nb.size());
  joins_at_.resize(nb.size());
}

void exchange::note(const std::string& line) {
  if (options_.log) options_.log("rank " + std::to_string(options_.rank) + ": " + line);
}

void exchange::reject(reject_reason reason, int peer, const std::string& detail) {
  ++stats_.rejected[static_cast<std::size_t>(reason)];
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  const bool neighbour = it != nb.end() && *it == peer;
  const auto k = static_cast<std::size_t>(it - nb.begin());
  if (neighbour) ++rejected_this_round_[k];
  if (options_.log) {
    flush_log_limits();
    if (reject_log_.allow(static_cast<std::size_t>(reason)))
      note("rejected a message from transport peer " + std::to_string(peer) + " (" +
           std::string(to_string(reason)) + "): " + detail);
  }
  if (!neighbour || dropped_[k] || reason == reject_reason::departed) return;
  if (++rejected_on_link_[k] == options_.max_rejected)
    peer_failed(k, "sent " + std::to_string(options_.max_rejected) +
                       " messages that were rejected (network.max_rejected), the last: " +
                       std::string(to_string(reason)));
}

void exchange::peer_failed(std::size_t k, const std::string& why) {
  if (dropped_[k] || !pending_failure_.is_ok()) return;
  const int peer = options_.neighbours[k];
  if (options_.on_peer_failure && options_.on_peer_failure(peer, why)) {
    drop_index(k);
    return;
  }
  pending_failure_ = status::error(errc::peer_lost, "rank " + std::to_string(peer) + " " + why);
}

void exchange::drop(int peer) {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  if (it != nb.end() && *it == peer) drop_index(static_cast<std::size_t>(it - nb.begin()));
}

bool exchange::dropped(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  return it != nb.end() && *it == peer && dropped_[static_cast<std::size_t>(it - nb.begin())];
}

void exchange::drop_index(std::size_t k) {
  if (dropped_[k]) return;
  dropped_[k] = true;
  for (auto& per_kind : buffered_[k])
    for (slot& s : per_kind) s.used = false;
  if (out_index_[k] >= 0) {  // a round under way stops waiting for it, and forgets what it delivered
    vacated_[static_cast<std::size_t>(out_index_[k])] = true;
    if (!filled_[k]) --missing_;
    out_index_[k] = -1;
  }
  transport_.forget_peer(options_.neighbours[k]);
  note("dropped rank " + std::to_string(options_.neighbours[k]) + ": no round waits for it any more");
}

void exchange::compact(std::vector<inbound_message>& out) {
  std::size_t kept = 0;
  for (std::size_t o = 0; o < out.size(); ++o)
    if (!vacated_[o]) {
      if (kept != o) std::swap(out[kept], out[o]);
      ++kept;
    }
  out.resize(kept);
}

void exchange::take_lost_peers() {
  lost_.clear();
  transport_.take_lost_peers(lost_);
  const auto& nb = options_.neighbours;
  for (int peer : lost_) {
    auto it = std::lower_bound(nb.begin(), nb.end(), peer);
    if (it == nb.end() || *it != peer) continue;
    const auto k = static_cast<std::size_t>(it - nb.begin());
    if (finished_[k]) {  // it completed its run and exited: no failure, and its messages stay
      closed_[k] = true;
      transport_.forget_peer(peer);
      continue;
    }
    peer_failed(k, "stopped: its link closed or it answered no heartbeat (" + transport_.peer_address(peer) + ")");
  }
}

bool exchange::in_round(std::size_t k, std::uint64_t iteration) const {
  return !dropped_[k] && (!finished_[k] || *finished_[k] >= iteration) && iteration >= joins_at_[k];
}

wire_header exchange::header_for(message_kind kind, std::uint64_t iteration, const outgoing_message& msg) const {
  wire_header h;
  h.kind = kind;
  h.run_id = options_.run_id;
  h.sender = static_cast<std::uint32_t>(options_.rank);
  h.count = msg.count;
  h.iteration = iteration;
  h.codec = msg.codec;
  h.codec_tag = msg.codec_tag;
  h.payload_bytes = static_cast<std::uint32_t>(msg.payload.size());
  return h;
}

status exchange::send_notice(std::span<const int> to, std::span<const std::byte> payload, std::uint64_t iteration) {
  // Not to peers that finished and exited, nor to those refusing this node's key: nothing would
  // take the message, and it would linger (or block until the send time-out).
  std::vector<int> peers;
  const std::vector<int> refusing = transport_.peers_refusing_this_node();
  for (int p : to) {
    const auto k = index_of(p);
    if (!std::binary_search(refusing.begin(), refusing.end(), p) && (!k || !closed_[*k])) peers.push_back(p);
  }
  if (peers.empty()) return status::ok();
  if (payload.size() > options_.max_payload_bytes)
    return status::error(errc::invalid, "notice of " + std::to_string(payload.size()) + " bytes exceeds max_payload_bytes");
  std::array<std::byte, kWireHeaderBytes> header{};
  encode_header(header_for(message_kind::notice, iteration, {.payload = payload}), payload, header);
  return send_outside_rounds(peers, header, payload);
}

status exchange::send_outside_rounds(std::span<const int> peers, std::span<const std::byte> header,
                                     std::span<const std::byte> payload) {
  const auto start = transport_clock::now();
  status sent = transport_.send_all(peers, header, payload);
  stats_.send_time += transport_clock::now() - start;
  stats_.messages_sent += peers.size();
  stats_.bytes_sent += peers.size() * (header.size() + payload.size());
  stats_.notice_bytes_sent += peers.size() * (header.size() + payload.size());
  return sent;
}

void exchange::handle_notice(const wire_header& h) {
  stats_.notice_bytes_received += kWireHeaderBytes + h.payload_bytes;
  ++stats_.messages_delivered;
  if (!options_.on_notice) return;
  if (status s = options_.on_notice(static_cast<int>(h.sender), rx_.payload); !s) {
    if (s.code() == errc::corrupt) {
      reject(reject_reason::notice, static_cast<int>(h.sender), s.message());
      return;
    }
    if (pending_failure_.is_ok()) pending_failure_ = s;
  }
}

void exchange::flush_log_limits() {
  reject_log_.flush([this](std::size_t reason, std::uint64_t suppressed) {
    note("... and " + std::to_string(suppressed) + " more messages rejected (" +
         std::string(to_string(static_cast<reject_reason>(reason))) + ") within " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(reject_log_.window()).count()) +
         " s, not logged one by one");
  });
}

void exchange::absorb_refusals() {
  const transport_refusals r = transport_.refusals();
  stats_.rejected[static_cast<std::size_t>(reject_reason::auth)] = r.auth;
  stats_.rejected[static_cast<std::size_t>(reject_reason::handshake)] = r.handshake;
  stats_.rejected[static_cast<std::size_t>(reject_reason::identity)] = r.identity;
  refusal_lines_.clear();
  transport_.take_refusal_log(refusal_lines_);
  for (const std::string& line : refusal_lines_) note(line);
}

status exchange::fail(status s) {
  if (s.code() == errc::rejoin) {  // not a failure: the node rejoins, then rounds go on (readmit)
    pending_failure_ = status::ok();
    return s;
  }
  failed_ = s;
  return s;
}

void exchange::expire_before(std::uint64_t iteration) {
  for (std::size_t k = 0; k < buffered_.size(); ++k)
    for (auto& per_kind : buffered_[k])
      for (slot& s : per_kind)
        if (s.used && s.header.iteration < iteration) {
          s.used = false;
          ++stats_.expired;
          note("dropped the buffered " + describe(s.header.kind, s.header.iteration) + " from rank " +
               std::to_string(options_.neighbours[k]) + ": this node ran no such round");
        }
}

bool exchange::deliver(std::size_t k, const wire_header& h, std::vector<std::byte>& payload,
                       const codec_expectation& codec, std::vector<inbound_message>& out) {
  wire_check c = wire_check::ok;
  if (status s = check_codec(h, codec, &c); !s) {
    reject(reason_of(c), static_cast<int>(h.sender), describe(h.kind, h.iteration) + ": " + s.message());
    return false;
  }
  if (h.kind == message_kind::train && options_.validate)
    if (status v = options_.validate(h, payload); !v) {
      reject(reject_reason::payload, static_cast<int>(h.sender), describe(h.kind, h.iteration) + ": " + v.message());
      peer_failed(k, "sent a " + describe(h.kind, h.iteration) + " that does not decode (" + v.message() + ")");
      return false;
    }
  const auto o = static_cast<std::size_t>(out_index_[k]);
  out[o].header = h;
  std::swap(out[o].payload, payload);  // the caller's old buffer goes back to the pool
  delivered_[k][kind_index(h.kind)] = h.iteration;
  filled_[k] = true;
  --missing_;
  ++stats_.messages_delivered;
  return true;
}

void exchange::handle(message_kind kind, const codec_expectation& codec, std::vector<inbound_message>& out) {
  wire_header h;
  wire_check c = wire_check::ok;
  if (status s = parse_header(rx_.header, rx_.payload, expect_, h, &c); !s) {
    if (c == wire_check::run_id && h.kind == message_kind::join && options_.on_foreign_join && index_of(rx_.peer))
      options_.on_foreign_join(static_cast<int>(rx_.peer), h.run_id);  // told why, under its own run id
    reject(reason_of(c), rx_.peer, s.message());
    return;
  }
  if (rx_.peer != static_cast<std::int64_t>(h.sender)) {
    reject(reject_reason::peer_mismatch, rx_.peer,
           "the header names sender " + std::to_string(h.sender) + " but the link is from rank " +
               std::to_string(rx_.peer));
    return;
  }
  const auto& nb = options_.neighbours;
  const auto k = static_cast<std::size_t>(std::lower_bound(nb.begin(), nb.end(), static_cast<int>(h.sender)) -
                                          nb.begin());
  if (h.kind == message_kind::join) {  // also from a dropped neighbour: it is how one comes back
    handle_join(h);
    return;
  }
  if (h.kind == message_kind::join_state) {
    hold_state(k, h);
    return;
  }
  if (dropped_[k]) {
    reject(reject_reason::departed, rx_.peer, describe(h.kind, h.iteration) + " from rank " +
                                                  std::to_string(h.sender) + ", which this node dropped");
    return;
  }
  if (h.kind == message_kind::notice) {
    handle_notice(h);
    return;
  }
  if (h.kind == message_kind::finished) {
    handle_finished(k, h);
    return;
  }
  if (h.kind == message_kind::finished_ack) {
    handle_finished_ack(k);
    return;
  }
  if (options_.asynchronous && h.kind == message_kind::train) {
    deliver_in_order(k, h, async_codec_, out);
    return;
  }
  handle_round_message(k, h, kind, codec, out);
}

status exchange::receive_one(transport_clock::time_point until, message_kind kind, const codec_expectation& codec,
                             std::vector<inbound_message>& out, bool& got) {
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
  handle(kind, codec, out);
  return status::ok();
}

}  // namespace qgossip
