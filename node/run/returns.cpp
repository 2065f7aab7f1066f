// Rejoining, the admitting side and the news of returns (node/run/returns.hpp); the joiner's side is
// node/run/returns_join.cpp.
#include "node/run/returns.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "algorithms/remix.hpp"
#include "core/errors.hpp"
#include "gossip/transport.hpp"
#include "node/log/run_log.hpp"
#include "node/membership/join_state.hpp"
#include "node/membership/notice.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

using clock = std::chrono::steady_clock;

// How long a neighbour holds at its offered round for the joiner's answer, and how often a wait for
// a state looks whether chunks still arrive.
constexpr auto kOfferHold = std::chrono::seconds(2);
constexpr auto kStateLook = std::chrono::seconds(1);

std::span<const std::byte> text_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

rejoinable& rejoinable_or_refuse(algorithm& alg) {
  rejoinable* r = rejoinable_of(alg);
  QG_ENFORCE(r != nullptr, alg.name() << " cannot rejoin a run: every node takes part in every round");
  return *r;
}

}  // namespace

returns::returns(int rank, std::uint64_t rounds, std::uint64_t model_size, std::uint64_t message_bytes,
                 const topology& topo, bool reweight, membership& members, std::vector<int> neighbours, departures& news,
                 algorithm& alg, run_log& log, notice_board& board)
    : rank_(rank),
      rounds_(rounds),
      model_size_(model_size),
      offer_wait_(slowest_message_time(2 * message_bytes * std::max<std::size_t>(1, neighbours.size()))),
      initial_(topo, rank, reweight),
      members_(members),
      neighbours_(std::move(neighbours)),
      news_(news),
      alg_(alg),
      rejoin_(rejoinable_or_refuse(alg)),
      log_(log),
      board_(board) {
  board.handle(notice_channel::notice, notice_item::kind::joined, *this);
  for (notice_item::kind k : {notice_item::kind::join, notice_item::kind::offer, notice_item::kind::accept,
                              notice_item::kind::refuse, notice_item::kind::left})
    board.handle(notice_channel::join, k, *this);
}

status returns::reply(int to, std::span<const notice_item> items, link_control& links,
                      std::optional<std::uint64_t> run_id) {
  const std::string text = encode_notice(items);
  return links.send_join(to, model_size_, text_bytes(text), run_id);
}

status returns::refuse(int to, const std::string& cause, link_control& links, std::optional<std::uint64_t> run_id) {
  if (refusals_logged_.insert(std::to_string(to) + cause).second)
    say(rank_, "refused rank " + std::to_string(to) + "'s join: " + cause);
  const notice_item no{.what = notice_item::kind::refuse, .cause = cause};
  (void)reply(to, std::span(&no, 1), links, run_id);
  return status::ok();
}

void returns::on_foreign_join(int from, std::uint64_t run_id, link_control& links) {
  char ids[64];
  std::snprintf(ids, sizeof ids, "run id 0x%016llx, this run's 0x%016llx", static_cast<unsigned long long>(run_id),
                static_cast<unsigned long long>(links.run_id()));
  (void)refuse(from, std::string("it is of another run (") + ids + "): another config, or another run's files",
               links, run_id);
}

void returns::announce(std::uint64_t last_round, link_control& links) {
  joining_ = true;
  announced_at_ = last_round;
  const notice_item ask{.what = notice_item::kind::join, .round = last_round};
  for (int j : neighbours_)
    if (status s = reply(j, std::span(&ask, 1), links); !s)
      say(rank_, "warning: could not ask rank " + std::to_string(j) + " to admit this node: " + s.to_string());
}

status returns::on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) {
  if (source.channel == notice_channel::join) return on_join_items(source, items, links);
  for (const notice_item& i : items)  // joined: news of a return, forwarded hop by hop
    if (i.rank != rank_) rejoined(i.rank, i.round, std::nullopt, source.from, links);
  return status::ok();
}

status returns::on_join_items(const notice_source& source, std::span<const notice_item> items, link_control& links) {
  const int from = source.from;
  const bool same_size = source.model_size == model_size_;
  for (const notice_item& i : items)
    if (!same_size && (i.what == notice_item::kind::join || i.what == notice_item::kind::accept))
      return refuse(from, "its model has " + std::to_string(source.model_size) + " values, this run's " +
                              std::to_string(model_size_), links);
  bool offered = false;
  for (const notice_item& i : items) {
    if (i.what == notice_item::kind::join) {
      if (status s = on_request(from, links); !s) return s;
    } else if (i.what == notice_item::kind::accept) {
      if (status s = on_accept(from, i, links); !s) return s;
    } else if (i.what == notice_item::kind::offer && joining_ && same_size) {
      offers_[from] = {i.round, i.degree};
      refusals_.erase(from);
      offered = true;
    } else if (i.what == notice_item::kind::refuse) {
      refusals_[from] = i.cause;
      offers_.erase(from);
      if (refusals_logged_.insert(std::to_string(from) + i.cause).second)
        say(rank_, "rank " + std::to_string(from) + " refused to admit this node: " + i.cause);
    } else if (i.what == notice_item::kind::left && joining_ && i.rank != rank_) {
      news_.learn(i, from, links);
    }
  }
  // While a round waits, an offer ends it, and so does a refusal from every neighbour: the node
  // loop then calls join(), which admits this node or says why not.
  if (offered && !in_join_) return status::error(errc::rejoin, "rank " + std::to_string(from) + " offers to admit this node");
  const bool all_refused = std::all_of(neighbours_.begin(), neighbours_.end(), [&](int j) { return refusals_.count(j) > 0; });
  if (joining_ && !in_join_ && all_refused) return status::error(errc::rejoin, "every neighbour refused this node");
  return status::ok();
}

status returns::on_request(int from, link_control& links) {
  if (due_.count(from)) return status::ok();  // admitted already, at a round to come
  const bool departed = members_.departed(from);
  if (!departed && !links.heard_from(from)) return status::ok();  // a fresh run: it starts as we do
  if (!departed && !news_.failed(from, "it restarted: it asked to rejoin the run", links))
    return status::ok();  // stop policy: the failure ends the round
  // A neighbour dropped for sending what does not decode would only send it again.
  if (news_.proven_hostile(from))
    return refuse(from, "this node dropped it for train messages that do not decode (hostile)", links);
  // A joiner's model is about to be replaced, and a cut-off node's is not the run's: neither admits.
  if (in_join_) return refuse(from, "it is rejoining the run itself", links);
  if (members_.cut_off()) return refuse(from, "it is cut off from the larger part of the run", links);
  links.refresh_link(from);  // a fresh link for the reply: no reconnection back-off
  // The round this node proposes; it will not begin it before the joiner's answer (admit_due). A
  // repeated request gets the same round while it stands, so every offer the joiner holds is valid.
  const auto standing = offered_.find(from);
  const std::uint64_t proposal = standing != offered_.end() && standing->second > round_ ? standing->second : round_ + 2;
  offered_[from] = proposal;
  std::vector<notice_item> items{{.what = notice_item::kind::offer,
                                  .round = proposal,
                                  .degree = static_cast<int>(members_.live_neighbours().size()) + 1}};
  for (const departure& d : members_.departures())
    if (d.rank != from && members_.departed(d.rank))
      items.push_back({.what = notice_item::kind::left, .rank = d.rank, .round = d.round, .cause = d.cause});
  if (status s = reply(from, items, links); !s)
    say(rank_, "warning: could not offer rank " + std::to_string(from) + " to rejoin: " + s.to_string());
  return status::ok();
}

status returns::on_accept(int from, const notice_item& accept, link_control& links) {
  const auto offer = offered_.find(from);
  if (!members_.departed(from) || due_.count(from) || offer == offered_.end())
    return refuse(from, "no offer of this node stands", links);
  if (accept.round < offer->second)
    return refuse(from, "join round " + std::to_string(accept.round) + " is before the offered round " +
                            std::to_string(offer->second), links);
  if (accept.round <= round_)
    return refuse(from, "join round " + std::to_string(accept.round) + " is past: this node is at round " +
                            std::to_string(round_), links);
  if (accept.round > rounds_)
    return refuse(from, "the run ends at round " + std::to_string(rounds_) + ", before join round " +
                            std::to_string(accept.round), links);
  offered_.erase(offer);
  due_[from] = {accept.round, accept.degree};
  rejoined(from, accept.round, accept.degree, rank_, links);
  links.readmit(from, accept.round);
  return status::ok();
}

void returns::rejoined(int rank, std::uint64_t from, std::optional<int> degree, int told_by, link_control& links) {
  // News of a neighbour that rejoined without this node (it did not take this node's offer): the
  // edge stays down at both ends.
  const bool neighbour = std::find(neighbours_.begin(), neighbours_.end(), rank) != neighbours_.end();
  if (neighbour && told_by != rank_) return;
  if (!members_.record_join(rank, from, degree)) return;
  std::vector<notice_item> items{{.what = notice_item::kind::joined, .rank = rank, .round = from}};
  if (const auto own = members_.degree_notice(); own && told_by == rank_)
    items.push_back({.what = notice_item::kind::degree, .round = own->second, .degree = own->first});
  news_.tell(items, links, {told_by, rank});
  if (told_by == rank_) say(rank_, "rank " + std::to_string(rank) + " rejoins the run at round " + std::to_string(from));
  note(std::to_string(rank) + " from round " + std::to_string(from));
  account_ += told_by == rank_ ? ", admitted by this node)" : ", as rank " + std::to_string(told_by) + " reports)";
}

void returns::note(const std::string& text) {
  char at[32];
  std::snprintf(at, sizeof at, "%.1f", std::chrono::duration<double>(clock::now() - started_).count());
  account_ += (account_.empty() ? "" : "; ") + text + " (at " + at + " s";
}

status returns::dropped_peer_heard(int from) {
  if (healed_cut_ || !members_.departed(from) || !members_.cut_off()) return status::ok();
  const auto parts = members_.components();
  healed_cut_ = true;
  return status::error(errc::rejoin, "rank " + std::to_string(from) + " is reachable again: this node's part of the run [" +
                                         rank_list(parts.front()) + "] is not the largest, so it rejoins the run");
}

status returns::wait_for_states(exchange& ex, std::chrono::milliseconds first_quiet,
                                 const std::function<status(clock::time_point)>& wait_once) {
  std::uint64_t seen = ex.state_bytes_received();
  clock::time_point deadline = clock::now() + first_quiet;
  for (;;) {
    const status s = wait_once(std::min(deadline, clock::now() + kStateLook));
    if (s.code() != errc::timeout) return s;
    if (const std::uint64_t now_seen = ex.state_bytes_received(); now_seen != seen) {
      seen = now_seen;
      deadline = clock::now() + kStateQuiet;
    } else if (clock::now() >= deadline) {
      return s;
    }
  }
}

std::vector<float> returns::own_state() const {
  const auto x = alg_.model();
  const auto pub = rejoin_.public_state();
  std::vector<float> out(x.begin(), x.end());
  if (!pub.empty() && pub.data() != x.data()) out.insert(out.end(), pub.begin(), pub.end());
  return out;
}

status returns::admit(int peer, std::uint64_t t, exchange& ex) {
  std::uint64_t state_bytes = 0;
  {  // sent (the transport holds its own copy of each chunk), then let go before theirs arrives
    const std::vector<float> mine = own_state();
    state_bytes = mine.size() * sizeof(float);
    if (status s = ex.send_state(peer, t, model_size_, mine); !s) return s;
  }
  inbound_message theirs;
  // The joiner first takes every admitting neighbour's state (as many as this node's degree), at the
  // slowest a message moves (gossip/transport.hpp), before it sends its own.
  const std::uint64_t before_ours = state_bytes * std::max<std::size_t>(1, neighbours_.size());
  const auto first_quiet =
      std::chrono::duration_cast<std::chrono::milliseconds>(kStateQuiet) + slowest_message_time(before_ours);
  if (status s = wait_for_states(ex, first_quiet, [&](clock::time_point deadline) {
        return ex.wait_until(deadline, [&] { return ex.take_state(peer, t, theirs) || ex.dropped(peer); });
      });
      !s)
    return s.code() == errc::timeout ? status::error(errc::timeout, "no state from rank " + std::to_string(peer)) : s;
  if (theirs.header.kind != message_kind::join_state) return status::error(errc::peer_lost, "it failed");
  return install(peer, t, theirs);
}

status returns::install(int peer, std::uint64_t t, const inbound_message& theirs) {
  join_state state;
  if (status s = parse_join_state(theirs.header.count, theirs.payload, model_size_, state); !s)
    return status::error(errc::corrupt, "rank " + std::to_string(peer) + "'s state: " + s.message());
  const std::span<const float> pub = state.public_state.empty() ? std::span<const float>(state.model)
                                                                : std::span<const float>(state.public_state);
  const mixing_row full = members_.row_for(t);
  std::vector<int> keep(alg_.row().neighbours);
  keep.insert(std::lower_bound(keep.begin(), keep.end(), peer), peer);
  rejoin_.admit(restricted_row(full, keep), peer, pub);
  return status::ok();
}

// An offer holds this node at the start of its offered round until the joiner accepts or refuses
// (milliseconds, once it has every offer), so that the round it accepts has not begun here; after
// kOfferHold and twice offer_wait_ (the joiner waits up to one for its other neighbours' offers, a
// busy neighbour's round of large messages) the offer is withdrawn and the round goes on.
status returns::hold_for_offers(std::uint64_t t, exchange& ex) {
  auto open = [&] {
    return std::any_of(offered_.begin(), offered_.end(), [&](const auto& o) { return o.second <= t; });
  };
  if (!open()) return status::ok();
  const status s = ex.wait_until(clock::now() + kOfferHold + 2 * offer_wait_, [&] { return !open(); });
  if (!s && s.code() != errc::timeout) return s;
  for (auto it = offered_.begin(); it != offered_.end();) {
    if (it->second > t) {
      ++it;
      continue;
    }
    say(rank_, "rank " + std::to_string(it->first) + " did not answer this node's offer to admit it at round " +
                   std::to_string(it->second) + "; withdrawn");
    it = offered_.erase(it);
  }
  return status::ok();
}

status returns::admit_due(std::uint64_t t, exchange& ex) {
  if (status s = ex.poll(); !s) return s;  // a node left with no neighbour still hears joiners
  if (status s = hold_for_offers(t, ex); !s) return s;
  round_ = t;
  // The round after the start-up announcement completed: this node is in the run, and an offer or
  // a refusal that reaches it now (a neighbour's stale queue) is nothing to act on.
  if (joining_ && !in_join_ && t > announced_at_ + 1) joining_ = false;
  for (auto it = due_.begin(); it != due_.end();) {
    const auto [peer, a] = *it;
    if (a.round != t) {
      ++it;
      continue;
    }
    it = due_.erase(it);
    if (members_.departed(peer)) continue;  // it failed again before its round
    if (status s = admit(peer, t, ex); !s) {
      if (s.code() == errc::cancelled) return s;
      if (!news_.failed(peer, "did not complete its rejoining: " + s.to_string(), ex))
        return status::error(errc::peer_lost, "rank " + std::to_string(peer) + " did not complete its rejoining");
      continue;
    }
    say(rank_, "rank " + std::to_string(peer) + " rejoined at round " + std::to_string(t) + "; its copies are exact again");
    log_.peer_joined(peer, t, rank_);
  }
  return status::ok();
}

}  // namespace qgossip
