#include "node/membership/membership.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "topology/diameter.hpp"

namespace qgossip {

membership::membership(const topology& topo, int rank, bool reweight)
    : rank_(rank), reweight_(reweight), departed_(static_cast<std::size_t>(topo.n())),
      joined_from_(static_cast<std::size_t>(topo.n())) {
  QG_ENFORCE(rank >= 0 && rank < topo.n(), "rank " << rank << " of " << topo.n());
  for (int i = 0; i < topo.n(); ++i) {
    const auto nb = topo.neighbours(i);
    graph_.emplace_back(nb.begin(), nb.end());
  }
  neighbours_ = graph_[static_cast<std::size_t>(rank)];
  for (int j : neighbours_) weights_.push_back(topo.weight(rank, j));
  live_ = neighbours_;
  theirs_.resize(neighbours_.size());
  stale_margin_ = 2 * static_cast<std::uint64_t>(graph_diameter(topo)) + 2;
}

bool membership::departed(int r) const {
  return r >= 0 && static_cast<std::size_t>(r) < departed_.size() && departed_[static_cast<std::size_t>(r)];
}

bool membership::record_departure(const departure& d, std::uint64_t effective) {
  QG_ENFORCE(d.rank >= 0 && static_cast<std::size_t>(d.rank) < departed_.size() && d.rank != rank_,
             "departure of rank " << d.rank << " recorded by rank " << rank_);
  if (departed_[static_cast<std::size_t>(d.rank)]) return false;
  if (d.reported_by != rank_ && d.round + stale_margin_ < joined_from_[static_cast<std::size_t>(d.rank)])
    return false;  // news older than the rank's return
  departed_[static_cast<std::size_t>(d.rank)] = true;
  departures_.push_back(d);
  auto it = std::find(live_.begin(), live_.end(), d.rank);
  if (it == live_.end()) return true;
  live_.erase(it);
  if (!own_.empty()) effective = std::max(effective, own_.back().from);  // announcements never go back
  own_.push_back({effective, static_cast<int>(live_.size())});
  return true;
}

bool membership::record_join(int rank, std::uint64_t from, std::optional<int> degree) {
  QG_ENFORCE(rank >= 0 && static_cast<std::size_t>(rank) < departed_.size() && rank != rank_,
             "join of rank " << rank << " recorded by rank " << rank_);
  const auto r = static_cast<std::size_t>(rank);
  if (!departed_[r]) return false;
  departed_[r] = false;
  joined_from_[r] = from;
  joins_.push_back({rank, from});
  auto it = std::lower_bound(neighbours_.begin(), neighbours_.end(), rank);
  if (it == neighbours_.end() || *it != rank) return true;
  live_.insert(std::lower_bound(live_.begin(), live_.end(), rank), rank);
  if (!own_.empty()) from = std::max(from, own_.back().from);
  own_.push_back({from, static_cast<int>(live_.size())});
  if (degree) record_degree(rank, *degree, joined_from_[r]);
  return true;
}

void membership::join_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted, const std::string& why) {
  for (int j : std::vector<int>(live_)) {
    const bool in = std::any_of(admitted.begin(), admitted.end(), [&](const auto& a) { return a.first == j; });
    if (!in) record_departure({.rank = j, .round = from, .cause = why, .reported_by = rank_}, from);
  }
  own_.push_back({std::max(from, own_.empty() ? from : own_.back().from), static_cast<int>(live_.size())});
  for (const auto& [j, degree] : admitted) record_degree(j, degree, from);
}

std::uint64_t membership::joined_from(int r) const {
  return r >= 0 && static_cast<std::size_t>(r) < joined_from_.size() && !departed(r)
             ? joined_from_[static_cast<std::size_t>(r)]
             : 0;
}

std::optional<std::pair<int, std::uint64_t>> membership::degree_notice() const {
  if (own_.empty()) return std::nullopt;
  return std::make_pair(own_.back().degree, own_.back().from);
}

void membership::record_degree(int neighbour, int degree, std::uint64_t from) {
  auto it = std::lower_bound(neighbours_.begin(), neighbours_.end(), neighbour);
  if (it == neighbours_.end() || *it != neighbour) return;
  auto& h = theirs_[static_cast<std::size_t>(it - neighbours_.begin())];
  if (!h.empty() && from < h.back().from) from = h.back().from;
  h.push_back({from, degree});
}

int membership::degree_at(const std::vector<degree_change>& h, int initial, std::uint64_t r) {
  int d = initial;
  for (const degree_change& c : h)
    if (c.from <= r) d = c.degree;
  return d;
}

bool membership::changed_by(const std::vector<degree_change>& h, std::uint64_t r) {
  return !h.empty() && h.front().from <= r;
}

mixing_row membership::row_for(std::uint64_t r) const {
  mixing_row row;
  row.rank = rank_;
  const int own_degree = degree_at(own_, static_cast<int>(neighbours_.size()), r);
  double sum = 0;
  for (std::size_t k = 0; k < neighbours_.size(); ++k) {
    const auto j = static_cast<std::size_t>(neighbours_[k]);
    if (departed_[j] || r < joined_from_[j]) continue;
    const auto& h = theirs_[k];
    double w = weights_[k];
    if (reweight_ && (changed_by(own_, r) || changed_by(h, r))) {
      const int theirs = degree_at(h, static_cast<int>(graph_[static_cast<std::size_t>(neighbours_[k])].size()), r);
      w = 1.0 / (1.0 + static_cast<double>(std::max(own_degree, theirs)));
    }
    row.neighbours.push_back(neighbours_[k]);
    row.weights.push_back(w);
    sum += w;
  }
  row.self_weight = 1.0 - sum;
  return row;
}

void membership::save_state(state_writer& out) const {
  out.put_u64("departures", departures_.size());
  for (std::size_t i = 0; i < departures_.size(); ++i) {
    const departure& d = departures_[i];
    const std::string p = "departure[" + std::to_string(i) + "].";
    out.put_u64(p + "rank", static_cast<std::uint64_t>(d.rank));
    out.put_u64(p + "round", d.round);
    out.put_i64(p + "reported_by", d.reported_by);
    out.put_string(p + "cause", d.cause);
  }
  auto put_history = [&](const std::string& name, const std::vector<degree_change>& h) {
    std::vector<std::uint64_t> flat;
    for (const degree_change& c : h) flat.insert(flat.end(), {c.from, static_cast<std::uint64_t>(c.degree)});
    out.put_u64s(name, flat);
  };
  std::vector<std::uint64_t> joins;
  for (const rejoin& j : joins_) joins.insert(joins.end(), {static_cast<std::uint64_t>(j.rank), j.from});
  out.put_u64s("joins", joins);
  put_history("own_degrees", own_);
  for (std::size_t k = 0; k < neighbours_.size(); ++k)
    put_history("degrees[" + std::to_string(neighbours_[k]) + "]", theirs_[k]);
}

// Departures and joins in the order they happened: by round, a join before a departure noticed in
// its own first round.
void membership::replay(const std::vector<departure>& left, const std::vector<std::uint64_t>& joins, state_reader& in) {
  std::size_t d = 0, j = 0;
  while (d < left.size() || j < joins.size()) {
    const bool join_next = j < joins.size() && (d == left.size() || joins[j + 1] <= left[d].round);
    if (!join_next) {
      record_departure(left[d++], 0);
      continue;
    }
    if (joins[j] >= departed_.size() || static_cast<int>(joins[j]) == rank_) in.fail("join of rank " + std::to_string(joins[j]));
    record_join(static_cast<int>(joins[j]), joins[j + 1]);
    j += 2;
  }
}

void membership::load_state(state_reader& in) {
  const std::uint64_t count = in.get_u64("departures");
  if (count > kMaxEvents) in.fail("more than " + std::to_string(kMaxEvents) + " departures");
  std::vector<departure> left;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string p = "departure[" + std::to_string(i) + "].";
    departure d;
    const std::uint64_t rank = in.get_u64(p + "rank");
    if (rank >= departed_.size() || static_cast<int>(rank) == rank_) in.fail("departure of rank " + std::to_string(rank));
    d.rank = static_cast<int>(rank);
    d.round = in.get_u64(p + "round");
    d.reported_by = static_cast<int>(in.get_i64(p + "reported_by"));
    d.cause = in.get_string(p + "cause");
    left.push_back(std::move(d));
  }
  // Checkpoints written before rejoining have no joins.
  const std::vector<std::uint64_t> joins = in.next_name() == "joins" ? in.get_u64s("joins") : std::vector<std::uint64_t>{};
  if (joins.size() % 2 != 0 || joins.size() / 2 > kMaxEvents) in.fail("joins holds a bad count");
  replay(left, joins, in);
  auto get_history = [&](const std::string& name) {
    const std::vector<std::uint64_t> flat = in.get_u64s(name);
    if (flat.size() % 2 != 0) in.fail(name + " holds an odd count");
    std::vector<degree_change> h;
    for (std::size_t i = 0; i < flat.size(); i += 2) {
      if (flat[i + 1] >= departed_.size()) in.fail(name + ": degree " + std::to_string(flat[i + 1]));
      h.push_back({flat[i], static_cast<int>(flat[i + 1])});
    }
    return h;
  };
  own_ = get_history("own_degrees");
  for (std::size_t k = 0; k < neighbours_.size(); ++k) theirs_[k] = get_history("degrees[" + std::to_string(neighbours_[k]) + "]");
}

std::vector<std::vector<int>> membership::components() const {
  const auto n = graph_.size();
  std::vector<int> component(n, -1);
  std::vector<std::vector<int>> out;
  auto flood = [&](int start) {
    std::vector<int> members{start}, stack{start};
    component[static_cast<std::size_t>(start)] = static_cast<int>(out.size());
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      for (int j : graph_[static_cast<std::size_t>(i)])
        if (!departed_[static_cast<std::size_t>(j)] && component[static_cast<std::size_t>(j)] < 0) {
          component[static_cast<std::size_t>(j)] = static_cast<int>(out.size());
          members.push_back(j);
          stack.push_back(j);
        }
    }
    std::sort(members.begin(), members.end());
    out.push_back(std::move(members));
  };
  flood(rank_);
  for (std::size_t i = 0; i < n; ++i)
    if (!departed_[i] && component[i] < 0) flood(static_cast<int>(i));
  return out;
}

bool membership::cut_off() const {
  const auto parts = components();
  const auto& own = parts.front();
  return std::any_of(parts.begin() + 1, parts.end(), [&](const std::vector<int>& p) {
    return p.size() > own.size() || (p.size() == own.size() && p.front() < own.front());
  });
}

}  // namespace qgossip
