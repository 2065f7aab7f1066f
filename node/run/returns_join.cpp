// Rejoining, the joiner's side (node/run/returns.hpp): after a round ended with errc::rejoin, the node
// gathers its neighbours' offers, accepts the latest round offered, exchanges states with every
// neighbour that admitted it, and restarts from its donor's model.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "core/hash.hpp"
#include "node/log/run_log.hpp"
#include "node/membership/join_state.hpp"
#include "node/run/returns.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

namespace {

using clock = std::chrono::steady_clock;

// How long a joiner waits for the other neighbours' offers after the first one arrived (and
// offer_wait_: a neighbour in a round of large messages answers after it), how many times it tries,
// and how long it waits for an offer.
constexpr auto kOfferWindow = std::chrono::milliseconds(500);
constexpr int kAttempts = 8;
constexpr auto kOfferDeadline = std::chrono::seconds(30);

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

// The joiner's waits: news that this node was dropped (errc::rejoin, from a notice a neighbour sent
// before it admitted it again) changes nothing while it rejoins.
status returns::wait(exchange& ex, clock::time_point deadline, const std::function<bool()>& done) {
  for (;;)
    if (status s = ex.wait_until(deadline, done); s.code() != errc::rejoin) return s;
}

// The joiner: every neighbour's offer (or refusal), as far as the departures it hears of allow.
status returns::gather_offers(std::uint64_t current, exchange& ex) {
  offers_.clear();
  refusals_.clear();
  announce(current, ex);
  auto answered = [&] {
    for (int j : neighbours_)
      if (!members_.departed(j) && !offers_.count(j) && !refusals_.count(j)) return false;
    return true;
  };
  if (status s = wait(ex, clock::now() + kOfferDeadline, [&] { return !offers_.empty() || answered(); }); !s)
    return s.code() == errc::timeout ? status::error(errc::timeout, "no neighbour offered to admit this node") : s;
  if (status s = wait(ex, clock::now() + kOfferWindow + offer_wait_, answered); !s && s.code() != errc::timeout) return s;
  return status::ok();
}

void returns::joined_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted, link_control& links) {
  members_.join_at(from, admitted, "did not admit this node when it rejoined");
  board_.returned(from);
  for (int p : neighbours_)
    if (members_.departed(p)) links.drop(p);
}

// The joiner, once it accepted at round T: every accepting neighbour's state (or refusal), the
// donor's model, its own state to each, and the admissions.
status returns::exchange_states(std::uint64_t T, const std::vector<int>& accepted, exchange& ex) {
  std::map<int, inbound_message> states;
  auto settled = [&] {
    for (int j : accepted) {
      // A neighbour that failed meanwhile has departed (a node rejoining after a cut has dropped its
      // neighbours across the cut from its exchange until they admit it: readmit).
      if (states.count(j) || refusals_.count(j) || members_.departed(j)) continue;
      if (!ex.take_state(j, T, states[j])) {
        states.erase(j);
        return false;
      }
    }
    return true;
  };
  if (status s = wait_for_states(ex, kStateQuiet, [&](clock::time_point deadline) { return wait(ex, deadline, settled); });
      !s && s.code() != errc::timeout)
    return s;
  if (states.empty()) return status::error(errc::timeout, "no neighbour sent its state for round " + std::to_string(T));
  const int donor = states.begin()->first;
  std::string model_hash;
  {  // the donor's parsed state lives only until restart has copied it (at size, each copy is GBs)
    join_state from_donor;
    if (status s = parse_join_state(states.begin()->second.header.count, states.begin()->second.payload, model_size_,
                                    from_donor);
        !s)
      return status::error(errc::corrupt, "rank " + std::to_string(donor) + "'s state: " + s.message());
    rejoin_.restart(from_donor.model);
    model_hash = hash_text(from_donor.model);
  }
  std::vector<std::pair<int, int>> admitted;
  for (const auto& [j, state] : states) admitted.emplace_back(j, offers_[j].degree);
  joined_at(T, admitted, ex);
  ex.restart_at(T);
  {  // this node's state goes to every neighbour first, then is let go before the installs
    const std::vector<float> mine = own_state();
    for (const auto& [j, state] : states) {
      ex.readmit(j, T);
      if (status s = ex.send_state(j, T, model_size_, mine); !s) return s;
    }
  }
  for (auto& [j, state] : states) {
    if (status s = install(j, T, state); !s) return s;
    state.payload = {};  // installed: its bytes are not kept beside the copy made of them
  }
  say(rank_, "rejoined the run at round " + std::to_string(T) + " from rank " + std::to_string(donor) +
                 "'s model (model hash " + model_hash + "), with ranks " + list_of(admitted));
  log_.rejoined(T, donor);
  note("this node from round " + std::to_string(T));
  account_ += ", from rank " + std::to_string(donor) + "'s model)";
  return status::ok();
}

// One try: the offers, the accept of the latest round offered, the states. again: worth another try.
status returns::attempt(std::uint64_t current, std::uint64_t& restart_at, exchange& ex, bool& again) {
  again = false;
  if (status s = gather_offers(current, ex); !s) {
    again = s.code() == errc::timeout;
    return s;
  }
  if (offers_.empty()) {
    std::string why;
    for (const auto& [j, cause] : refusals_) why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(j) + ": " + cause);
    return why.empty() ? status::error(errc::peer_lost, "no live neighbour is left to rejoin the run through")
                       : status::error(errc::refused, "every live neighbour refused to admit this node (" + why + ")");
  }
  std::uint64_t T = 0;  // the latest round offered: every neighbour holds before it until it hears
  for (const auto& [j, o] : offers_) T = std::max(T, o.round);
  if (T > rounds_) return status::error(errc::refused, "the run ends at round " + std::to_string(rounds_) + ", too soon to rejoin");
  std::vector<int> accepted;
  const notice_item yes{.what = notice_item::kind::accept, .round = T, .degree = static_cast<int>(offers_.size())};
  for (const auto& [j, o] : offers_)
    if (reply(j, std::span(&yes, 1), ex)) accepted.push_back(j);
  const status s = exchange_states(T, accepted, ex);
  if (s) {
    restart_at = T;
    return s;
  }
  say(rank_, "rejoining at round " + std::to_string(T) + " failed (" + s.to_string() + "); trying again");
  again = true;
  return s;
}

status returns::join(std::uint64_t current, std::uint64_t& restart_at, exchange& ex) {
  in_join_ = joining_ = true;
  if (std::exchange(healed_cut_, false)) {  // after a cut: start from the topology, as a restarted node
    members_ = initial_;
    news_.forget_times();
  }
  status last;
  bool again = true;
  for (int attempt_no = 1; attempt_no <= kAttempts && again; ++attempt_no) last = attempt(current, restart_at, ex, again);
  in_join_ = joining_ = false;
  return last;
}

}  // namespace qgossip
