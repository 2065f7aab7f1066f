#pragma once
// The steps of one round, in the order the round driver calls them (node/run/round_driver.hpp):
//   compute     the round's computation: one gradient, or H local steps and the outer step
//               (node/run/local_training.hpp); the algorithm's outgoing vector
//   encode      the node's own message (the round pattern: node/run/round_pattern.hpp)
//   exchange    send it, gather the peers' (the round pattern)
//   absorb      hand what arrived to the algorithm, finish the round
//   log         consensus probe, evaluation, CSV row and progress line
//   checkpoint  every train.checkpoint_every rounds (not after the last): everything the next round
//               needs, written atomically (node/run/round_checkpoint.cpp, docs/checkpoints.md)
// and, once the loop ends, finish: leave the links (after the last round: when every peer has
// finished too), the last row after a failure, the summary with hashes, the closing line. Faults are
// values (a step_end that is not ok), never exceptions.
// Overlapped (train.overlap, docs/algorithms.md "Overlapped rounds"): run_round(t) takes round t's
// local steps while round t − 1's encode and exchange run on the node's thread (node/run/
// round_thread.hpp), then lands round t − 1 (its mix, absorbed on the thread, added to the steps
// taken meanwhile; its log and checkpoint), copies the parameters round t takes and hands its
// change, encode, exchange, absorb and mix to the thread. A round
// that only mixes, the last, one with a checkpoint and the halt round land at once. Not
// thread-safe: one caller's thread; the node's own thread is the round steps' business.
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/state_io.hpp"
#include "gossip/exchange.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/log/program_metrics.hpp"
#include "node/log/run_log.hpp"
#include "node/run/consensus_probe.hpp"
#include "node/run/local_training.hpp"
#include "node/run/round_pattern.hpp"
#include "node/run/round_thread.hpp"
#include "node/run/run_control.hpp"

namespace qgossip {

struct node_setup;

// How a step ended: ok, or how the node stops and why.
struct step_end {
  node_exit exit = node_exit::ok;
  std::string error;
  bool rejoin = false;    // the step ended because this node is offered a way back (rejoin())
  bool rejoined = false;  // ... and it took it: the loop goes on from the round after t
  explicit operator bool() const { return exit == node_exit::ok; }
};

class round_steps {
 public:
  explicit round_steps(node_setup& s);

  // compute and exchange may end with this node offered a way back (a joiner's stale news,
  // node/run/returns.hpp): they rejoin then, and on success say so (rejoined) with t set to the
  // round before the one the node restarts at.
  [[nodiscard]] step_end compute(std::uint64_t& t);
  void encode(std::uint64_t t);
  [[nodiscard]] step_end exchange(std::uint64_t& t);
  void absorb(std::uint64_t t);
  [[nodiscard]] step_end log(std::uint64_t t);
  // Writes the checkpoint of round t when one is due: every train.checkpoint_every rounds, and at the
  // round the run halts after (SIGUSR1, node/run/halt_agreement.hpp) whatever the period;
  // a failed write stops the node (exit 1).
  [[nodiscard]] step_end checkpoint(std::uint64_t t);
  [[nodiscard]] node_exit finish(const step_end& end, std::uint64_t t);

  // The next round, t + 1, step by step (compute .. checkpoint): on return t is that round, or the
  // round before the one a rejoining node restarts at (rejoined). Stops at the first step that
  // fails.
  [[nodiscard]] step_end run_round(std::uint64_t& t);
  // Overlapped: lands round t, the one in flight, if any (a program's state() or mix(), a node that
  // closes early); ok when none is. t may change as run_round's does (a rejoin).
  [[nodiscard]] step_end settle(std::uint64_t& t);
  // Overlapped: until the round in flight has exchanged, without landing it (before the caller's
  // thread touches the links: the halt signal's proposal).
  void hold();
  // True when round t has completed and is the agreed halt round (node/run/halt_agreement.hpp).
  [[nodiscard]] bool halts_after(std::uint64_t t) const;
  // A training loss the program driving the node reports (model.kind external), for the CSV.
  void add_loss(double loss) { training_.add_loss(loss); }
  // One of the program's own metrics, for the CSV's extra columns (node/log/program_metrics.hpp);
  // throws config_error for a name it refuses.
  void add_metric(const std::string& name, double value) { metrics_.add(name, value); }

  // True when the latest round run was the node's last: the plan's last round, or the round pattern
  // says no peer will send anything more (asynchronous gossip: every neighbour finished and the
  // node caught up with them). Its log step evaluated it as the last; the loop ends after it.
  [[nodiscard]] bool ended() const { return ended_; }
  // The next rounds only mix (on) or train as planned (off): no step, no outer step (a program's
  // mix(), node_session::mix). Asynchronous gossip's catch-up rounds only mix by themselves.
  void only_mix(bool on) { only_mix_ = on; }

  // Loads a checkpoint into this node (fresh from node_setup, before any round) and returns its
  // round: the loop continues with the next. Throws state_error for state of another run,
  // algorithm, codec, shard or size.
  std::uint64_t restore(const qgossip::checkpoint& ck, const std::string& origin);
  // Everything restore() needs to continue after round t, which has just completed (the
  // checkpoint step writes it; a program's node returns it from node_session::state()). Forces the
  // CSV to the disk first; throws config_error when that fails.
  [[nodiscard]] qgossip::checkpoint snapshot(std::uint64_t t) const;

 private:
  // A step's end: as it is, unless it asks to rejoin, which happens here (rejoin(t)).
  [[nodiscard]] step_end back_or_end(step_end end, std::uint64_t& t);
  // The links' part of exchange: send and gather (on the node's thread when overlapped), counting
  // the round's bytes; and what the caller's thread makes of its status.
  [[nodiscard]] status send_and_gather(std::uint64_t t);
  [[nodiscard]] step_end exchanged(const status& st, std::uint64_t& t);
  // After an exchange that succeeded: its staleness, the departures it learnt, the last round's flush.
  void after_exchange(std::uint64_t t);
  // After the algorithm's finish(t): robust mixing's columns, the parameters written, the round done.
  void after_mix(std::uint64_t t);
  // A round's start, before its computation: a returning node admitted when due, the departures'
  // round; mixing_only says whether the round only mixes (node.mix(), asynchronous catch-up).
  [[nodiscard]] step_end open_round(std::uint64_t& t, bool& mixing_only);
  // The overlapped round (see the top): run_round's form, and its parts.
  [[nodiscard]] step_end run_overlapped(std::uint64_t& t);
  [[nodiscard]] step_end take_change(std::uint64_t& t);
  void launch(std::uint64_t t);
  [[nodiscard]] step_end land(std::uint64_t& t);
  // True when round t writes a checkpoint (every train.checkpoint_every rounds, or the halt round).
  [[nodiscard]] bool checkpoint_due(std::uint64_t t) const;
  // This node rejoins the run (node/run/returns.hpp); on success t becomes the round before the
  // one it restarts at, with the donor's model.
  [[nodiscard]] step_end rejoin(std::uint64_t& t);
  using clock = std::chrono::steady_clock;
  void evaluate(std::size_t max_examples);
  void fill_record(std::uint64_t t);
  void leave(std::uint64_t t);
  void write_summary(const step_end& end);
  void save_model();
  // The exchange's counters plus those carried over from before a resume.
  [[nodiscard]] exchange_stats traffic() const;
  [[nodiscard]] double wall_s() const;
  void save_round(state_writer& out) const;
  void load_round(state_reader& in);

  node_setup& s_;
  local_training training_;
  consensus_probe probe_;
  program_metrics metrics_;
  const async_progress* async_;  // the pattern's (asynchronous gossip), or nullptr
  std::span<const float> outgoing_;  // the algorithm's vector of the round under way
  // What the log records.
  round_record rec_;
  std::uint64_t completed_ = 0;
  bool ended_ = false;  // ended()
  bool only_mix_ = false;  // only_mix()
  std::uint64_t round_sent_ = 0, round_recv_ = 0;  // the latest round's traffic alone
  std::uint64_t staleness_ = 0;                    // the most since the latest row
  std::uint64_t catch_up_rounds_ = 0;              // rounds that only mixed (mixing_only)
  std::uint64_t row_iteration_ = 0;                // of the latest row, and its wall time
  double row_wall_s_ = 0;
  double compute_s_ = 0, codec_s_ = 0;
  clock::time_point round_start_;
  // Overlapped: the node's thread, and what the round it ran left (read after wait()).
  std::unique_ptr<round_thread> thread_;
  status flight_;
  std::string flight_diverged_;     // its change was not finite
  bool flight_mixes_only_ = false;  // it only mixes (node.mix(), asynchronous catch-up)
  double flight_compute_s_ = 0;     // its change's time, for compute_s
  bool in_flight_ = false;  // a round launched and not yet landed
  // Cumulative counters of the run before a resume (zero in a run that started at round 1), added
  // to this process's own so that the log continues where the checkpoint left it.
  struct carried_counts {
    exchange_stats traffic;
    std::chrono::nanoseconds probe_comm{0};
    transfer_stats transfers;
    double wall_s = 0;
  };
  carried_counts carried_;
};

}  // namespace qgossip
