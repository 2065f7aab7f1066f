#include "gossip/exchange/stats.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace qgossip {

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
    case reject_reason::state:
      return "state";
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
  constexpr counter kOrder[] = {&exchange_stats::rounds,
                                &exchange_stats::messages_sent,
                                &exchange_stats::bytes_sent,
                                &exchange_stats::probe_bytes_sent,
                                &exchange_stats::probe_bytes_received,
                                &exchange_stats::messages_received,
                                &exchange_stats::bytes_received,
                                &exchange_stats::messages_delivered,
                                &exchange_stats::duplicates,
                                &exchange_stats::expired,
                                &exchange_stats::notice_bytes_sent,
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

}  // namespace qgossip
