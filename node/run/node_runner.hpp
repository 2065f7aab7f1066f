#pragma once
// One node of a run, from config to summary: `qgossip run --config RUN.yaml --rank R`.
//
// Start-up (topology, data, model, compressor, sockets) throws config_error with a clear message
// (missing data file, port in use, bad weights, a host that does not resolve, out of memory while
// building something named...). A stop signal during start-up is not an error: the node writes a
// summary with status interrupted and returns node_exit::interrupted. After that, faults are values: a silent
// or misbehaving neighbour, a diverged model or a stop signal end the loop cleanly, the summary records why,
// and the return value says how it ended.
#include <chrono>
#include <cstdint>
#include <optional>

#include "node/config/config.hpp"

namespace qgossip {

enum class node_exit : int {
  ok = 0,
  failed = 1,        // a run-time fault: silent neighbour, transport error, corrupt message
  refused = 2,       // its peers refuse it: its key, or (rejoining) every live neighbour (docs/failures.md)
  diverged = 3,      // the loss or the model became non-finite
  interrupted = 130, // SIGINT / SIGTERM
};

struct node_run_options {
  bool progress_json = true;  // the launcher protocol on stdout (node/launch/progress.hpp)
  // Continue from a checkpoint (docs/checkpoints.md): from the newest round every node has, found
  // in every rank's checkpoint directory (node/run/resume.hpp common_resume_round), or from
  // resume_round when given (0: from the start). Without resume the node deletes its checkpoints.
  bool resume = false;
  std::optional<std::uint64_t> resume_round;
  // Test knob (the CLI reads QGOSSIP_TEST_CHECKPOINT_PAUSE_MS): how long a checkpoint write waits
  // between its complete, synced temporary file and the rename, so that a test's kill lands there.
  std::chrono::milliseconds checkpoint_pause_for_testing{0};
};

node_exit run_node(const run_config& config, int rank, const node_run_options& options = {});

// Set by the SIGINT/SIGTERM handler that `qgossip run` installs first thing (async-signal-safe: an
// atomic flag). The loop stops at the next round, the exchange within its stop-check interval, and
// the start-up (node_setup) at its next step; each way ends in a summary with status interrupted and
// exit 130, a stop before round 1 included.
void request_stop();
bool stop_requested();
// Clears the flag (for tests that run several nodes in one process).
void clear_stop_request();

}  // namespace qgossip
