#include "node/run/departures.hpp"

#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "gossip/exchange/events.hpp"
#include "node/config/config.hpp"
#include "node/log/run_log.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

bool same_row(const mixing_row& a, const mixing_row& b) {
  return a.neighbours == b.neighbours && a.weights == b.weights && a.self_weight == b.self_weight;
}

bool refused(const departure& d) { return d.cause.find(exchange_events::kUndecodable) != std::string::npos; }

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out.empty() ? "none" : out;
}

departures::departures(const run_config& c, int rank, membership& members, std::vector<int> peers, bool rejoins,
                       algorithm& alg, run_log& log, notice_board& board)
    : rank_(rank),
      continue_(c.network.on_peer_failure == peer_failure_policy::train_on),
      rejoins_(rejoins),
      members_(members),
      peers_(std::move(peers)),
      alg_(alg),
      log_(log) {
  board.handle(notice_channel::notice, notice_item::kind::left, *this);
  board.handle(notice_channel::notice, notice_item::kind::degree, *this);
}

void departures::tell(std::span<const notice_item> items, link_control& links, std::initializer_list<int> except) {
  if (items.empty()) return;
  std::vector<int> to;
  for (int p : peers_)
    if (std::find(except.begin(), except.end(), p) == except.end() && !links.dropped(p) && !members_.departed(p))
      to.push_back(p);
  const std::string payload = encode_notice(items);
  const auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
  if (status s = links.send_notice(to, bytes, round_); !s)
    say(rank_, "warning: could not send a notice to ranks " + rank_list(to) + ": " + s.to_string());
}

void departures::left(const departure& d, int told_by, link_control& links) {
  if (!members_.record_departure(d, round_ + 2)) return;
  departed_at_.resize(members_.departures().size() - 1, -1.0);
  departed_at_.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  std::vector<notice_item> items{{.what = notice_item::kind::left, .rank = d.rank, .round = d.round, .cause = d.cause}};
  if (const auto degree = members_.degree_notice())
    items.push_back({.what = notice_item::kind::degree, .round = degree->second, .degree = degree->first});
  tell(items, links, {told_by});
  links.drop(d.rank);
  say(rank_, "rank " + std::to_string(d.rank) + " left the run at round " + std::to_string(d.round) + " (rank " +
                 std::to_string(d.reported_by) + ": " + d.cause + "); training on with ranks " +
                 rank_list(members_.live_neighbours()));
  log_.peer_left(d.rank, d.round, d.reported_by, d.cause);
  const auto parts = members_.components();
  if (parts.size() > 1) {
    std::string others;
    for (std::size_t i = 1; i < parts.size(); ++i) others += " [" + rank_list(parts[i]) + "]";
    say(rank_, "warning: the graph has split into " + std::to_string(parts.size()) + " parts: this node's [" +
                   rank_list(parts[0]) + "], and" + others + "; each part trains on its own");
  }
}

bool departures::failed(int peer, const std::string& why, link_control& links) {
  const departure d{.rank = peer, .round = round_, .cause = why, .reported_by = rank_};
  if (!continue_) {
    if (!stop_cause_) stop_cause_ = d;
    return false;
  }
  // The peer, if it still runs, learns that it was dropped (and stops) from this notice.
  if (!links.dropped(peer)) {
    const notice_item you{.what = notice_item::kind::left, .rank = peer, .round = round_, .cause = why};
    const std::string payload = encode_notice(std::span(&you, 1));
    const int to[1] = {peer};
    (void)links.send_notice(to, std::as_bytes(std::span(payload.data(), payload.size())), round_);
  }
  left(d, rank_, links);
  return true;
}

status departures::on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) {
  for (const notice_item& i : items) {
    if (i.what == notice_item::kind::degree) {
      members_.record_degree(source.from, i.degree, i.round);
    } else if (status s = on_left(source.from, i, links); !s) {
      return s;
    }
  }
  return status::ok();
}

// News that `i.rank` left, from neighbour `from` (stale news already left out by the board).
status departures::on_left(int from, const notice_item& i, link_control& links) {
  if (i.rank == rank_) {
    const std::string why = "rank " + std::to_string(from) + " dropped this node from the run at round " +
                            std::to_string(i.round) + " (" + i.cause + ")";
    // continue: the node asks its neighbours to admit it again (node/run/returns.hpp).
    return status::error(continue_ && rejoins_ ? errc::rejoin : errc::peer_lost, why);
  }
  if (!continue_) {  // stop, naming the node that left first, and pass that name on
    if (!stop_cause_) stop_cause_ = departure{.rank = i.rank, .round = i.round, .cause = i.cause, .reported_by = from};
    return status::error(errc::peer_lost, "rank " + std::to_string(i.rank) + " left the run at round " +
                                              std::to_string(i.round) + ": " + i.cause + " (as rank " +
                                              std::to_string(from) + " reports)");
  }
  left({.rank = i.rank, .round = i.round, .cause = i.cause, .reported_by = from}, from, links);
  return status::ok();
}

void departures::learn(const notice_item& left, int told_by, link_control& links) {
  if (members_.record_departure({.rank = left.rank, .round = left.round, .cause = left.cause, .reported_by = told_by},
                                round_ + 2))
    links.drop(left.rank);
}

bool departures::proven_hostile(int peer) const {
  const auto& all = members_.departures();
  return std::any_of(all.begin(), all.end(), [&](const departure& d) { return d.rank == peer && refused(d); });
}

std::vector<int> departures::refused_by_this_node() const {
  std::vector<int> out;
  for (const departure& d : members_.departures())
    if (d.reported_by == rank_ && refused(d) && std::find(out.begin(), out.end(), d.rank) == out.end())
      out.push_back(d.rank);
  return out;
}

void departures::load_state(state_reader& in, link_control& links) {
  members_.load_state(in);
  for (const departure& d : members_.departures()) links.drop(d.rank);
}

void departures::remix(std::uint64_t t) {
  if (!continue_) return;
  if (!members_.departures().empty()) {
    const mixing_row row = members_.row_for(t);
    if (!same_row(row, alg_.row())) alg_.remix(row);
  }
  if (clip_rule* clip = clip_rule_of(alg_)) {  // the proven hostile neighbours still out (back: none)
    const std::vector<int>& in = alg_.row().neighbours;
    const std::vector<int> refused = refused_by_this_node();
    clip->set_removed_hostile(static_cast<int>(std::count_if(refused.begin(), refused.end(), [&](int p) {
      return !std::binary_search(in.begin(), in.end(), p);
    })));
  }
}

void departures::begin_round(std::uint64_t t) {
  round_ = t;
  remix(t);
}

void departures::after_exchange(std::uint64_t t) { remix(t); }

void departures::stopping(const std::string& why, link_control& links) {
  std::vector<notice_item> items;
  if (stop_cause_)
    items.push_back({.what = notice_item::kind::left, .rank = stop_cause_->rank, .round = stop_cause_->round,
                     .cause = stop_cause_->cause});
  items.push_back({.what = notice_item::kind::left, .rank = rank_, .round = round_, .cause = "it stopped: " + why});
  tell(items, links);
}

std::string departures::describe() const {
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
