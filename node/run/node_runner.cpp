#include "node/run/node_runner.hpp"

#include <atomic>

#include "node/run/node_setup.hpp"
#include "node/run/round_steps.hpp"

namespace qgossip {

namespace {
std::atomic<bool> g_stop{false};
}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }

node_exit run_node(const run_config& config, int rank, const node_run_options& options) {
  node_setup setup(config, rank, options);  // may throw config_error; nothing after it does
  say(rank, setup.describe());
  setup.log->start(setup.n, setup.rounds, static_cast<double>(setup.rounds) / static_cast<double>(setup.rounds_per_epoch));

  round_steps step(setup);
  step_end end;
  std::uint64_t t = 0;
  while (end && t < setup.rounds) {
    if (stop_requested()) {
      end = {node_exit::interrupted, "interrupted by a signal at round " + std::to_string(t)};
      break;
    }
    ++t;
    if (!(end = step.compute(t))) break;
    step.encode(t);
    if (!(end = step.exchange(t))) break;
    if (!(end = step.absorb(t))) break;
    end = step.log(t);
  }
  return step.finish(end, t);
}

}  // namespace qgossip
