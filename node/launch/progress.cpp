#include "node/launch/progress.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/errors.hpp"
#include "core/json.hpp"

namespace qgossip {
namespace {

// Typed field access for parse_node_event; each returns false (and sets *why) on a type mismatch.
class field_reader {
 public:
  field_reader(const nlohmann::ordered_json& obj, std::string& why) : obj_(obj), why_(why) {}

  // An integral number in [lo, hi]. Absent: `required` decides.
  bool integer(std::string_view key, std::int64_t& out, bool required, double lo = 0,
               double hi = 9007199254740992.0 /* 2^53: every integer below is exact */) {
    const nlohmann::ordered_json* v = find(key);
    if (!v) return !required || missing(key);
    const double d = v->is_number() ? v->get<double>() : NAN;
    if (!(d == std::floor(d) && d >= lo && d <= hi))
      return bad(key, "an integer in [" + std::to_string(std::int64_t(lo)) + ", " +
                          std::to_string(std::int64_t(hi)) + "]");
    out = static_cast<std::int64_t>(d);
    return true;
  }
  bool number(std::string_view key, double& out, bool required) {
    const nlohmann::ordered_json* v = find(key);
    if (!v) return !required || missing(key);
    if (!v->is_number()) return bad(key, "a number");
    out = v->get<double>();
    return true;
  }
  bool nullable_number(std::string_view key, std::optional<double>& out) {
    const nlohmann::ordered_json* v = find(key);
    if (!v || v->is_null()) return true;
    if (!v->is_number()) return bad(key, "a number or null");
    out = v->get<double>();
    return true;
  }
  bool text(std::string_view key, std::string& out, bool required) {
    const nlohmann::ordered_json* v = find(key);
    if (!v) return !required || missing(key);
    if (!v->is_string()) return bad(key, "a string");
    out = v->get<std::string>();
    return true;
  }

 private:
  const nlohmann::ordered_json* find(std::string_view key) const {
    const auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  bool missing(std::string_view key) {
    why_ = "missing \"" + std::string(key) + "\"";
    return false;
  }
  bool bad(std::string_view key, const std::string& expected) {
    why_ = "\"" + std::string(key) + "\" must be " + expected;
    return false;
  }
  const nlohmann::ordered_json& obj_;
  std::string& why_;
};

std::string printf_string(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

std::string format_loss(double x) {
  return printf_string(std::fabs(x) >= 0.001 || x == 0 ? "%.3f" : "%.1e", x);
}
std::string format_acc(double x) { return printf_string("%.3f", x); }

// "lo–hi", or one value when they print the same.
template <typename Format>
std::string format_range(double lo, double hi, Format format) {
  std::string a = format(lo), b = format(hi);
  return a == b ? a : a + "\u2013" + b;
}

}  // namespace

std::optional<node_event> parse_node_event(std::string_view line, std::string* error) {
  std::string why;
  std::optional<nlohmann::ordered_json> obj = parse_json_object(line, &why);
  auto reject = [&](std::string reason) -> std::optional<node_event> {
    if (error) *error = std::move(reason);
    return std::nullopt;
  };
  if (!obj) return reject("not JSON: " + why);

  field_reader r(*obj, why);
  node_event ev;
  std::string kind;
  if (!r.text("event", kind, true)) return reject(why);
  if (kind == "start")
    ev.kind = event_kind::start;
  else if (kind == "progress")
    ev.kind = event_kind::progress;
  else if (kind == "done")
    ev.kind = event_kind::done;
  else if (kind == "error")
    ev.kind = event_kind::error;
  else if (kind == "peer_left")
    ev.kind = event_kind::peer_left;
  else if (kind == "peer_joined")
    ev.kind = event_kind::peer_joined;
  else if (kind == "rejoined")
    ev.kind = event_kind::rejoined;
  else
    return reject("unknown event \"" + kind + "\"");

  std::int64_t rank = -1;
  if (!r.integer("rank", rank, true, 0, std::numeric_limits<int>::max())) return reject(why);
  ev.rank = static_cast<int>(rank);

  bool ok = true;
  switch (ev.kind) {
    case event_kind::start: {
      std::int64_t n = 0;
      ok = r.integer("n", n, false, 1, std::numeric_limits<int>::max()) &&
           r.integer("rounds", ev.rounds, false) && r.number("epochs", ev.epochs, false);
      ev.n = static_cast<int>(n);
      break;
    }
    case event_kind::progress:
    case event_kind::done: {
      std::int64_t sent = 0, recv = 0;
      ok = r.integer("iteration", ev.iteration, true) && r.integer("rounds", ev.rounds, false) &&
           r.number("epoch", ev.epoch, true) && r.nullable_number("train_loss", ev.train_loss) &&
           r.nullable_number("test_acc", ev.test_acc) && r.integer("bytes_sent", sent, false) &&
           r.integer("bytes_recv", recv, false) && r.number("wall_s", ev.wall_s, false);
      ev.bytes_sent = static_cast<std::uint64_t>(sent);
      ev.bytes_recv = static_cast<std::uint64_t>(recv);
      break;
    }
    case event_kind::error:
      ok = r.text("message", ev.message, true);
      break;
    case event_kind::rejoined: {
      std::int64_t donor = -1;
      ok = r.integer("round", ev.iteration, true) && r.integer("donor", donor, true, 0, std::numeric_limits<int>::max());
      ev.peer = static_cast<int>(donor);
      break;
    }
    case event_kind::peer_joined:
    case event_kind::peer_left: {
      std::int64_t peer = -1, by = -1;
      ok = r.integer("peer", peer, true, 0, std::numeric_limits<int>::max()) &&
           r.integer("round", ev.iteration, true) && r.integer("reported_by", by, false, -1, std::numeric_limits<int>::max()) &&
           r.text("cause", ev.message, false);
      ev.peer = static_cast<int>(peer);
      ev.reported_by = static_cast<int>(by);
      break;
    }
  }
  if (!ok) return reject(why);
  return ev;
}

progress_board::progress_board(std::span<const int> ranks) {
  nodes_.resize(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) nodes_[i].rank = ranks[i];
}

void progress_board::restart(std::size_t slot) {
  final_metrics& m = nodes_.at(slot);
  const int rank = m.rank;
  m = final_metrics{};
  m.rank = rank;
}

void progress_board::apply(std::size_t slot, const node_event& ev) {
  QG_ENFORCE(slot < nodes_.size(), "slot=" << slot << " nodes=" << nodes_.size());
  final_metrics& m = nodes_[slot];
  m.started = true;
  if (ev.rounds > 0) m.rounds = ev.rounds;
  switch (ev.kind) {
    case event_kind::start:
      if (ev.epochs > 0) m.epochs = ev.epochs;
      break;
    case event_kind::done:
      m.done = true;
      [[fallthrough]];
    case event_kind::progress:
      m.iteration = ev.iteration;
      m.epoch = ev.epoch;
      // A progress line without a loss or accuracy keeps the last known one (a node evaluates
      // only every few rounds).
      if (ev.train_loss) m.train_loss = ev.train_loss;
      if (ev.test_acc) m.test_acc = ev.test_acc;
      m.bytes_sent = ev.bytes_sent;
      m.bytes_recv = ev.bytes_recv;
      m.wall_s = ev.wall_s;
      break;
    case event_kind::error:
      m.error = ev.message;
      break;
    case event_kind::peer_left:  // about another node: the supervisor keeps it
    case event_kind::peer_joined:
    case event_kind::rejoined:
      break;
  }
}

std::string progress_board::status_line() const {
  std::size_t started = 0;
  std::int64_t min_iteration = std::numeric_limits<std::int64_t>::max(), rounds = 0;
  double min_epoch = std::numeric_limits<double>::infinity();
  double loss_lo = INFINITY, loss_hi = -INFINITY, acc_lo = INFINITY, acc_hi = -INFINITY;
  std::uint64_t sent = 0;
  double eta = 0;
  bool eta_known = true;
  for (const final_metrics& m : nodes_) {
    if (!m.started) {
      eta_known = false;
      continue;
    }
    ++started;
    min_iteration = std::min(min_iteration, m.iteration);
    min_epoch = std::min(min_epoch, m.epoch);
    rounds = std::max(rounds, m.rounds);
    if (m.train_loss) loss_lo = std::min(loss_lo, *m.train_loss), loss_hi = std::max(loss_hi, *m.train_loss);
    if (m.test_acc) acc_lo = std::min(acc_lo, *m.test_acc), acc_hi = std::max(acc_hi, *m.test_acc);
    sent += m.bytes_sent;
    if (m.done) continue;
    if (m.iteration > 0 && m.wall_s > 0 && m.rounds > 0) {
      eta = std::max(
          eta, double(std::max<std::int64_t>(m.rounds - m.iteration, 0)) * m.wall_s / double(m.iteration));
    } else {
      eta_known = false;
    }
  }

  std::string line;
  auto part = [&line](const std::string& s) {
    if (!line.empty()) line += "  ";
    line += s;
  };
  if (started < nodes_.size()) part("nodes " + std::to_string(started) + "/" + std::to_string(nodes_.size()));
  if (started == 0) return line;
  std::string round = "round " + std::to_string(min_iteration);
  if (rounds > 0) {
    round += "/" + std::to_string(rounds) + " (" +
             std::to_string(std::clamp<std::int64_t>(min_iteration * 100 / rounds, 0, 100)) + "%)";
  }
  part(round);
  part("epoch " + printf_string("%.2f", min_epoch));
  if (loss_lo <= loss_hi) part("loss " + format_range(loss_lo, loss_hi, format_loss));
  if (acc_lo <= acc_hi) part("acc " + format_range(acc_lo, acc_hi, format_acc));
  part("sent " + format_bytes(sent));
  if (eta_known) part("ETA " + format_duration(eta));
  return line;
}

std::string progress_board::summary_table(std::span<const std::string> outcome) const {
  QG_ENFORCE(outcome.empty() || outcome.size() == nodes_.size(),
             "outcome=" << outcome.size() << " nodes=" << nodes_.size());
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%5s %9s %7s %10s %7s %10s %9s%s\n", "rank", "iteration", "epoch", "loss",
                "acc", "MB sent", "wall s", outcome.empty() ? "" : "  status");
  out += buf;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const final_metrics& m = nodes_[i];
    const std::string loss = m.train_loss ? format_loss(*m.train_loss) : "-";
    const std::string acc = m.test_acc ? format_acc(*m.test_acc) : "-";
    std::snprintf(buf, sizeof buf, "%5d %9lld %7.2f %10s %7s %10.1f %9.1f", m.rank,
                  static_cast<long long>(m.iteration), m.epoch, loss.c_str(), acc.c_str(),
                  double(m.bytes_sent) / 1e6, m.wall_s);
    out += buf;
    if (!outcome.empty()) out += "  " + outcome[i];
    out += '\n';
  }
  return out;
}

}  // namespace qgossip
