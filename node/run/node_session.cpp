#include "node/run/node_session.hpp"

#include <exception>
#include <utility>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/round_driver.hpp"

namespace qgossip {

namespace {
// The checkpoint section a program's node state adds to the round's: the program's step count.
constexpr const char* kSessionSection = "session";
}  // namespace

node_session::node_session(run_config config, int rank, node_run_options options)
    : config_(std::move(config)), rank_(rank), options_(std::move(options)) {
  if (config_.model.kind != model_kind::external)
    throw config_error(
        config_.file, 0, 0,
        "a node driven by a program needs model.kind external (the program's own model); this run "
        "names " +
            std::string(name_of(config_.model.kind)));
}

node_session::~node_session() {
  if (!attached() || closed_) return;
  try {
    (void)close();
  } catch (const std::exception& e) {
    say(rank_, std::string("closing: ") + e.what());
  }
}

std::uint64_t node_session::round() const { return driver_ ? driver_->round() : 0; }

step_end node_session::interrupted() const {
  return {node_exit::interrupted, "interrupted by a signal at round " + std::to_string(round())};
}

void node_session::attach(std::span<float> params, std::span<const std::byte> state) {
  if (attached()) throw config_error("attach: this node already has a model (attach once per node)");
  if (params.empty()) throw config_error("attach: the model has no parameters");
  setup_ = std::make_unique<node_setup>(config_, rank_, options_, program_model{params, state});
  say(rank_, setup_->describe());
  try {
    if (std::optional<checkpoint>& saved = setup_->checkpoints.resume) {
      state_reader in = saved->reader(kSessionSection, "load_state_dict");
      steps_ = in.get_u64("steps");
      in.expect_end();
    }
    driver_ = std::make_unique<round_driver>(*setup_);  // restores the saved state, if any
  } catch (const state_error&) {  // not attached after all: the links close, attach may be tried again
    driver_.reset();
    setup_.reset();
    steps_ = 0;
    throw;
  }
  params_ = params;
  if (round() > 0)
    say(rank_, "continuing from the saved state of round " + std::to_string(round()) + " (" + std::to_string(steps_) +
                   " steps)");
  driver_->start();
}

void node_session::step() {
  QG_ENFORCE(attached() && !closed_, "step(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (done_ || ++steps_ % setup_->plan.local_steps != 0) return;
  run_round();
}

void node_session::mix(std::uint64_t rounds) {
  QG_ENFORCE(attached() && !closed_, "mix(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (steps_ % setup_->plan.local_steps != 0)
    throw config_error("mix(): call it at a round boundary: " + std::to_string(steps_) +
                       " steps is not a multiple of train.local_steps (" +
                       std::to_string(setup_->plan.local_steps) + ")");
  settle();
  if (done_) return;
  driver_->steps().only_mix(true);
  struct train_again {  // the rounds after these train again, however these end
    round_driver& d;
    ~train_again() { d.steps().only_mix(false); }
  } after{*driver_};
  for (std::uint64_t i = 0; i < rounds && !done_; ++i) run_round();  // a failure throws, the node closed
}

void node_session::run_round() {
  const step_end end = driver_->next();
  if (end && !driver_->done()) return;
  end_after(end);
}

void node_session::settle() {
  QG_ENFORCE(attached() && !closed_, "settle(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (done_) return;
  const step_end end = driver_->settle();
  if (end && !driver_->done()) return;
  end_after(end);
}

void node_session::end_after(const step_end& end) {
  exit_ = driver_->finish(end);
  if (end) {  // its rounds are over (every peer done): the node has ended, the program goes on
    done_ = true;
    return;
  }
  closed_ = true;
  throw node_failure(end.exit, end.error);
}

void node_session::log_loss(double loss) {
  QG_ENFORCE(attached() && !closed_, "log(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (!done_) driver_->steps().add_loss(loss);
}

void node_session::log_metric(const std::string& name, double value) {
  QG_ENFORCE(attached() && !closed_, "log(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (!done_) driver_->steps().add_metric(name, value);
}

void node_session::set_group_hashes(std::vector<std::uint64_t> hashes) {
  QG_ENFORCE(attached() && !closed_, "set_group_hashes: " << (closed_ ? "the node is closed" : "attach a model first"));
  if (done_)  // ended by itself: its summary is written (round_steps::finish)
    setup_->log->amend_group_hashes(std::move(hashes));
  else
    setup_->group_hashes = std::move(hashes);
}

std::vector<std::byte> node_session::state() {
  QG_ENFORCE(attached() && !closed_, "state_dict(): " << (closed_ ? "the node is closed" : "attach a model first"));
  settle();
  if (done_) throw config_error("state_dict: the node has ended, with its neighbours (node.done): it has no rounds to continue");
  checkpoint ck = driver_->steps().snapshot(round());
  state_writer session;
  session.put_u64("steps", steps_);
  ck.add(kSessionSection, std::move(session));
  return encode_checkpoint(ck);
}

node_exit node_session::end(node_exit exit, const std::string& why) {
  QG_ENFORCE(exit == node_exit::failed || exit == node_exit::interrupted,
             "end(): a node ends so as failed or interrupted, not " << static_cast<int>(exit));
  if (!attached() || closed_) return exit_;
  closed_ = true;
  if (done_) return exit_;  // ended already, with its neighbours: its summary says so
  exit_ = driver_->finish(step_end{.exit = exit, .error = why});
  return exit_;
}

node_exit node_session::close() {
  if (!attached() || closed_) return exit_;
  closed_ = true;
  if (done_) return exit_;  // ended already, with its neighbours
  step_end end;
  if (stop_requested()) end = interrupted();
  exit_ = driver_->finish(end);
  return exit_;
}

}  // namespace qgossip
