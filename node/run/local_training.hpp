#pragma once
// A round's computation (the `compute` step of node/run/round_steps.hpp): from the algorithm's model
// x_t, the vector it is to send. Two forms, fixed for a run:
//   one step   (train.local_steps 1, no train.outer): a stochastic gradient at x_t, weight decay
//              and momentum applied (node/optim/local_step.hpp), handed to the algorithm with the
//              step size: the papers' rules, bit for bit;
//   local steps (H > 1 or an outer optimizer; DiLoCo's inner loop): H steps on a copy of x_t, each
//              on its own batch, then the outer step (node/optim/outer_step.hpp) of the change.
//              A node driven by a program (model.kind external, node/run/node_session.hpp) always
//              takes this form: the program took the H steps on its own parameters (learner.program)
//              with its own loss and optimizer; the node takes the change from them.
//              Where the algorithm lets the node adjust its model after the round
//              (algorithm::adjustable_model: choco, dpsgd, naive, the centralized ones) it gets the
//              plain change and finish_round() applies the outer step to the whole round's change
//              x_t − x_{t+1}; elsewhere (dcd, ecd, whose neighbours copy x from the messages), and
//              in asynchronous gossip (train.max_staleness > 0, where the mix uses copies of
//              different ages and the momentum would integrate their lag), the outer step of the
//              local change goes in place of γ·g. Synchronously the node average moves by the outer
//              step of the mean change.
// Each step's gradient comes from the model, or from the learner's codec where its message is made
// of that pass (pass_codec: ISGQ keeps the pass's factors), on the plan's batches (augmented when data.augment asks), at the schedule's rate. Not
// thread-safe: the node's one thread.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "core/state_io.hpp"
#include "node/config/config.hpp"
#include "node/data/dataset.hpp"
#include "node/optim/local_step.hpp"
#include "node/optim/outer_step.hpp"
#include "node/run/learner.hpp"
#include "node/run/plan.hpp"

namespace qgossip {

class local_training {
 public:
  // How a round's computation ended: empty, or why the node diverged ("diverged at round 7: ...").
  struct outcome {
    std::string diverged;
    explicit operator bool() const { return diverged.empty(); }
  };

  local_training(const run_config& c, int rank, node_learner& learner, node_plan& plan, const dataset& shard);

  // Round t's computation: the algorithm's outgoing vector (valid until the next call), or why not.
  // mixing_only (asynchronous gossip catching up with finished neighbours; a program's mix()): no
  // step at all, the algorithm's rule with a zero gradient, so the round only mixes, and no outer
  // step after it (its momentum would go on moving the model).
  [[nodiscard]] outcome round(std::uint64_t t, std::span<const float>& outgoing, bool mixing_only = false);
  // After the algorithm's finish(t): the outer step on the whole round's change, where it goes; with
  // a program's model (learner.program), the round's model written back into its parameters.
  // Overlapped (below): the round's result added to the steps taken since it was taken,
  // P = P − P_taken + x_{t+1}, so a round that landed at once leaves P = x_{t+1} exactly.
  void finish_round();

  // Overlapped rounds (train.overlap, docs/algorithms.md "Overlapped rounds"). The parameters P (a
  // program's, or the node's own copy) go on from where the previous round left them: steps(t) takes
  // round t's local steps on P (a program took them itself: nothing), beside the previous round's
  // exchange. Once that round has landed (finish_round, the caller's thread), keep_parameters()
  // copies P as the round takes it (the caller's one copy), and change(t), on the node's thread,
  // hands the algorithm the change from its model to that copy. The outer step goes in place of γ·g.
  [[nodiscard]] bool overlapped() const { return overlap_; }
  [[nodiscard]] outcome steps(std::uint64_t t);
  void keep_parameters();
  [[nodiscard]] outcome change(std::uint64_t t, std::span<const float>& outgoing);
  // P becomes the algorithm's model (a resumed or rejoined node, a round that only mixed).
  void reset_parameters() { write_back(); }
  // A training loss the program reports (its loss is its own): counted in the next row's mean.
  void add_loss(double loss);
  // A node that rejoins (rejoinable::restart): the optimizer's and the outer step's momentum start
  // over at zero; a program's parameters become the model the node restarts from.
  void restart();

  // The step size of the latest step, and the mean training loss since the last take (0 steps: the
  // value `previous` is kept).
  [[nodiscard]] double lr() const { return lr_; }
  // Seconds in the model's forward and backward passes (loss_and_grad) so far, in this process:
  // the part of the round's computation that is the model's, not the node's (0 with a program's).
  [[nodiscard]] double gradient_s() const { return gradient_s_; }
  [[nodiscard]] double take_mean_loss(double previous);

  // Checkpoints: sections "local_step" and "outer_step", and the round's loss sum and rate (written
  // by the round loop into its own section, in this order: lr, loss_sum, loss_count).
  void save_steps(state_writer& local, state_writer& outer) const;
  void load_steps(state_reader& local, state_reader& outer);
  void save_counters(state_writer& out) const;
  void load_counters(state_reader& in);

 private:
  // A program's model (learner.program), or the overlapped node's own copy: the algorithm's model
  // copied into the parameters.
  void write_back();
  // The parameters the steps move: the program's, the overlapped node's own (work_), or empty.
  [[nodiscard]] std::span<float> parameters();
  [[nodiscard]] std::span<const std::size_t> next_batch(std::uint64_t step);
  [[nodiscard]] outcome gradient(std::uint64_t t, std::uint64_t step, std::span<const float> x);
  [[nodiscard]] outcome local_steps(std::uint64_t t, std::span<const float>& outgoing);
  [[nodiscard]] outer_step make_outer() const;
  void keep_round_start();

  const run_config& config_;
  const int rank_;
  node_learner& learner_;
  node_plan& plan_;
  const dataset& shard_;
  pass_codec* pass_;  // the learner's codec, when the gradient's pass is its message (ISGQ)
  local_step local_;
  const bool overlap_;       // train.overlap
  const bool local_rounds_;  // H > 1 or an outer optimizer, or overlapped
  const bool in_program_;    // the algorithm's x is the program's parameters (learner.hpp model_in_program)
  const bool outer_after_round_;  // the outer step on the whole round's change (finish_round)
  // The algorithm reads x_{t+1/2} only (half_step_only) and no outer step comes before the round: the
  // local steps' result is x_{t+1/2} itself, and the outer step after the round is taken in place.
  const bool half_step_;
  // in_program_ and outer_after_round_: work_ holds x_t (keep_round_start), saved with the outer step.
  const bool round_start_kept_;
  outer_step outer_;
  // x_{t,k}, the model the local steps move (then x_t, for finish_round); a program's node keeps it
  // only for x_t (its steps move the program's own parameters), which, the algorithm's x being the
  // program's, is set at each round's end and saved with the outer step.
  float_vector work_;
  bool mixed_only_ = false;       // the latest round only mixed: finish_round takes no outer step
  float_vector delta_;
  float_vector taken_;  // overlapped: P as keep_parameters took it
  float_vector grad_;  // the node's gradient (a program's node: zeros for mixing rounds, made at the first)
  // Augmented training: each step's examples gathered into batch_ and augmented there.
  bool augmenting_ = false;
  dataset batch_;
  std::vector<std::size_t> batch_rows_;
  double lr_ = 0, loss_sum_ = 0, gradient_s_ = 0;
  std::uint64_t loss_count_ = 0;
};

}  // namespace qgossip
