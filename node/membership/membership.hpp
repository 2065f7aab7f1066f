#pragma once
// Who is still in the run, as one node knows it, and the mixing row it uses each round
// (network.on_peer_failure: continue; docs/failures.md). Pure bookkeeping: no I/O, no clock.
//
// A departure is recorded at once: from then on the node mixes without the leaver, giving its weight
// W_ij to itself. That alone keeps W symmetric and doubly stochastic over the survivors, with no
// agreement needed (no surviving edge's weight changes). Then, to mix as fast as the surviving
// graph allows, the node's degree change is announced to its neighbours (a notice "degree d R") and
// every edge touching a node whose degree changed takes the Metropolis–Hastings weight
// 1/(1 + max(d_i(r), d_k(r))) from the announced round R on. Both ends compute that weight from the
// same announcements, so W stays symmetric: a notice sent before the sender's round-m message takes
// effect at round m + 1 (R = m + 1), and a neighbour cannot start round m + 1 before it has the
// sender's round-m message, which travels behind the notice on the same link. Edges whose ends
// keep their degrees keep their configured weight. Re-weighting is done for uniform and
// metropolis_hastings weights, whose rows stay sums of at most d_i/(1 + d_i); explicit matrices
// only drop (their rows could exceed 1).
// Not thread-safe (the node loop's thread).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/state_io.hpp"
#include "topology/topology.hpp"

namespace qgossip {

struct departure {
  int rank = -1;              // who left
  std::uint64_t round = 0;    // the round during which it was noticed (by the reporter)
  std::string cause;          // "its link closed ...", "sent a message that does not decode ..."
  int reported_by = -1;       // the node that noticed it first (this node, or who told it)
};

class membership {
 public:
  // reweight: Metropolis–Hastings re-weighting after a departure (uniform or MH weights).
  membership(const topology& topo, int rank, bool reweight);

  [[nodiscard]] int rank() const { return rank_; }
  // The topology's neighbours that have not left, ascending.
  [[nodiscard]] const std::vector<int>& live_neighbours() const { return live_; }
  [[nodiscard]] bool departed(int r) const;
  [[nodiscard]] const std::vector<departure>& departures() const { return departures_; }

  // Records a departure. Returns false when this node knew already (nothing to forward), or when
  // it is news from another node (reported_by not this node) older than the rank's latest return
  // by more than stale_margin() rounds (record_join: news that reached this node late, after the
  // return; it is not forwarded either). When the leaver is a live neighbour, this node's degree
  // drops from round `effective` on (the first round after the one whose message it sends next)
  // and degree_notice() says so.
  bool record_departure(const departure& d, std::uint64_t effective);
  // The latest own degree announcement: "degree d R", for the neighbours.
  [[nodiscard]] std::optional<std::pair<int, std::uint64_t>> degree_notice() const;
  // A neighbour's announcement: its degree from round `from` on. Ignored for a non-neighbour.
  void record_degree(int neighbour, int degree, std::uint64_t from);

  // A departed rank came back (docs/failures.md, "Rejoining"): its edges run again from round
  // `from` on. Returns false when this node knew already (or never saw it leave). When it is a
  // neighbour, this node's degree grows from round `from` on (degree_notice says so), and the
  // joiner's degree from then is `degree` (its accept message; nullopt: as announced later).
  bool record_join(int rank, std::uint64_t from, std::optional<int> degree = std::nullopt);
  // This node (re)joins at round `from`, admitted by `admitted` (rank, its degree from then), each a
  // neighbour: every other neighbour counts as departed (cause `why`), and its own degree from then
  // is admitted.size().
  void join_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted, const std::string& why);
  // The round a rejoined neighbour's edge runs again from (0: it never left, or is departed).
  [[nodiscard]] std::uint64_t joined_from(int r) const;
  // How many rounds before a return news of a departure may still be new: twice the graph's
  // diameter and 2 (how far apart two nodes' rounds can be, and a join's round from its offer's:
  // a joiner can fail between its accept and its join round). What this node saw itself is new.
  [[nodiscard]] std::uint64_t stale_margin() const { return stale_margin_; }

  // This node's mixing row for round r: the live neighbours with their weights (see the top).
  [[nodiscard]] mixing_row row_for(std::uint64_t r) const;
  // The surviving graph's connected components (every departure known here removed), each
  // ascending, this node's first. More than one: the graph split.
  [[nodiscard]] std::vector<std::vector<int>> components() const;
  // This node's component is not the largest (of equal ones, the one holding the lowest rank is
  // kept): after a cut, this side is the one that rejoins the other (docs/failures.md).
  [[nodiscard]] bool cut_off() const;

  // Checkpoints: the departures, the joins and every announced degree, so a resumed node mixes as
  // it would have. load_state into a fresh object of the same topology and rank; throws state_error for a
  // rank outside the run or a departure of this node itself.
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);

 private:
  struct degree_change {
    std::uint64_t from;
    int degree;
  };
  static constexpr std::uint64_t kMaxEvents = 1u << 20;  // departures or joins in a checkpoint
  void replay(const std::vector<departure>& left, const std::vector<std::uint64_t>& joins, state_reader& in);
  [[nodiscard]] static int degree_at(const std::vector<degree_change>& h, int initial, std::uint64_t r);
  [[nodiscard]] static bool changed_by(const std::vector<degree_change>& h, std::uint64_t r);

  int rank_;
  bool reweight_;
  std::vector<std::vector<int>> graph_;   // every node's topology neighbours
  std::uint64_t stale_margin_ = 0;        // stale_margin()
  std::vector<int> neighbours_;           // this node's, ascending
  std::vector<double> weights_;           // configured W_{rank, neighbours_[k]}
  std::vector<int> live_;
  std::vector<bool> departed_;
  std::vector<departure> departures_;
  struct rejoin {
    int rank;
    std::uint64_t from;
  };
  std::vector<rejoin> joins_;
  std::vector<std::uint64_t> joined_from_;  // per rank: the latest join's round (0: none)
  std::vector<degree_change> own_;                  // this node's announced degrees
  std::vector<std::vector<degree_change>> theirs_;  // per neighbours_[k]
};

}  // namespace qgossip
