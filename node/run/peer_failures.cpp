#include "node/run/peer_failures.hpp"

#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "core/hash.hpp"
#include "gossip/exchange.hpp"
#include "node/config/config.hpp"
#include "node/log/run_log.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

bool reweights(const run_config& c) {
  return c.topology.weights == weight_kind::uniform || c.topology.weights == weight_kind::metropolis_hastings;
}

bool same_row(const mixing_row& a, const mixing_row& b) {
  return a.neighbours == b.neighbours && a.weights == b.weights && a.self_weight == b.self_weight;
}

std::string list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out.empty() ? "none" : out;
}

}  // namespace

peer_failures::peer_failures(const run_config& c, const topology& topo, int rank, std::vector<int> peers)
    : rank_(rank),
      n_(topo.n()),
      continue_(c.network.on_peer_failure == peer_failure_policy::train_on),
      initial_(topo, rank, reweights(c)),
      members_(initial_),
      peers_(std::move(peers)) {}

void peer_failures::attach(exchange& ex, algorithm& alg, run_log& log) {
  ex_ = &ex;
  alg_ = &alg;
  log_ = &log;
}

void peer_failures::send(std::span<const notice_item> items, std::initializer_list<int> except) {
  if (!ex_ || items.empty()) return;
  std::vector<int> to;
  for (int p : peers_)
    if (std::find(except.begin(), except.end(), p) == except.end() && !ex_->dropped(p) && !members_.departed(p))
      to.push_back(p);
  const std::string payload = encode_notice(items);
  const auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
  if (status s = ex_->send_notice(to, bytes, round_); !s)
    say(rank_, "warning: could not send a notice to ranks " + list(to) + ": " + s.to_string());
}

// Records d (learnt from told_by, or seen here when told_by == rank_), tells the others, says it.
void peer_failures::left(const departure& d, int told_by) {
  if (!members_.record_departure(d, round_ + 2)) return;
  departed_at_.resize(members_.departures().size() - 1, -1.0);
  departed_at_.push_back(seconds_since_start());
  items_.clear();
  items_.push_back({.what = notice_item::kind::left, .rank = d.rank, .round = d.round, .cause = d.cause});
  if (const auto degree = members_.degree_notice())
    items_.push_back({.what = notice_item::kind::degree, .round = degree->second, .degree = degree->first});
  send(items_, {told_by});
  if (ex_) ex_->drop(d.rank);
  say(rank_, "rank " + std::to_string(d.rank) + " left the run at round " + std::to_string(d.round) + " (rank " +
                 std::to_string(d.reported_by) + ": " + d.cause + "); training on with ranks " +
                 list(members_.live_neighbours()));
  if (log_) log_->peer_left(d.rank, d.round, d.reported_by, d.cause);
  const auto parts = members_.components();
  if (parts.size() > 1) {
    std::string others;
    for (std::size_t i = 1; i < parts.size(); ++i) others += " [" + list(parts[i]) + "]";
    say(rank_, "warning: the graph has split into " + std::to_string(parts.size()) + " parts: this node's [" +
                   list(parts[0]) + "], and" + others + "; each part trains on its own");
  }
}

bool peer_failures::on_peer_failure(int peer, const std::string& why) {
  const departure d{.rank = peer, .round = round_, .cause = why, .reported_by = rank_};
  if (!continue_) {
    if (!stop_cause_) stop_cause_ = d;
    return false;
  }
  // The peer, if it still runs, learns that it was dropped (and stops) from this notice.
  if (ex_ && !ex_->dropped(peer)) {
    const notice_item you{.what = notice_item::kind::left, .rank = peer, .round = round_, .cause = why};
    const std::string payload = encode_notice(std::span(&you, 1));
    const int to[1] = {peer};
    (void)ex_->send_notice(to, std::as_bytes(std::span(payload.data(), payload.size())), round_);
  }
  left(d, rank_);
  return true;
}

namespace {

bool refused(const departure& d) { return d.cause.find(exchange_events::kUndecodable) != std::string::npos; }

}  // namespace

bool peer_failures::proven_hostile(int peer) const {
  const auto& all = members_.departures();
  return std::any_of(all.begin(), all.end(),
                     [&](const departure& d) { return d.rank == peer && refused(d); });
}

std::vector<int> peer_failures::refused_by_this_node() const {
  std::vector<int> out;
  for (const departure& d : members_.departures())
    if (d.reported_by == rank_ && refused(d) && std::find(out.begin(), out.end(), d.rank) == out.end())
      out.push_back(d.rank);
  return out;
}

void peer_failures::announce_start(std::span<const float> model) {
  start_ = notice_item{.what = notice_item::kind::start, .size = model.size(), .hash = hash64(model)};
  send(std::span(&*start_, 1), {});
}

void peer_failures::halt_signal(std::uint64_t t, std::uint64_t margin) {
  int proposer = 0;
  while (proposer < n_ && members_.departed(proposer)) ++proposer;
  if (proposer != rank_ || halt_round_) return;
  take_halt(t + margin, rank_);
}

void peer_failures::take_halt(std::uint64_t round, int told_by) {
  if (halt_round_ && round <= *halt_round_) return;
  halt_round_ = round;
  const notice_item halt{.what = notice_item::kind::halt, .round = round};
  send(std::span(&halt, 1), {told_by});
  say(rank_, "stopping after round " + std::to_string(round) + " with a checkpoint, for a time limit (" +
                 (told_by == rank_ ? std::string("SIGUSR1 here") : "as rank " + std::to_string(told_by) + " says") +
                 ")");
}

status peer_failures::on_notice(int from, std::span<const std::byte> payload) {
  std::vector<notice_item> items;
  if (status s = parse_notice(payload, n_, items); !s)
    return s;
  for (const notice_item& i : items) {
    if (i.what == notice_item::kind::halt) {
      take_halt(i.round, from);
    } else if (i.what == notice_item::kind::start) {
      if (!start_) continue;  // this node did not start afresh (resumed, rejoining): nothing to compare
      const std::string who = "rank " + std::to_string(from);
      if (i.size != start_->size)
        return status::error(errc::refused, who + " starts from a model of " + std::to_string(i.size) +
                                                " values where this node's has " + std::to_string(start_->size));
      if (i.hash != start_->hash)
        return status::error(errc::refused, who + " starts from another model (hash " + hex64(i.hash) +
                                                "; this node's is " + hex64(start_->hash) +
                                                "): every node must start from the same values (seed the model's "
                                                "initialization the same on every node; the same model file on "
                                                "every host)");
    } else if (i.what == notice_item::kind::degree) {
      members_.record_degree(from, i.degree, i.round);
    } else if (i.what == notice_item::kind::joined) {
      if (i.rank != rank_) rejoined(i.rank, i.round, std::nullopt, from);
    } else if (i.round + members_.stale_margin() < joined_at_ ||
               (i.rank == rank_ && i.round + members_.stale_margin() < members_.joined_from(from))) {
      // News older than a return, from a link's stale queue (after a cut path came back): older
      // than this node's own return (its neighbours' offers told it what holds since), or the
      // sender's word that it dropped this node from before the sender itself came back.
      continue;
    } else if (i.rank == rank_) {
      const std::string why = "rank " + std::to_string(from) + " dropped this node from the run at round " +
                              std::to_string(i.round) + " (" + i.cause + ")";
      // continue: the node asks its neighbours to admit it again (node/run/rejoining.hpp).
      return status::error(continue_ && rejoins_ ? errc::rejoin : errc::peer_lost, why);
    } else if (!continue_) {  // stop, naming the node that left first, and pass that name on
      if (!stop_cause_) stop_cause_ = departure{.rank = i.rank, .round = i.round, .cause = i.cause, .reported_by = from};
      return status::error(errc::peer_lost, "rank " + std::to_string(i.rank) + " left the run at round " +
                                                std::to_string(i.round) + ": " + i.cause + " (as rank " +
                                                std::to_string(from) + " reports)");
    } else {
      left({.rank = i.rank, .round = i.round, .cause = i.cause, .reported_by = from}, from);
    }
  }
  return status::ok();
}

void peer_failures::rejoined(int rank, std::uint64_t from, std::optional<int> degree, int told_by) {
  // News of a neighbour that rejoined without this node (it did not take this node's offer): the
  // edge stays down at both ends.
  const bool neighbour = std::find(peers_.begin(), peers_.end(), rank) != peers_.end();
  if (neighbour && told_by != rank_) return;
  if (!members_.record_join(rank, from, degree)) return;
  items_.clear();
  items_.push_back({.what = notice_item::kind::joined, .rank = rank, .round = from});
  if (const auto own = members_.degree_notice(); own && told_by == rank_)
    items_.push_back({.what = notice_item::kind::degree, .round = own->second, .degree = own->first});
  send(items_, {told_by, rank});
  if (told_by == rank_) say(rank_, "rank " + std::to_string(rank) + " rejoins the run at round " + std::to_string(from));
  note_rejoin(std::to_string(rank) + " from round " + std::to_string(from));
  rejoin_account_ += told_by == rank_ ? ", admitted by this node)" : ", as rank " + std::to_string(told_by) + " reports)";
}

double peer_failures::seconds_since_start() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void peer_failures::note_rejoin(const std::string& text) {
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", seconds_since_start());
  rejoin_account_ += (rejoin_account_.empty() ? "" : "; ") + text + " (at " + at + " s";
}

void peer_failures::note_own_rejoin(std::uint64_t from, int donor) {
  note_rejoin("this node from round " + std::to_string(from));
  rejoin_account_ += ", from rank " + std::to_string(donor) + "'s model)";
}

status peer_failures::dropped_peer_heard(int from) {
  if (!continue_ || !rejoins_ || healed_cut_ || !members_.departed(from) || !members_.cut_off()) return status::ok();
  const auto parts = members_.components();
  healed_cut_ = true;
  return status::error(errc::rejoin, "rank " + std::to_string(from) + " is reachable again: this node's part of the run [" +
                                         list(parts.front()) + "] is not the largest, so it rejoins the run");
}

void peer_failures::begin_rejoin() {
  if (!std::exchange(healed_cut_, false)) return;
  members_ = initial_;
  departed_at_.clear();
}

void peer_failures::joined_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted) {
  members_.join_at(from, admitted, "did not admit this node when it rejoined");
  joined_at_ = from;
  for (int p : peers_)
    if (members_.departed(p) && ex_) ex_->drop(p);
}

void peer_failures::learn_departure(const notice_item& left, int told_by) {
  if (members_.record_departure({.rank = left.rank, .round = left.round, .cause = left.cause, .reported_by = told_by}, round_ + 2))
    if (ex_) ex_->drop(left.rank);
}

void peer_failures::load_state(state_reader& in) {
  members_.load_state(in);
  for (const departure& d : members_.departures())
    if (ex_) ex_->drop(d.rank);
}

void peer_failures::remix(std::uint64_t t) {
  if (!continue_ || !alg_) return;
  if (any_departure()) {
    const mixing_row row = members_.row_for(t);
    if (!same_row(row, alg_->row())) alg_->remix(row);
  }
  if (clip_rule* clip = clip_rule_of(*alg_)) {  // the proven hostile neighbours still out (back: none)
    const std::vector<int>& in = alg_->row().neighbours;
    const std::vector<int> refused = refused_by_this_node();
    clip->set_removed_hostile(static_cast<int>(std::count_if(refused.begin(), refused.end(), [&](int p) {
      return !std::binary_search(in.begin(), in.end(), p);
    })));
  }
}

void peer_failures::begin_round(std::uint64_t t) {
  round_ = t;
  remix(t);
}

void peer_failures::after_exchange(std::uint64_t t) { remix(t); }

void peer_failures::stopping(const std::string& why) {
  items_.clear();
  if (stop_cause_)
    items_.push_back({.what = notice_item::kind::left, .rank = stop_cause_->rank, .round = stop_cause_->round,
                      .cause = stop_cause_->cause});
  items_.push_back({.what = notice_item::kind::left, .rank = rank_, .round = round_, .cause = "it stopped: " + why});
  send(items_);
}

std::string peer_failures::describe_departures() const {
  std::string out;
  const auto& all = members_.departures();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const departure& d = all[i];
    char at[40] = "";
    if (i < departed_at_.size() && departed_at_[i] >= 0) std::snprintf(at, sizeof at, ", at %.1f s", departed_at_[i]);
    out += (out.empty() ? "" : "; ") + std::to_string(d.rank) + " at round " + std::to_string(d.round) + at + " (rank " +
           std::to_string(d.reported_by) + ": " + d.cause + ")";
  }
  return out;
}

}  // namespace qgossip
