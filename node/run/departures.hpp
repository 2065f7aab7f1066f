#pragma once
// What a node does about a failed or misbehaving neighbour (network.on_peer_failure,
// docs/failures.md), one part of its membership (docs/design.md, "Notices"): it answers `left` and
// `degree` notices (node/membership/notice_board.hpp), the exchange's peer failures, and the stop
// of this node.
//   stop      the node stops, naming the peer that failed, and tells its neighbours, who stop too,
//             naming the same peer (not the neighbour whose link closed next).
//   continue  the node drops the peer (link_control::drop), mixes without it at once (its weight
//             goes to the node itself), announces its new degree (Metropolis–Hastings weights two
//             rounds later, node/membership/membership.hpp), and forwards the news hop by hop; a
//             node that learns it was itself dropped stops, or asks to be admitted again where nodes
//             come back (errc::rejoin; node/run/returns.hpp). (Consensus probes need every node: the
//             config refuses them with continue.)
// A neighbour dropped for a train message that does not decode is proven hostile: rejoining never
// admits it again, and robust mixing tolerates one fewer hostile neighbour while it is out.
// Not thread-safe (the node loop's thread, inside and between rounds).
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/state_io.hpp"
#include "core/status.hpp"
#include "gossip/exchange/link_control.hpp"
#include "node/membership/membership.hpp"
#include "node/membership/notice_board.hpp"

namespace qgossip {

class algorithm;
class run_log;
struct run_config;

class departures final : public notice_part {
 public:
  // members: this node's view of the run, which this part writes; peers: every rank the node's
  // exchange talks to (graph neighbours, and probe peers); rejoins: a node told it was dropped asks
  // to come back (node/run/returns.hpp) instead of stopping. Registers for left and degree notices.
  departures(const run_config& c, int rank, membership& members, std::vector<int> peers, bool rejoins,
             algorithm& alg, run_log& log, notice_board& board);

  status on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) override;

  // The exchange's exchange_events::peer_failed (through node/run/link_events.hpp), and a joiner
  // found restarted (returns): true when the peer is dropped and the round goes on (continue).
  bool failed(int peer, const std::string& why, link_control& links);
  // A departure a neighbour told a joiner of (an offer's left items): recorded, not forwarded.
  void learn(const notice_item& left, int told_by, link_control& links);

  // Before round t's computation: the algorithm takes round t's row when it changed.
  void begin_round(std::uint64_t t);
  // After round t's exchange, before its messages are absorbed: drops during the round take effect.
  void after_exchange(std::uint64_t t);
  // The node stops (an error): the neighbours are told why. (A node that completed its rounds
  // says so with the exchange's finished message, exchange::finish.)
  void stopping(const std::string& why, link_control& links);
  // The latest round whose train message was (being) sent.
  [[nodiscard]] std::uint64_t round() const { return round_; }
  // Items as one notice to every live peer but those in `except`, stamped with round(): how every
  // part's news travels (a warning is said when the transport refuses it).
  void tell(std::span<const notice_item> items, link_control& links, std::initializer_list<int> except = {});

  // Whether `peer` left for a refused train message (it does not decode, or is not finite: the
  // inbox; the exchange then names it a failure, exchange_events::kUndecodable): this node dropped it
  // for one, or the departure it learnt says so (a notice is trusted as for any departure).
  [[nodiscard]] bool proven_hostile(int peer) const;
  // The ranks this node itself dropped for a refused train message (its own departures' record, so
  // a resumed node still knows them). One learnt from a notice does not count: a hostile neighbour
  // could otherwise name an honest one and lower the node's guard.
  [[nodiscard]] std::vector<int> refused_by_this_node() const;

  // Checkpoints (section "membership"): after load_state the departed are dropped again.
  void save_state(state_writer& out) const { members_.save_state(out); }
  void load_state(state_reader& in, link_control& links);
  // A node that rejoins after a cut forgets when it saw what it saw (returns::join).
  void forget_times() { departed_at_.clear(); }
  // "3 at round 120 (rank 2: its link closed ...); ..." for the node's summary.
  [[nodiscard]] std::string describe() const;

 private:
  status on_left(int from, const notice_item& i, link_control& links);
  // Records d (learnt from told_by, or seen here when told_by == rank_), tells the others, says it.
  void left(const departure& d, int told_by, link_control& links);
  void remix(std::uint64_t t);

  int rank_;
  bool continue_;
  bool rejoins_;
  membership& members_;
  std::vector<int> peers_;
  algorithm& alg_;
  run_log& log_;
  std::uint64_t round_ = 0;
  std::optional<departure> stop_cause_;  // stop: the peer that failed first
  std::vector<double> departed_at_;      // per departure recorded here: seconds since start (resumed: -1)
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

// The ranks `list` names, "1, 2, 5" ("none" when empty), for the node's lines.
[[nodiscard]] std::string rank_list(const std::vector<int>& list);

}  // namespace qgossip
