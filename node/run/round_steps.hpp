#pragma once
// The steps of one round, in the order run_node calls them (node/run/node_runner.cpp):
//   compute   a batch, its loss and gradient, the local step, the algorithm's outgoing vector; with
//             train.local_steps H > 1: H such steps on a copy of the model, then the outer step
//             of the change (node/optim/outer_step.hpp) goes to the algorithm in place of γ·g
//   encode    compress it; the sender applies its own decoded message (replicas stay exact)
//   exchange  send to the peers and gather theirs (a ring all-reduce: sum with the ring)
//   absorb    decode and apply each neighbour's message, finish the round
//   log       consensus probe, evaluation, CSV row and progress line
//   checkpoint  every train.checkpoint_every rounds (not after the last): everything the next round
//             needs, written atomically (node/run/round_checkpoint.cpp, docs/checkpoints.md)
// and, once the loop ends, finish: the last row after a failure, the summary with hashes, the
// closing line. Faults are values (a step_end that is not ok), never exceptions.
// Not thread-safe: the node's one thread owns it.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "gossip/exchange.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/data/dataset.hpp"
#include "node/log/run_log.hpp"
#include "node/models/model.hpp"
#include "node/optim/local_step.hpp"
#include "node/optim/outer_step.hpp"
#include "node/run/consensus_probe.hpp"
#include "node/run/node_runner.hpp"

namespace qgossip {

struct node_setup;

// How a step ended: ok, or how the node stops and why.
struct step_end {
  node_exit exit = node_exit::ok;
  std::string error;
  explicit operator bool() const { return exit == node_exit::ok; }
};

class round_steps {
 public:
  explicit round_steps(node_setup& s);

  [[nodiscard]] step_end compute(std::uint64_t t);
  void encode(std::uint64_t t);
  [[nodiscard]] step_end exchange(std::uint64_t t);
  [[nodiscard]] step_end absorb(std::uint64_t t);
  [[nodiscard]] step_end log(std::uint64_t t);
  // Writes the checkpoint of round t when one is due; a failed write stops the node (exit 1).
  [[nodiscard]] step_end checkpoint(std::uint64_t t);
  [[nodiscard]] node_exit finish(const step_end& end, std::uint64_t t);

  // Loads a checkpoint into this node (fresh from node_setup, before any round) and returns its
  // round: the loop continues with the next. Throws state_error for state of another run,
  // algorithm, codec, shard or size.
  std::uint64_t restore(const qgossip::checkpoint& ck, const std::string& origin);

 private:
  using clock = std::chrono::steady_clock;
  void evaluate(std::size_t max_examples);
  void fill_record(std::uint64_t t);
  [[nodiscard]] status decode(std::span<const std::byte> bytes, int from, std::uint64_t t, float_vector& out);
  void leave(std::uint64_t t);
  void write_summary(const step_end& end);
  // The exchange's counters plus those carried over from before a resume.
  [[nodiscard]] exchange_stats traffic() const;
  [[nodiscard]] double wall_s() const;
  void save_round(state_writer& out) const;
  void load_round(state_reader& in);

  [[nodiscard]] std::span<const std::size_t> next_batch(std::uint64_t step);
  // Optimizer step `step` (1-based over the run; round t's steps are (t−1)·H+1 .. t·H): sets lr_,
  // the loss and grad_ at x, or says the node diverged.
  [[nodiscard]] step_end gradient(std::uint64_t t, std::uint64_t step, std::span<const float> x);
  [[nodiscard]] step_end local_steps(std::uint64_t t);
  void finish_outer();

  node_setup& s_;
  local_step local_;
  // Local-step training (H > 1 or an outer optimizer): the model the local steps move, x_{t,k}.
  bool local_rounds_ = false;
  float_vector work_;
  outer_step outer_;
  bool outer_after_round_ = false;  // the outer step on the whole round's change (finish_outer)
  float_vector delta_;
  // Augmented training: each round's examples gathered into batch_ and augmented there.
  bool augmenting_ = false;
  dataset batch_;
  std::vector<std::size_t> batch_rows_;
  consensus_probe probe_;
  // Per-round scratch, allocated once.
  float_vector grad_, own_decoded_, reduced_;
  // Each train peer's message of the round, decoded when the exchange validated it (by slot).
  std::vector<float_vector> decoded_in_;
  [[nodiscard]] std::size_t peer_slot(int rank) const;
  std::vector<std::byte> encoded_;
  std::vector<fc_factors> factors_;
  std::vector<inbound_message> inbound_;
  std::span<const float> outgoing_;  // the algorithm's vector of the round under way
  status exchanged_;                 // how this round's exchange went
  // What the log records.
  round_record rec_;
  double lr_ = 0, loss_sum_ = 0;
  std::uint64_t loss_count_ = 0, completed_ = 0;
  std::uint64_t round_sent_ = 0, round_recv_ = 0;  // the latest round's traffic alone
  double compute_s_ = 0, codec_s_ = 0;
  clock::time_point round_start_;
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
