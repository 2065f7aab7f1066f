#include "node/run/node_session.hpp"

#include <exception>
#include <utility>

#include "core/errors.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/round_steps.hpp"

namespace qgossip {

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

void node_session::attach(std::span<float> params) {
  if (attached()) throw config_error("attach: this node already has a model (attach once per node)");
  if (params.empty()) throw config_error("attach: the model has no parameters");
  options_.program_params = params;
  setup_ = std::make_unique<node_setup>(config_, rank_, options_);
  say(rank_, setup_->describe());
  rounds_ = std::make_unique<round_steps>(*setup_);
  setup_->log->start(setup_->n, setup_->plan.shown_rounds(), 0.0);
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

node_exit node_session::close() {
  if (!attached() || closed_) return exit_;
  closed_ = true;
  step_end end;
  if (stop_requested()) end = interrupted();
  exit_ = rounds_->finish(end, round_);
  return exit_;
}

}  // namespace qgossip
