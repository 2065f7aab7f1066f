#include "node/run/rejoining.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "algorithms/remix.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "gossip/exchange.hpp"
#include "node/log/run_log.hpp"
#include "node/membership/join_state.hpp"
#include "node/membership/notice.hpp"
#include "node/run/peer_failures.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

using clock = std::chrono::steady_clock;

// How long a joiner waits for the other neighbours' offers after the first one arrived, how long a
// neighbour holds at its offered round for the answer, and how many times a joiner tries.
constexpr auto kOfferWindow = std::chrono::milliseconds(500);
constexpr auto kOfferHold = std::chrono::seconds(2);
constexpr int kAttempts = 8;
// How long an end of an edge waits for the other's state.
constexpr auto kStateDeadline = std::chrono::seconds(30);

std::span<const std::byte> text_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

std::string hash_text(std::span<const float> v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(hash64(v)));
  return buf;
}

std::string list_of(const std::vector<std::pair<int, int>>& admitted) {
  std::string out;
  for (const auto& [j, degree] : admitted) out += (out.empty() ? "" : ", ") + std::to_string(j);
  return out;
}

}  // namespace

rejoining::rejoining(int rank, std::uint64_t rounds, std::uint32_t model_size, std::vector<int> neighbours)
    : rank_(rank), rounds_(rounds), model_size_(model_size), neighbours_(std::move(neighbours)) {}

void rejoining::attach(exchange& ex, algorithm& alg, peer_failures& failures, run_log& log) {
  ex_ = &ex;
  alg_ = &alg;
  rejoin_ = rejoinable_of(alg);
  QG_ENFORCE(rejoin_ != nullptr, alg.name() << " cannot rejoin a run: every node takes part in every round");
  failures_ = &failures;
  log_ = &log;
}

status rejoining::reply(int to, std::span<const notice_item> items, std::optional<std::uint64_t> run_id) {
  const std::string text = encode_notice(items);
  return ex_->send_join(to, model_size_, text_bytes(text), run_id);
}

status rejoining::refuse(int to, const std::string& cause, std::optional<std::uint64_t> run_id) {
  if (refusals_logged_.insert(std::to_string(to) + cause).second)
    say(rank_, "refused rank " + std::to_string(to) + "'s join: " + cause);
  const notice_item no{.what = notice_item::kind::refuse, .cause = cause};
  (void)reply(to, std::span(&no, 1), run_id);
  return status::ok();
}

void rejoining::on_foreign_join(int from, std::uint64_t run_id) {
  char ids[64];
  std::snprintf(ids, sizeof ids, "run id 0x%016llx, this run's 0x%016llx", static_cast<unsigned long long>(run_id),
                static_cast<unsigned long long>(ex_->options().run_id));
  (void)refuse(from, std::string("it is of another run (") + ids + "): another config, or another run's files", run_id);
}

void rejoining::announce(std::uint64_t last_round) {
  joining_ = true;
  announced_at_ = last_round;
  const notice_item ask{.what = notice_item::kind::join, .round = last_round};
  for (int j : neighbours_)
    if (status s = reply(j, std::span(&ask, 1)); !s)
      say(rank_, "warning: could not ask rank " + std::to_string(j) + " to admit this node: " + s.to_string());
}

status rejoining::on_join(int from, const wire_header& h, std::span<const std::byte> payload) {
  std::vector<notice_item> items;
  if (status s = parse_notice(payload, failures_->nodes(), items); !s) return s;
  if (h.count != model_size_) {
    for (const notice_item& i : items)
      if (i.what == notice_item::kind::join || i.what == notice_item::kind::accept)
        return refuse(from, "its model has " + std::to_string(h.count) + " values, this run's " +
                                std::to_string(model_size_));
  }
  bool offered = false;
  for (const notice_item& i : items) {
    switch (i.what) {
      case notice_item::kind::join:
        if (status s = on_request(from); !s) return s;
        break;
      case notice_item::kind::accept:
        if (status s = on_accept(from, i); !s) return s;
        break;
      case notice_item::kind::offer:
        if (joining_ && h.count == model_size_) {
          offers_[from] = {i.round, i.degree};
          refusals_.erase(from);
          offered = true;
        }
        break;
      case notice_item::kind::refuse:
        refusals_[from] = i.cause;
        offers_.erase(from);
        if (refusals_logged_.insert(std::to_string(from) + i.cause).second)
          say(rank_, "rank " + std::to_string(from) + " refused to admit this node: " + i.cause);
        break;
      case notice_item::kind::left:
        if (joining_ && i.rank != rank_) failures_->learn_departure(i, from);
        break;
      default:
        break;  // joined and degree travel in notices
    }
  }
  // While a round waits, an offer ends it, and so does a refusal from every neighbour: the node
  // loop then calls join(), which admits this node or says why not.
  if (offered && !in_join_) return status::error(errc::rejoin, "rank " + std::to_string(from) + " offers to admit this node");
  const bool all_refused = std::all_of(neighbours_.begin(), neighbours_.end(), [&](int j) { return refusals_.count(j) > 0; });
  if (joining_ && !in_join_ && all_refused) return status::error(errc::rejoin, "every neighbour refused this node");
  return status::ok();
}

status rejoining::on_request(int from) {
  if (due_.count(from)) return status::ok();  // admitted already, at a round to come
  const bool departed = failures_->members().departed(from);
  if (!departed && !ex_->heard_from(from)) return status::ok();  // a fresh run: it starts as we do
  if (!departed && !failures_->on_peer_failure(from, "it restarted: it asked to rejoin the run"))
    return status::ok();  // stop policy: the failure ends the round
  // A neighbour dropped for sending what does not decode would only send it again.
  if (failures_->proven_hostile(from))
    return refuse(from, "this node dropped it for train messages that do not decode (hostile)");
  // A joiner's model is about to be replaced, and a cut-off node's is not the run's: neither admits.
  if (in_join_) return refuse(from, "it is rejoining the run itself");
  if (failures_->members().cut_off()) return refuse(from, "it is cut off from the larger part of the run");
  ex_->refresh_link(from);  // a fresh link for the reply: no reconnection back-off
  // The round this node proposes; it will not begin it before the joiner's answer (admit_due). A
  // repeated request gets the same round while it stands, so every offer the joiner holds is valid.
  const auto standing = offered_.find(from);
  const std::uint64_t proposal = standing != offered_.end() && standing->second > round_ ? standing->second : round_ + 2;
  offered_[from] = proposal;
  std::vector<notice_item> items{{.what = notice_item::kind::offer,
                                  .round = proposal,
                                  .degree = static_cast<int>(failures_->members().live_neighbours().size()) + 1}};
  for (const departure& d : failures_->members().departures())
    if (d.rank != from && failures_->members().departed(d.rank))
      items.push_back({.what = notice_item::kind::left, .rank = d.rank, .round = d.round, .cause = d.cause});
  if (status s = reply(from, items); !s)
    say(rank_, "warning: could not offer rank " + std::to_string(from) + " to rejoin: " + s.to_string());
  return status::ok();
}

status rejoining::on_accept(int from, const notice_item& accept) {
  const auto offer = offered_.find(from);
  if (!failures_->members().departed(from) || due_.count(from) || offer == offered_.end())
    return refuse(from, "no offer of this node stands");
  if (accept.round < offer->second)
    return refuse(from, "join round " + std::to_string(accept.round) + " is before the offered round " +
                            std::to_string(offer->second));
  if (accept.round <= round_)
    return refuse(from, "join round " + std::to_string(accept.round) + " is past: this node is at round " +
                            std::to_string(round_));
  if (accept.round > rounds_)
    return refuse(from, "the run ends at round " + std::to_string(rounds_) + ", before join round " +
                            std::to_string(accept.round));
  offered_.erase(offer);
  due_[from] = {accept.round, accept.degree};
  failures_->rejoined(from, accept.round, accept.degree, rank_);
  ex_->readmit(from, accept.round);
  return status::ok();
}

std::vector<float> rejoining::own_state() const {
  const auto x = alg_->model();
  const auto pub = rejoin_->public_state();
  std::vector<float> out(x.begin(), x.end());
  if (!pub.empty() && pub.data() != x.data()) out.insert(out.end(), pub.begin(), pub.end());
  return out;
}

status rejoining::admit(int peer, std::uint64_t t) {
  const std::vector<float> mine = own_state();
  if (status s = ex_->send_state(peer, t, model_size_, mine); !s) return s;
  inbound_message theirs;
  if (status s = ex_->wait_until(clock::now() + kStateDeadline,
                                 [&] { return ex_->take_state(peer, t, theirs) || ex_->dropped(peer); });
      !s)
    return s.code() == errc::timeout ? status::error(errc::timeout, "no state from rank " + std::to_string(peer)) : s;
  if (theirs.header.kind != message_kind::join_state) return status::error(errc::peer_lost, "it failed");
  return install(peer, t, theirs);
}

status rejoining::install(int peer, std::uint64_t t, const inbound_message& theirs) {
  join_state state;
  if (status s = parse_join_state(theirs.header.count, theirs.payload, model_size_, state); !s)
    return status::error(errc::corrupt, "rank " + std::to_string(peer) + "'s state: " + s.message());
  const std::span<const float> pub = state.public_state.empty() ? std::span<const float>(state.model)
                                                                : std::span<const float>(state.public_state);
  const mixing_row full = failures_->row_for(t);
  std::vector<int> keep(alg_->row().neighbours);
  keep.insert(std::lower_bound(keep.begin(), keep.end(), peer), peer);
  rejoin_->admit(restricted_row(full, keep), peer, pub);
  return status::ok();
}

// An offer holds this node at the start of its offered round until the joiner accepts or refuses
// (milliseconds: it answers at once), so that the round it accepts has not begun here; after
// kOfferHold the offer is withdrawn and the round goes on.
status rejoining::hold_for_offers(std::uint64_t t) {
  auto open = [&] {
    return std::any_of(offered_.begin(), offered_.end(), [&](const auto& o) { return o.second <= t; });
  };
  if (!open()) return status::ok();
  const status s = ex_->wait_until(clock::now() + kOfferHold, [&] { return !open(); });
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

status rejoining::admit_due(std::uint64_t t) {
  if (status s = ex_->poll(); !s) return s;  // a node left with no neighbour still hears joiners
  if (status s = hold_for_offers(t); !s) return s;
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
    if (failures_->members().departed(peer)) continue;  // it failed again before its round
    if (status s = admit(peer, t); !s) {
      if (s.code() == errc::cancelled) return s;
      if (!failures_->on_peer_failure(peer, "did not complete its rejoining: " + s.to_string()))
        return status::error(errc::peer_lost, "rank " + std::to_string(peer) + " did not complete its rejoining");
      continue;
    }
    say(rank_, "rank " + std::to_string(peer) + " rejoined at round " + std::to_string(t) + "; its copies are exact again");
    if (log_) log_->peer_joined(peer, t, rank_);
  }
  return status::ok();
}

// The joiner's waits: news that this node was dropped (errc::rejoin, from a notice a neighbour sent
// before it admitted it again) changes nothing while it rejoins.
status rejoining::wait(clock::time_point deadline, const std::function<bool()>& done) {
  for (;;)
    if (status s = ex_->wait_until(deadline, done); s.code() != errc::rejoin) return s;
}

// The joiner: every neighbour's offer (or refusal), as far as the departures it hears of allow.
status rejoining::gather_offers(std::uint64_t current) {
  offers_.clear();
  refusals_.clear();
  announce(current);
  auto answered = [&] {
    for (int j : neighbours_)
      if (!failures_->members().departed(j) && !offers_.count(j) && !refusals_.count(j)) return false;
    return true;
  };
  if (status s = wait(clock::now() + kStateDeadline, [&] { return !offers_.empty() || answered(); }); !s)
    return s.code() == errc::timeout ? status::error(errc::timeout, "no neighbour offered to admit this node") : s;
  if (status s = wait(clock::now() + kOfferWindow, answered); !s && s.code() != errc::timeout) return s;
  return status::ok();
}

// The joiner, once it accepted at round T: every accepting neighbour's state (or refusal), the
// donor's model, its own state to each, and the admissions.
status rejoining::exchange_states(std::uint64_t T, const std::vector<int>& accepted) {
  std::map<int, inbound_message> states;
  auto settled = [&] {
    for (int j : accepted) {
      // A neighbour that failed meanwhile has departed (a node rejoining after a cut has dropped its
      // neighbours across the cut from its exchange until they admit it: readmit).
      if (states.count(j) || refusals_.count(j) || failures_->members().departed(j)) continue;
      if (!ex_->take_state(j, T, states[j])) {
        states.erase(j);
        return false;
      }
    }
    return true;
  };
  if (status s = wait(clock::now() + kStateDeadline, settled); !s && s.code() != errc::timeout) return s;
  if (states.empty()) return status::error(errc::timeout, "no neighbour sent its state for round " + std::to_string(T));
  const auto& [donor, donor_state] = *states.begin();
  join_state from_donor;
  if (status s = parse_join_state(donor_state.header.count, donor_state.payload, model_size_, from_donor); !s)
    return status::error(errc::corrupt, "rank " + std::to_string(donor) + "'s state: " + s.message());
  const std::vector<float>& model = from_donor.model;
  rejoin_->restart(model);
  std::vector<std::pair<int, int>> admitted;
  for (const auto& [j, state] : states) admitted.emplace_back(j, offers_[j].degree);
  failures_->joined_at(T, admitted);
  const std::vector<float> mine = own_state();
  ex_->restart_at(T);
  for (const auto& [j, state] : states) {
    ex_->readmit(j, T);
    if (status s = ex_->send_state(j, T, model_size_, mine); !s) return s;
    if (status s = install(j, T, state); !s) return s;
  }
  say(rank_, "rejoined the run at round " + std::to_string(T) + " from rank " + std::to_string(states.begin()->first) +
                 "'s model (model hash " + hash_text(model) + "), with ranks " + list_of(admitted));
  if (log_) log_->rejoined(T, states.begin()->first);
  failures_->note_own_rejoin(T, states.begin()->first);
  return status::ok();
}

status rejoining::join(std::uint64_t current, std::uint64_t& restart_at) {
  in_join_ = joining_ = true;
  failures_->begin_rejoin();
  status last;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    if (status s = gather_offers(current); !s) {
      last = s;
      if (s.code() != errc::timeout) break;
      continue;
    }
    if (offers_.empty()) {
      std::string why;
      for (const auto& [j, cause] : refusals_) why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(j) + ": " + cause);
      last = why.empty() ? status::error(errc::peer_lost, "no live neighbour is left to rejoin the run through")
                         : status::error(errc::refused, "every live neighbour refused to admit this node (" + why + ")");
      break;
    }
    std::uint64_t T = 0;  // the latest round offered: every neighbour holds before it until it hears
    for (const auto& [j, o] : offers_) T = std::max(T, o.round);
    if (T > rounds_) {
      last = status::error(errc::refused, "the run ends at round " + std::to_string(rounds_) + ", too soon to rejoin");
      break;
    }
    std::vector<int> accepted;
    const notice_item yes{.what = notice_item::kind::accept, .round = T, .degree = static_cast<int>(offers_.size())};
    for (const auto& [j, o] : offers_)
      if (reply(j, std::span(&yes, 1))) accepted.push_back(j);
    last = exchange_states(T, accepted);
    if (last) {
      restart_at = T;
      break;
    }
    say(rank_, "rejoining at round " + std::to_string(T) + " failed (" + last.to_string() + "); trying again");
  }
  in_join_ = joining_ = false;
  return last;
}

}  // namespace qgossip
