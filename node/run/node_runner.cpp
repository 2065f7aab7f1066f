#include "node/run/node_runner.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/errors.hpp"
#include "node/log/run_log.hpp"
#include "node/run/node_setup.hpp"
#include "node/run/round_driver.hpp"

namespace qgossip {

namespace {

// The summary of a node stopped before it was ready (no model, no rounds): status interrupted and
// what it was doing, so that every node of an interrupted run leaves a node-<rank>.json.
node_exit interrupted_at_start_up(const run_config& config, int rank, const node_run_options& options,
                                  const std::string& doing, std::chrono::steady_clock::time_point start) {
  const std::string why = "interrupted by a signal during start-up (" + doing + ")";
  say(rank, "stopping: " + why);
  run_log log(std::filesystem::path(config.output_dir) / config.name, rank, options.progress_json);
  node_summary summary;
  summary.rank = rank;
  summary.status = node_status::interrupted;
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
  round_driver driver(setup);
  driver.start();
  step_end end;
  while (end && !driver.done()) end = driver.next();
  return driver.finish(end);
}

}  // namespace qgossip
