#include "gossip/exchange.hpp"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

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

std::string describe(message_kind kind, std::uint64_t iteration) {
  return std::string(to_string(kind)) + " message for iteration " + std::to_string(iteration);
}

}  // namespace

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

bool exchange::finished(int peer) const {
  const auto& nb = options_.neighbours;
  auto it = std::lower_bound(nb.begin(), nb.end(), peer);
  return it != nb.end() && *it == peer && finished_[static_cast<std::size_t>(it - nb.begin())].has_value();
}

bool exchange::in_round(std::size_t k, std::uint64_t iteration) const {
  return !dropped_[k] && (!finished_[k] || *finished_[k] >= iteration) && iteration >= joins_at_[k];
}

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

namespace qgossip {

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

}  // namespace qgossip

namespace qgossip {

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

bool exchange::all_finished() const {
  for (std::size_t k = 0; k < dropped_.size(); ++k)
    if (!dropped_[k] && !finished_[k]) return false;
  return true;
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
