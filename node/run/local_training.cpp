#include "node/run/local_training.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "algorithms/mixing.hpp"
#include "core/errors.hpp"
#include "kernels/cpu/finite.hpp"
#include "node/data/augment.hpp"

namespace qgossip {

local_training::local_training(const run_config& c, int rank, node_learner& learner, node_plan& plan,
                               const dataset& shard)
    : config_(c),
      rank_(rank),
      learner_(learner),
      plan_(plan),
      shard_(shard),
      pass_(pass_codec_of(*learner.codec)),
      // A program takes its own steps: no local optimizer, gradient or step buffer of the node's.
      local_(learner.program.empty() ? learner.model->num_params() : 0, c.train.momentum, c.train.weight_decay),
      overlap_(c.train.overlap),
      local_rounds_(plan.local_steps > 1 || !c.train.outer.is_identity() || !learner.program.empty() || overlap_),
      in_program_(!learner.program.empty() && learner.alg->model().data() == learner.program.data()),
      outer_after_round_(local_rounds_ && !c.train.outer.is_identity() &&
                         !learner.alg->adjustable_model().empty() && c.train.max_staleness == 0 && !overlap_),
      half_step_(local_rounds_ && learner.alg->half_step_only() && !overlap_ &&
                 (outer_after_round_ || c.train.outer.is_identity())),
      round_start_kept_(in_program_ && outer_after_round_),
      outer_(make_outer()),
      work_(local_rounds_ && (learner.program.empty() || outer_after_round_) ? learner.model->num_params() : 0),
      delta_(outer_after_round_ && !half_step_ ? learner.model->num_params() : 0),
      taken_(overlap_ ? learner.model->num_params() : 0),
      grad_(learner.program.empty() ? learner.model->num_params() : 0) {
  if (overlap_) write_back();  // the node's own copy starts at x_1
  keep_round_start();  // x_1, the first round's start
  const augment_spec& a = c.data.augment;
  augmenting_ = a.crop_padding > 0 || a.flip;
  if (augmenting_) {
    const auto b = static_cast<std::size_t>(c.train.batch);
    batch_ = shard.subset(std::vector<std::size_t>(b, 0));
    batch_rows_.resize(b);
    std::iota(batch_rows_.begin(), batch_rows_.end(), std::size_t{0});
  }
}

// The step's examples: indices into the shard, or (augmenting) into batch_, which then holds the
// step's examples augmented.
std::span<const std::size_t> local_training::next_batch(std::uint64_t step) {
  const std::span<const std::size_t> rows = plan_.sampler->next();
  if (!augmenting_) return rows;
  gather(shard_, rows, batch_.features, batch_.labels);
  augment_batch(batch_, config_.data.augment, config_.seed, rank_, step);
  return batch_rows_;
}

// Optimizer step `step` (1-based over the run; round t's steps are (t−1)·H+1 .. t·H): sets lr_, the
// loss and grad_ at x, or says the node diverged.
local_training::outcome local_training::gradient(std::uint64_t t, std::uint64_t step,
                                                 std::span<const float> x) {
  lr_ = plan_.schedule.lr_at(plan_.epoch_after(step - 1));
  const auto batch = next_batch(step);
  model& m = *learner_.model;
  m.set_step_size(lr_);
  const auto started = std::chrono::steady_clock::now();
  const dataset& data = augmenting_ ? batch_ : shard_;
  const double loss = pass_ ? pass_->loss_and_grad(m, x, data, batch, grad_) : m.loss_and_grad(x, data, batch, grad_);
  gradient_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double limit = config_.train.diverge_loss;
  if (!std::isfinite(loss) || loss > limit || !kernels::all_finite(grad_))
    return {"diverged at round " + std::to_string(t) +
            (step != t ? " (local step " + std::to_string(step) + ")" : std::string()) + ": training loss " +
            std::to_string(loss) +
            (std::isfinite(loss) && loss > limit ? " > train.diverge_loss " + std::to_string(limit) : "")};
  loss_sum_ += loss;
  ++loss_count_;
  return {};
}

// H local steps from x_t on work_ (see the top of local_training.hpp for where the outer step goes).
local_training::outcome local_training::local_steps(std::uint64_t t, std::span<const float>& outgoing) {
  algorithm& alg = *learner_.alg;
  if (in_program_) {  // x is the program's parameters: its steps made x_{t,H} (model_in_program)
    // With the outer step, x_{t+1/2} = x_t − (x_t − x_{t,H}) rounded as before (and as the CLI's).
    if (outer_after_round_) mixing::step_to(alg.adjustable_model(), work_);
    outgoing = alg.outgoing({}, 0.0f, t);
    return {};
  }
  const std::span<const float> start = alg.model();
  // x_{t,H}: the program took the round's steps on its own parameters; otherwise they are taken here.
  std::span<const float> end = learner_.program;
  if (learner_.program.empty()) {
    mixing::copy(work_, start);
    if (outcome e = steps(t); !e) return e;
    end = work_;
  }
  if (half_step_) {  // x_{t+1/2} set in place; with the outer step, x_t kept in work_ for finish_round
    QG_ENFORCE(learner_.program.empty(), "a program's half step is its own parameters (in_program_)");
    if (outer_after_round_)
      mixing::step_from(alg.adjustable_model(), work_);  // x_t − (x_t − x_{t,H}), as outgoing's step
    else
      mixing::copy(alg.adjustable_model(), work_);  // x_{t,H} itself, as a program's x (no x_t kept)
    outgoing = alg.outgoing({}, 0.0f, t);
    return {};
  }
  if (!outer_after_round_) {
    outgoing = alg.outgoing(outer_.apply(start, end), 1.0f, t);
    return {};
  }
  mixing::sub(delta_, start, end);
  mixing::copy(work_, start);  // x_t, for finish_round
  outgoing = alg.outgoing(delta_, 1.0f, t);
  return {};
}

local_training::outcome local_training::round(std::uint64_t t, std::span<const float>& outgoing,
                                              bool mixing_only) {
  algorithm& alg = *learner_.alg;
  mixed_only_ = mixing_only;
  if (mixing_only && in_program_) {
    outgoing = alg.outgoing({}, 0.0f, t);
    return {};
  }
  if (mixing_only) {
    grad_.resize(learner_.model->num_params());  // a program's node: its first mixing round allocates it
    std::fill(grad_.begin(), grad_.end(), 0.0f);
    outgoing = alg.outgoing(grad_, 0.0f, t);
    return {};
  }
  if (local_rounds_) return local_steps(t, outgoing);
  if (outcome e = gradient(t, t, alg.model()); !e) return e;
  outgoing = alg.outgoing(local_.apply(grad_, alg.model()), static_cast<float>(lr_), t);
  return {};
}

local_training::outcome local_training::steps(std::uint64_t t) {
  if (!learner_.program.empty()) return {};  // the program took them
  for (std::uint64_t k = 1; k <= plan_.local_steps; ++k) {
    if (outcome e = gradient(t, (t - 1) * plan_.local_steps + k, work_); !e) return e;
    local_step::descend(work_, static_cast<float>(lr_), local_.apply(grad_, work_));
  }
  return {};
}

void local_training::keep_parameters() {
  const std::span<float> p = parameters();
  mixing::copy(taken_, p);
}

local_training::outcome local_training::change(std::uint64_t t, std::span<const float>& outgoing) {
  mixed_only_ = false;
  outgoing = learner_.alg->outgoing(outer_.apply(learner_.alg->model(), taken_), 1.0f, t);
  return {};
}

std::span<float> local_training::parameters() {
  if (!learner_.program.empty()) return learner_.program;
  return overlap_ ? std::span<float>(work_) : std::span<float>();
}

// x is the program's parameters and an outer step follows the round: work_ keeps x_t, the parameters
// at the round's start, which the program's steps leave.
void local_training::keep_round_start() {
  if (round_start_kept_) mixing::copy(work_, learner_.alg->model());
}

// The outer step's buffers: none for a program's model that is the algorithm's x without an outer
// step, no vector of s when the step is taken in place (the algorithm's x in the program's).
outer_step local_training::make_outer() const {
  const bool none = !local_rounds_ || ((in_program_ || half_step_) && !outer_after_round_);
  return outer_step(none ? 0 : learner_.model->num_params(), config_.train.outer, in_program_ || half_step_);
}

void local_training::restart() {
  local_ = local_step(learner_.program.empty() ? learner_.model->num_params() : 0, config_.train.momentum,
                      config_.train.weight_decay);
  outer_ = make_outer();
  write_back();  // the donor's model: the program goes on from it
  keep_round_start();
}

// x_{t+1} = x_t − s(x_t − x'_{t+1}), x' the algorithm's result of the round (outer_after_round_ only).
void local_training::finish_round() {
  if (outer_after_round_ && !mixed_only_) {
    const std::span<float> x = learner_.alg->adjustable_model();
    if (in_program_ || half_step_)
      outer_.step_in_place(work_, x);
    else
      mixing::sub(x, work_, outer_.apply(work_, x));
  }
  keep_round_start();  // x_{t+1}: the next round's start, which the program's steps will leave
  if (overlap_ && !mixed_only_) {  // P − P_taken + x_{t+1}: the steps taken meanwhile kept
    const std::span<float> p = parameters();
    const std::span<const float> x = learner_.alg->model();
    mixing::rebase(p, taken_, x);
    return;
  }
  write_back();  // the program's next steps start from x_{t+1}
}

void local_training::write_back() {
  const std::span<float> p = parameters();
  if (p.empty() || in_program_) return;  // in_program_: x is p
  const std::span<const float> x = learner_.alg->model();
  mixing::copy(p, x);
}

void local_training::add_loss(double loss) {
  loss_sum_ += loss;
  ++loss_count_;
}

double local_training::take_mean_loss(double previous) {
  const double mean = loss_count_ ? loss_sum_ / static_cast<double>(loss_count_) : previous;
  loss_sum_ = 0;
  loss_count_ = 0;
  return mean;
}

// With the algorithm's x in the program's parameters and an outer step, the round's start x_t is
// the node's alone (x moved on with the program's steps): it goes with the outer step's state.
void local_training::save_steps(state_writer& local, state_writer& outer) const {
  local_.save_state(local);
  outer_.save_state(outer);
  if (round_start_kept_) outer.put_floats("round_start", work_);
}

void local_training::load_steps(state_reader& local, state_reader& outer) {
  local_.load_state(local);
  outer_.load_state(outer);
  if (round_start_kept_) outer.get_floats("round_start", work_);
}

void local_training::save_counters(state_writer& out) const {
  out.put_f64("lr", lr_);
  out.put_f64("loss_sum", loss_sum_);
  out.put_u64("loss_count", loss_count_);
}

void local_training::load_counters(state_reader& in) {
  lr_ = in.get_f64("lr");
  loss_sum_ = in.get_f64("loss_sum");
  loss_count_ = in.get_u64("loss_count");
}

}  // namespace qgossip
