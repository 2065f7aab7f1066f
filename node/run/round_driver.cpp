#include "node/run/round_driver.hpp"

#include <new>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/run/node_setup.hpp"
#include "topology/diameter.hpp"

namespace qgossip {

namespace {

std::unique_ptr<round_steps> steps_of(node_setup& s) {
  try {
    return std::make_unique<round_steps>(s);
  } catch (const std::bad_alloc&) {
    throw config_error("out of memory while allocating the round buffers (" +
                       std::to_string(s.learner.model->num_params()) + " parameters per vector, batches of " +
                       std::to_string(s.config.train.batch) + ")");
  }
}

}  // namespace

round_driver::round_driver(node_setup& s) : s_(s), steps_(steps_of(s)) {
  if (node_checkpoints& ck = s.checkpoints; ck.resume) {  // the rounds continue after the checkpoint's
    // A program's saved state (node_session) has no file of its own: it came through load_state_dict.
    const std::string origin =
        ck.dir.empty() ? std::string("load_state_dict") : checkpoint_path(ck.dir, ck.resume->round).string();
    t_ = steps_->restore(*ck.resume, origin);
  }
  const node_plan& plan = s.plan;
  s.log->start(s.n, plan.shown_rounds(), plan.epoch_after(plan.shown_rounds() * plan.local_steps));
}

void round_driver::start() {
  const work_pool::use threads(&s_.pool);
  s_.checkpoints.resume.reset();  // loaded: no longer needed
  node_membership& m = *s_.links.membership;
  if (t_ == 0) m.start.announce(s_.learner.alg->model(), *s_.links.ex);  // a fresh start
  if (m.back) m.back->announce(t_, *s_.links.ex);  // a restarted node asks to be admitted again
}

// SIGUSR1 at round t (a job's time limit near): the proposer's halt round is t plus twice the
// graph's diameter and two (the centralized algorithms: every node one hop away), so that the news
// reaches every node before any passes it (node/run/halt_agreement.hpp). Without checkpoints there
// is nothing to stop for: said, and the node goes on.
void round_driver::halt_signal() {
  if (s_.config.train.checkpoint_every == 0) {
    say(s_.rank, "SIGUSR1 ignored: train.checkpoint_every is 0, so a stop could not be resumed");
    return;
  }
  const std::uint64_t apart = is_centralized(s_.config.algorithm) ? 1 : static_cast<std::uint64_t>(graph_diameter(s_.topo));
  s_.links.membership->halt.signal(t_, 2 * apart + 2, *s_.links.ex);
}

step_end round_driver::next() {
  const work_pool::use threads(&s_.pool);
  const std::uint64_t rounds = s_.plan.rounds;
  for (;;) {
    if (stop_requested()) return {node_exit::interrupted, "interrupted by a signal at round " + std::to_string(t_)};
    if (halt_requested() && !halt_seen_) {
      halt_seen_ = true;
      steps_->hold();  // overlapped: the proposal waits for the round in flight to leave the links
      halt_signal();
    }
    const step_end end = steps_->run_round(t_);
    if (!end) return end;
    if (!end.rejoined) break;
    // Rejoined: t_ is the round before the one the node restarts at, which is still to run.
    if (t_ >= rounds) return {};
  }
  if (steps_->halts_after(t_) && t_ < rounds)  // its checkpoint: the round's own step
    return {node_exit::halted, "stopped after round " + std::to_string(t_) + " for a time limit (SIGUSR1), its "
                               "checkpoint written: continue with --resume"};
  return {};
}

bool round_driver::done() const { return t_ >= s_.plan.rounds || steps_->ended(); }

node_exit round_driver::finish(const step_end& end) {
  const work_pool::use threads(&s_.pool);
  return steps_->finish(end, t_);
}

step_end round_driver::settle() {
  const work_pool::use threads(&s_.pool);
  return steps_->settle(t_);
}

}  // namespace qgossip
