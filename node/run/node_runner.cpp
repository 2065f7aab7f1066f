#include "node/run/node_runner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/log/run_log.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/resume.hpp"
#include "topology/diameter.hpp"
#include "node/run/round_steps.hpp"

namespace qgossip {

namespace {

// SIGUSR1 at round t (a job's time limit near): the proposer's halt round is t plus twice the
// graph's diameter and two (the centralized algorithms: every node one hop away), so that the news
// reaches every node before any passes it (node/run/peer_failures.hpp halt_signal). Without
// checkpoints there is nothing to stop for: said, and the node goes on.
void halt_signal(node_setup& setup, std::uint64_t t) {
  if (setup.config.train.checkpoint_every == 0) {
    say(setup.rank, "SIGUSR1 ignored: train.checkpoint_every is 0, so a stop could not be resumed");
    return;
  }
  const std::uint64_t apart =
      is_centralized(setup.config.algorithm) ? 1 : static_cast<std::uint64_t>(graph_diameter(setup.topo));
  setup.links.failures->halt_signal(t, 2 * apart + 2);
}

// The summary of a node stopped before it was ready (no model, no rounds): status interrupted and
// what it was doing, so that every node of an interrupted run leaves a node-<rank>.json.
node_exit interrupted_at_start_up(const run_config& config, int rank, const node_run_options& options,
                                  const std::string& doing, std::chrono::steady_clock::time_point start) {
  const std::string why = "interrupted by a signal during start-up (" + doing + ")";
  say(rank, "stopping: " + why);
  run_log log(std::filesystem::path(config.output_dir) / config.name, rank, options.progress_json);
  node_summary summary;
  summary.rank = rank;
  summary.status = "interrupted";
  summary.error = why;
  summary.host = host_name();
  summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log.finish(summary);
  return node_exit::interrupted;
}

// Watches the start-up for a stop request that no step boundary of node_setup sees soon (a long
// data load, a slow model build): after kStopGrace it writes the interrupted summary itself and
// ends the process with exit 130, so a stop during start-up is prompt as well as recorded. The
// mutex makes "the watchdog writes" and "the start-up finished" exclusive: once finish() has
// returned, the watchdog does nothing more; once the watchdog has begun, finish() never returns
// (the process ends).
class start_up_watchdog {
 public:
  static constexpr auto kStopGrace = std::chrono::milliseconds(200);

  start_up_watchdog(const run_config& config, int rank, const node_run_options& options,
                    std::chrono::steady_clock::time_point start)
      : config_(config), rank_(rank), options_(options), start_(start), thread_([this] { watch(); }) {}
  ~start_up_watchdog() { finish(); }
  start_up_watchdog(const start_up_watchdog&) = delete;
  start_up_watchdog& operator=(const start_up_watchdog&) = delete;

  void finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    std::optional<std::chrono::steady_clock::time_point> stop_seen;
    while (!done_) {
      wake_.wait_for(lock, std::chrono::milliseconds(20));
      if (done_ || !stop_requested()) continue;
      const auto now = std::chrono::steady_clock::now();
      if (!stop_seen) stop_seen = now;
      if (now - *stop_seen < kStopGrace) continue;
      try {
        (void)interrupted_at_start_up(config_, rank_, options_, std::string("while ") + start_up_phase(),
                                      start_);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "qgossip: error: %s\n", e.what());
      }
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(static_cast<int>(node_exit::interrupted));
    }
  }

  const run_config& config_;
  const int rank_;
  const node_run_options& options_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

node_exit run_node(const run_config& config, int rank, const node_run_options& options) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<node_setup> built;
  {
    start_up_watchdog watchdog(config, rank, options, start);
    try {
      built = std::make_unique<node_setup>(config, rank, options);  // may throw config_error
    } catch (const start_up_interrupted& stop) {
      watchdog.finish();
      return interrupted_at_start_up(config, rank, options, stop.doing, start);
    }
  }
  node_setup& setup = *built;
  say(rank, setup.describe());

  std::unique_ptr<round_steps> steps;
  try {
    steps = std::make_unique<round_steps>(setup);
  } catch (const std::bad_alloc&) {
    throw config_error("out of memory while allocating the round buffers (" +
                       std::to_string(setup.learner.model->num_params()) + " parameters per vector, batches of " +
                       std::to_string(config.train.batch) + ")");
  }
  round_steps& step = *steps;
  std::uint64_t t = 0;
  if (node_checkpoints& ck = setup.checkpoints; ck.resume) {  // the loop continues after the checkpoint's round
    t = step.restore(*ck.resume, checkpoint_path(ck.dir, ck.resume->round).string());
    ck.resume.reset();
  }
  const node_plan& plan = setup.plan;
  setup.log->start(setup.n, plan.rounds, plan.epoch_after(plan.rounds * plan.local_steps));
  if (t == 0) setup.links.failures->announce_start(setup.learner.alg->model());  // a fresh start
  if (setup.links.rejoin) setup.links.rejoin->announce(t);  // a restarted node asks to be admitted again
  step_end end;
  bool halt_seen = false;
  while (end && t < plan.rounds) {
    if (stop_requested()) {
      end = {node_exit::interrupted, "interrupted by a signal at round " + std::to_string(t)};
      break;
    }
    if (halt_requested() && !halt_seen) {
      halt_seen = true;
      halt_signal(setup, t);
    }
    // Stopped, or rejoined (t then is the round before the one the node restarts at): the loop's
    // condition decides.
    if (!(end = step.run_round(t)) || end.rejoined) continue;
    if (setup.links.failures->halt_round() == t && t < plan.rounds) {  // its checkpoint: the round's own step
      end = {node_exit::halted, "stopped after round " + std::to_string(t) + " for a time limit (SIGUSR1), its "
                                "checkpoint written: continue with --resume"};
      break;
    }
    if (step.peers_done()) break;
  }
  return step.finish(end, t);
}

}  // namespace qgossip
