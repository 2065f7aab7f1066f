#include "node/run/node_session.hpp"

#include <exception>
#include <utility>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/round_steps.hpp"

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

step_end node_session::interrupted() const {
  return {node_exit::interrupted, "interrupted by a signal at round " + std::to_string(round_)};
}

void node_session::attach(std::span<float> params, std::span<const std::byte> state) {
  if (attached()) throw config_error("attach: this node already has a model (attach once per node)");
  if (params.empty()) throw config_error("attach: the model has no parameters");
  options_.program_params = params;
  options_.program_state = state;
  setup_ = std::make_unique<node_setup>(config_, rank_, options_);
  options_.program_state = {};
  say(rank_, setup_->describe());
  rounds_ = std::make_unique<round_steps>(*setup_);
  if (std::optional<checkpoint>& saved = setup_->checkpoints.resume) {
    try {
      round_ = rounds_->restore(*saved, "load_state_dict");
      state_reader in = saved->reader(kSessionSection, "load_state_dict");
      steps_ = in.get_u64("steps");
      in.expect_end();
    } catch (const state_error&) {  // not attached after all: the links close, attach may be tried again
      rounds_.reset();
      setup_.reset();
      round_ = steps_ = 0;
      throw;
    }
    saved.reset();
    say(rank_, "continuing from the saved state of round " + std::to_string(round_) + " (" + std::to_string(steps_) +
                   " steps)");
  }
  setup_->log->start(setup_->n, setup_->plan.shown_rounds(), 0.0);
  if (round_ == 0) setup_->links.failures->announce_start(setup_->learner.alg->model());  // a fresh start
  if (setup_->links.rejoin) setup_->links.rejoin->announce(round_);  // a restarted node asks to be admitted
}

void node_session::step() {
  QG_ENFORCE(attached() && !closed_, "step(): " << (closed_ ? "the node is closed" : "attach a model first"));
  if (++steps_ % setup_->plan.local_steps != 0) return;
  step_end end;
  if (stop_requested()) end = interrupted();
  while (end) {
    end = rounds_->run_round(round_);
    if (!end.rejoined) break;  // rejoined: the round it restarts at is still to run
  }
  if (end) return;
  closed_ = true;
  exit_ = rounds_->finish(end, round_);
  throw node_failure(end.exit, end.error);
}

void node_session::log_loss(double loss) {
  QG_ENFORCE(attached() && !closed_, "log(): " << (closed_ ? "the node is closed" : "attach a model first"));
  rounds_->add_loss(loss);
}

void node_session::log_metric(const std::string& name, double value) {
  QG_ENFORCE(attached() && !closed_, "log(): " << (closed_ ? "the node is closed" : "attach a model first"));
  rounds_->add_metric(name, value);
}

std::vector<std::byte> node_session::state() const {
  QG_ENFORCE(attached() && !closed_, "state_dict(): " << (closed_ ? "the node is closed" : "attach a model first"));
  checkpoint ck = rounds_->snapshot(round_);
  state_writer session;
  session.put_u64("steps", steps_);
  ck.add(kSessionSection, std::move(session));
  return encode_checkpoint(ck);
}

node_exit node_session::close() {
  if (!attached() || closed_) return exit_;
  closed_ = true;
  step_end end;
  if (stop_requested()) end = interrupted();
  exit_ = rounds_->finish(end, round_);
  return exit_;
}

}  // namespace qgossip
