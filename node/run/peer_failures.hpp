#pragma once
// What a node does about a failed or misbehaving neighbour (network.on_peer_failure,
// docs/failures.md). The exchange calls on_peer_failure (a lost link, a message that does not
// decode, too many rejected messages) and on_notice (news from a neighbour) while a round waits;
// the round loop calls begin_round / after_exchange so the algorithm mixes with the right row, and
// stopping so the neighbours learn why this node's link is about to close.
//   stop      the node stops, naming the peer that failed, and tells its neighbours, who stop too,
//             naming the same peer (not the neighbour whose link closed next).
//   continue  the node drops the peer (exchange::drop), mixes without it at once (its weight goes
//             to the node itself), announces its new degree (Metropolis–Hastings weights two rounds
//             later, node/membership/membership.hpp), and forwards the news hop by hop; a node that
//             learns it was itself dropped stops. (Consensus probes need every node: the config
//             refuses them with continue.)
// Not thread-safe (the node loop's thread, inside and between rounds).
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "node/membership/membership.hpp"
#include "node/membership/notice.hpp"

namespace qgossip {

class algorithm;
class exchange;
class run_log;
struct run_config;

class peer_failures {
 public:
  // peers: every rank the node's exchange talks to (graph neighbours, and probe peers).
  peer_failures(const run_config& c, const topology& topo, int rank, std::vector<int> peers);
  // Once the exchange, the algorithm and the log exist (node_setup).
  void attach(exchange& ex, algorithm& alg, run_log& log);

  // The exchange's callbacks (exchange_events::peer_failed and notice, through node/run/link_events.hpp).
  bool on_peer_failure(int peer, const std::string& why);
  status on_notice(int from, std::span<const std::byte> payload);

  // Before round t's computation: the algorithm takes round t's row when it changed.
  void begin_round(std::uint64_t t);
  // After round t's exchange, before its messages are absorbed: drops during the round take effect.
  void after_exchange(std::uint64_t t);
  // The node stops (an error): the neighbours are told why. (A node that completed its rounds
  // says so with the exchange's finished message, exchange::finish.)
  void stopping(const std::string& why);

  [[nodiscard]] bool any_departure() const { return !members_.departures().empty(); }

  // A node that starts the run afresh (not resumed, not rejoining) tells its neighbours the hash of
  // the model it starts from ("start", node/membership/notice.hpp); a neighbour that started from
  // another one ends this node's round with errc::refused naming it and both hashes. Every node must
  // start from the same model: the algorithms' replicas and estimates begin as copies of their
  // owner's start (a program's model initialized from another seed, another model file on a host).
  void announce_start(std::span<const float> model);

  // Stopping for a time limit (SIGUSR1, node/run/run_control.hpp request_halt): the lowest-ranked
  // live node proposes to stop after round t + margin (margin: enough rounds for the news to reach
  // every node first, twice the graph's diameter and more) and the proposal travels hop by hop
  // ("halt", node/membership/notice.hpp); every node stops after that round, checkpointed. Called
  // at round t of a node that got the signal; only the proposer acts on it.
  void halt_signal(std::uint64_t t, std::uint64_t margin);
  // The round to stop after, once proposed or heard of.
  [[nodiscard]] std::optional<std::uint64_t> halt_round() const { return halt_round_; }

  // Rejoining (node/run/rejoining.hpp): told it was dropped, this node asks to be admitted again
  // (the round ends with errc::rejoin) instead of stopping. Set for continue with synchronous gossip.
  void allow_rejoining() { rejoins_ = true; }
  // A message from a neighbour this node dropped arrived (exchange_events::dropped_peer_heard): the
  // path to it moves again after a cut (docs/failures.md, "A cut path"). A node in a smaller part of
  // the split graph (cut_off()) then rejoins as a restarted node does: errc::rejoin. Otherwise ok.
  status dropped_peer_heard(int from);
  // Whether `peer` left for a refused train message (it does not decode, or is not finite: the
  // inbox; the exchange then names it a failure, exchange_events::kUndecodable): this node dropped it
  // for one, or the departure it learnt says so (a notice is trusted as for any departure).
  // Rejoining never admits it again: it would only send the same, and its returns and drops, news
  // of each travelling the graph, would keep the run busy.
  [[nodiscard]] bool proven_hostile(int peer) const;
  // The ranks this node itself dropped for a refused train message (its own departures' record, so
  // a resumed node still knows them): robust mixing tolerates one fewer hostile neighbour for each
  // one still out (clip_rule::set_removed_hostile). One learnt from a notice does not count: a
  // hostile neighbour could otherwise name an honest one and lower the node's guard.
  [[nodiscard]] std::vector<int> refused_by_this_node() const;
  // The joiner starts rejoining (rejoining::join). After a cut it forgets what it saw while cut off
  // and starts from the topology, as a restarted node: its neighbours' offers tell it who left.
  void begin_rejoin();
  // A departed rank comes back from round `from` on (its accept
  // of this node's offer, degree = its degree then; or news from told_by): recorded, forwarded hop
  // by hop ("joined"), this node's new degree announced, logged.
  void rejoined(int rank, std::uint64_t from, std::optional<int> degree, int told_by);
  // This node rejoins at round `from`, admitted by `admitted` (rank, its degree then).
  void joined_at(std::uint64_t from, std::span<const std::pair<int, int>> admitted);
  // A departure a neighbour told the joiner of (an offer's left items): recorded, not forwarded.
  void learn_departure(const notice_item& left, int told_by);
  [[nodiscard]] mixing_row row_for(std::uint64_t t) const { return members_.row_for(t); }
  [[nodiscard]] int nodes() const { return n_; }
  // Checkpoints (section "membership"): after load_state the exchange drops the departed again.
  void save_state(state_writer& out) const { members_.save_state(out); }
  void load_state(state_reader& in);
  [[nodiscard]] const membership& members() const { return members_; }
  // "3 at round 120 (rank 2: its link closed ...); ..." for the node's summary.
  [[nodiscard]] std::string describe_departures() const;
  // "3 from round 148 (at 12.4 s, admitted by this node); this node from round 300 (at 20.1 s, from
  // rank 2's model); ..." for the node's summary ("rejoins"): every return this node saw, with the
  // seconds since this node started.
  [[nodiscard]] const std::string& describe_rejoins() const { return rejoin_account_; }
  // The joiner's own return, for that account.
  void note_own_rejoin(std::uint64_t from, int donor);

 private:
  void left(const departure& d, int told_by);
  // items to every live peer but those in `except`.
  void send(std::span<const notice_item> items, std::initializer_list<int> except = {});
  void remix(std::uint64_t t);

  int rank_;
  int n_;
  bool continue_;
  bool rejoins_ = false;  // allow_rejoining()
  bool healed_cut_ = false;  // dropped_peer_heard asked to rejoin; begin_rejoin forgets the cut
  const membership initial_;  // the topology's, for begin_rejoin
  std::uint64_t joined_at_ = 0;  // the round this node last rejoined at (joined_at)
  membership members_;
  std::vector<int> peers_;
  exchange* ex_ = nullptr;
  algorithm* alg_ = nullptr;
  run_log* log_ = nullptr;
  std::uint64_t round_ = 0;                // the latest round whose train message was (being) sent
  std::optional<departure> stop_cause_;    // stop: the peer that failed first
  std::optional<notice_item> start_;  // announce_start's: this node's starting model (size, hash)
  std::optional<std::uint64_t> halt_round_;
  // A halt round proposed or heard (from told_by; rank_: this node's own): taken when later than the
  // one known, then passed on.
  void take_halt(std::uint64_t round, int told_by);
  std::vector<notice_item> items_;         // scratch
  std::string rejoin_account_;             // describe_rejoins()
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  void note_rejoin(const std::string& text);
  [[nodiscard]] double seconds_since_start() const;
  std::vector<double> departed_at_;  // per departure recorded here: seconds since start (resumed: -1)
};

}  // namespace qgossip
