#include "gossip/exchange/sync_round.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {

sync_round::sync_round(exchange_core& core) : core_(core) {
  const std::size_t n = core_.size();
  buffered_.resize(n);
  for (auto& per_kind : buffered_)
    for (auto& slots : per_kind) slots.resize(core_.options().lookahead + 1);
  out_index_.assign(n, -1);
  filled_.resize(n);
  core_.handle_kind(message_kind::probe, *this);
  if (!core_.options().asynchronous) core_.handle_kind(message_kind::train, *this);
}

void sync_round::on_message(std::size_t k, const wire_header& h, received_bytes& payload) {
  const int from = core_.peer(k);
  if (h.skipped != 0) {  // synchronous rounds skip none
    core_.reject(reject_reason::skipped, from,
                 exchange_core::describe(h.kind, h.iteration) + " says it follows " +
                     std::to_string(h.skipped) + " rounds without a message");
    return;
  }
  if (core_.clock().draining()) {  // after this node's last round (finish): for a round it will not run
    ++core_.stats().expired;
    return;
  }
  const std::uint64_t base = core_.clock().base();
  const auto& last = core_.link(k).delivered[exchange_core::kind_index(h.kind)];
  if (h.iteration < base || (last && h.iteration <= *last)) {
    ++core_.stats().duplicates;
    core_.note("dropped a duplicate " + exchange_core::describe(h.kind, h.iteration) + " from rank " +
               std::to_string(from) + " (now at iteration " + std::to_string(base) + ")");
    return;
  }
  if (h.iteration > base + core_.options().lookahead) {
    core_.reject(reject_reason::gap, from,
                 exchange_core::describe(h.kind, h.iteration) + " while at iteration " +
                     std::to_string(base) + ": a neighbour can be at most " +
                     std::to_string(core_.options().lookahead) + " round(s) ahead");
    return;
  }
  if (h.kind == message_kind::probe) core_.stats().probe_bytes_received += kWireHeaderBytes + h.payload_bytes;
  if (h.kind != kind_ || h.iteration != base) {  // early: the next iteration, or another kind's round
    // A train message is checked now (during a train round, whose codec it must have): a sender
    // whose message is refused must not be heard first in what it sends after it (its notices).
    if (kind_ == message_kind::train && !core_.check_early(k, h, payload.bytes(), codec_)) return;
    buffer(k, h, payload);
    return;
  }
  if (out_index_[k] < 0) {
    core_.reject(reject_reason::sender, from,
                 exchange_core::describe(h.kind, h.iteration) + ": rank " + std::to_string(from) +
                     " is not expected to send in this round");
    return;
  }
  deliver(k, h, payload);
}

void sync_round::buffer(std::size_t k, const wire_header& h, received_bytes& payload) {
  auto& slots = buffered_[k][exchange_core::kind_index(h.kind)];
  for (const slot& s : slots)
    if (s.used && s.header.iteration == h.iteration) {
      ++core_.stats().duplicates;
      core_.note("dropped a duplicate " + exchange_core::describe(h.kind, h.iteration) + " from rank " +
                 std::to_string(h.sender) + " (already buffered)");
      return;
    }
  // Used slots hold distinct iterations in [base, base + lookahead] (older ones expired), so one is free.
  auto free = std::find_if(slots.begin(), slots.end(), [](const slot& s) { return !s.used; });
  QG_ENFORCE(free != slots.end(), "no free buffer slot for rank " << h.sender);
  free->used = true;
  free->header = h;
  free->payload = std::move(payload);
}

void sync_round::deliver(std::size_t k, const wire_header& h, received_bytes& payload) {
  if (!core_.accept(k, h, payload, codec_)) return;
  if (out_) {
    inbound_message& m = (*out_)[static_cast<std::size_t>(out_index_[k])];
    m.header = h;
    m.payload = std::move(payload);
  }
  core_.link(k).delivered[exchange_core::kind_index(h.kind)] = h.iteration;
  filled_[k] = true;
  --missing_;
  ++core_.stats().messages_delivered;
}

void sync_round::vacate(std::size_t k) {
  vacated_[static_cast<std::size_t>(out_index_[k])] = true;
  if (!filled_[k]) --missing_;
  out_index_[k] = -1;
}

void sync_round::on_drop(std::size_t k) {
  for (auto& per_kind : buffered_[k])
    for (slot& s : per_kind) s.release();
  if (out_index_[k] >= 0) vacate(k);  // a round under way stops waiting for it, and forgets what it delivered
}

void sync_round::on_finished(std::size_t k) {
  // A round after its last stops waiting for it.
  if (out_index_[k] >= 0 && !filled_[k] && *core_.link(k).finished < core_.clock().base()) vacate(k);
}

void sync_round::on_readmit(std::size_t k, std::uint64_t) {
  for (auto& per_kind : buffered_[k])
    for (slot& s : per_kind) s.release();
}

void sync_round::compact() {
  std::vector<inbound_message>& out = *out_;
  std::size_t kept = 0;
  for (std::size_t o = 0; o < out.size(); ++o)
    if (!vacated_[o]) {
      if (kept != o) std::swap(out[kept], out[o]);
      ++kept;
    }
  out.resize(kept);
}

void sync_round::expire_before(std::uint64_t iteration) {
  for (std::size_t k = 0; k < buffered_.size(); ++k)
    for (auto& per_kind : buffered_[k])
      for (slot& s : per_kind)
        if (s.used && s.header.iteration < iteration) {
          s.release();
          ++core_.stats().expired;
          core_.note("dropped the buffered " + exchange_core::describe(s.header.kind, s.header.iteration) +
                     " from rank " + std::to_string(core_.peer(k)) + ": this node ran no such round");
        }
}

status sync_round::refused_by_all() const {
  if (!core_.admission()) return status::ok();  // a transport that refuses nothing
  const std::vector<int> refusing = core_.admission()->peers_refusing_this_node();
  if (refusing.empty()) return status::ok();
  std::string who;
  for (std::size_t k = 0; k < out_index_.size(); ++k) {
    if (out_index_[k] < 0 || filled_[k]) continue;
    if (!std::binary_search(refusing.begin(), refusing.end(), core_.peer(k))) return status::ok();
    who += (who.empty() ? "rank " : ", rank ") + std::to_string(core_.peer(k));
  }
  if (who.empty()) return status::ok();
  return status::error(errc::refused,
                       who +
                           " refused this node's key (CURVE): it is not among the keys they allow "
                           "(another run's keys, or a node not in their topology; docs/security.md)");
}

std::string sync_round::silent_message(std::uint64_t iteration, std::chrono::milliseconds waited) const {
  std::string who;
  for (std::size_t k = 0; k < filled_.size(); ++k) {
    if (filled_[k] || out_index_[k] < 0) continue;
    const int peer = core_.peer(k);
    if (!who.empty()) who += ", ";
    who += "rank " + std::to_string(peer);
    const std::string address = core_.net().peer_address(peer);
    if (!address.empty()) who += " (" + address + "?)";
    const int rejected = core_.link(k).rejected_this_round;
    if (rejected > 0) who += " [" + std::to_string(rejected) + " of its messages rejected, see the log]";
  }
  return std::string("no ") + (kind_ == message_kind::train ? "" : "probe ") + "message from " + who +
         " for iteration " + std::to_string(iteration) + " within " + std::to_string(waited.count()) + " ms";
}

status sync_round::check_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                               const round_peers& peers) const {
  if (kind != message_kind::train && kind != message_kind::probe)
    return status::error(errc::invalid,
                         "unknown message kind " + std::to_string(static_cast<unsigned>(kind)));
  if (status s = core_.clock().check(kind, iteration, /*against_base=*/true); !s) return s;
  if (msg.payload.size() > core_.options().max_payload_bytes)
    return status::error(errc::invalid, "payload of " + std::to_string(msg.payload.size()) +
                                            " bytes exceeds max_payload_bytes " +
                                            std::to_string(core_.options().max_payload_bytes));
  for (std::span<const int> list : {peers.send_to, peers.receive_from})
    for (std::size_t i = 0; i < list.size(); ++i)
      if ((i > 0 && list[i] <= list[i - 1]) || !core_.index_of(list[i]))
        return status::error(errc::invalid, "round peers must be sorted, unique neighbours; rank " +
                                                std::to_string(list[i]) + " is not");
  for (std::size_t i = 0; i < msg.per_link.size(); ++i) {
    const link_message& m = msg.per_link[i];
    const bool listed = std::binary_search(peers.send_to.begin(), peers.send_to.end(), m.peer);
    const bool repeated =
        std::any_of(msg.per_link.begin(), msg.per_link.begin() + static_cast<std::ptrdiff_t>(i),
                    [&](const link_message& o) { return o.peer == m.peer; });
    if (kind != message_kind::train || !listed || repeated ||
        m.payload.size() > core_.options().max_payload_bytes)
      return status::error(errc::invalid,
                           "a payload of its own for rank " + std::to_string(m.peer) +
                               ": expected a train round, a peer it sends to, listed once, at most " +
                               std::to_string(core_.options().max_payload_bytes) + " bytes");
  }
  return status::ok();
}

status sync_round::send_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                              const round_peers& peers, transport_clock::time_point start) {
  live_send_.clear();
  for (int p : peers.send_to) {
    const std::size_t k = *core_.index_of(p);
    const bool own = std::any_of(msg.per_link.begin(), msg.per_link.end(),
                                 [p](const link_message& m) { return m.peer == p; });
    if (!own && core_.in_round(k, iteration) && !core_.link(k).closed) live_send_.push_back(p);
  }
  if (status sent = send_payload(kind, iteration, msg, live_send_, msg.payload, start); !sent) return sent;
  for (const link_message& m : msg.per_link) {
    const std::size_t k = *core_.index_of(m.peer);
    if (!core_.in_round(k, iteration) || core_.link(k).closed) continue;
    const int one[] = {m.peer};
    if (status sent = send_payload(kind, iteration, msg, one, m.payload, start); !sent) return sent;
  }
  return status::ok();
}

status sync_round::send_payload(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                std::span<const int> to, std::span<const std::byte> payload,
                                transport_clock::time_point start) {
  if (to.empty()) return status::ok();
  outgoing_message one = msg;
  one.payload = payload;
  encode_header(core_.header_for(kind, iteration, one), payload, header_);
  exchange_stats& stats = core_.stats();
  status sent = core_.net().send_all_kept(to, header_, payload, msg.owner_of(payload));
  stats.send_time += transport_clock::now() - start;
  if (!sent) return sent;
  const std::uint64_t bytes = to.size() * (kWireHeaderBytes + payload.size());
  stats.messages_sent += to.size();
  stats.bytes_sent += bytes;
  if (kind == message_kind::probe) stats.probe_bytes_sent += bytes;
  return status::ok();
}

std::size_t sync_round::expect_round(std::uint64_t iteration, std::span<const int> receive_from) {
  std::fill(out_index_.begin(), out_index_.end(), -1);
  std::size_t expected = 0;
  for (int p : receive_from) {
    const std::size_t k = *core_.index_of(p);
    if (core_.in_round(k, iteration)) out_index_[k] = static_cast<int>(expected++);
  }
  if (out_) out_->resize(expected);
  vacated_.assign(expected, false);
  std::fill(filled_.begin(), filled_.end(), false);
  for (std::size_t k = 0; k < core_.size(); ++k) core_.link(k).rejected_this_round = 0;
  missing_ = expected;
  for (std::size_t k = 0; k < core_.size(); ++k)
    for (slot& s : buffered_[k][exchange_core::kind_index(kind_)])
      if (s.used && s.header.iteration == iteration) {
        received_bytes payload = std::move(s.payload);
        s.release();
        if (out_index_[k] < 0)
          core_.reject(reject_reason::sender, core_.peer(k),
                       exchange_core::describe(kind_, iteration) + ": rank " + std::to_string(core_.peer(k)) +
                           " is not expected to send in this round");
        else
          deliver(k, s.header, payload);
      }
  return expected;
}

status sync_round::at_deadline(std::uint64_t iteration, std::size_t expected, std::chrono::milliseconds waited,
                               std::span<const int> spared) {
  const std::string silent = silent_message(iteration, waited);
  // Every peer silent: this node is the one cut off (or nobody started); no peer is blamed. A live
  // one (spared) shows it is not.
  if (!core_.options().drop_silent || (missing_ == expected && spared.empty()))
    return status::error(errc::timeout, silent);
  for (std::size_t k = 0; k < core_.size(); ++k)  // each a failure: dropped (continue) or the end
    if (out_index_[k] >= 0 && !filled_[k] &&
        std::find(spared.begin(), spared.end(), core_.peer(k)) == spared.end())
      core_.peer_failed(k, "sent nothing for " + exchange_core::describe(kind_, iteration) + " within " +
                               std::to_string(waited.count()) + " ms");
  return status::ok();
}

bool sync_round::wait_for_live(transport_clock::time_point start, wait_plan& plan, std::uint64_t iteration,
                               std::size_t expected, status& s) {
  const transport_liveness* liveness = core_.live_wait_open(start);
  if (!liveness) return false;
  alive_.clear();
  std::size_t silent = 0;
  for (std::size_t k = 0; k < core_.size(); ++k)
    if (out_index_[k] >= 0 && !filled_[k]) {
      ++silent;
      if (liveness->alive(core_.peer(k))) alive_.push_back(core_.peer(k));
    }
  if (alive_.empty()) return false;
  if (silent > alive_.size()) {  // the others judged as at any deadline, the live ones spared
    s = at_deadline(iteration, expected,
                    std::chrono::duration_cast<std::chrono::milliseconds>(transport_clock::now() - start), alive_);
    if (!s) return true;
  }
  core_.wait_on_live(alive_, start, plan);
  return true;
}

status sync_round::round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                         std::vector<inbound_message>* out, const round_peers& peers) {
  if (status s = core_.usable(); !s) return s;
  if (!core_.pending().is_ok()) return core_.fail(core_.pending());
  if (status s = check_round(kind, iteration, msg, peers); !s) return s;
  QG_ENFORCE(out || kind == message_kind::train, "a probe round delivers its messages to `out`");
  const auto waited = core_.clock().begin(kind, iteration, core_.options().first_deadline,
                                          core_.options().round_deadline);
  const auto start = transport_clock::now();
  expire_before(iteration);
  if (status sent = send_round(kind, iteration, msg, peers, start); !sent) return core_.fail(sent);
  kind_ = kind;
  codec_ = {msg.codec, msg.codec_tag, msg.count};
  out_ = out;
  const std::size_t expected = expect_round(iteration, peers.receive_from);
  wait_plan plan{.deadline = start + waited,
                 .stopping = "stopped while waiting for round",
                 .round = iteration};
  bool waited_on = false;  // past the deadline, for live peers (wait_for_live)
  status s = core_.wait(
      plan,
      [&](bool& done) {
        done = missing_ == 0;
        return status::ok();
      },
      [&](bool got, transport_clock::time_point slice_end) {
        if (got) return status::ok();
        if (status r = refused_by_all(); !r) return r;
        if (slice_end < plan.deadline) return status::ok();
        status judged = status::ok();
        if (wait_for_live(start, plan, iteration, expected, judged)) {
          waited_on = true;
          return judged;
        }
        return at_deadline(iteration, expected,
                           waited_on ? std::chrono::duration_cast<std::chrono::milliseconds>(
                                           transport_clock::now() - start)
                                     : waited);
      });
  if (s && out_) compact();
  kind_ = message_kind::train;  // between rounds
  codec_ = {};
  out_ = nullptr;
  if (!s) return core_.fail(s);
  ++core_.stats().rounds;
  core_.flush_log_limits();
  return status::ok();
}

}  // namespace qgossip
