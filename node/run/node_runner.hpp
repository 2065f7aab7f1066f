#pragma once
// One node of a run, from config to summary: `qgossip run --config RUN.yaml --rank R`.
//
// Start-up (topology, data, model, compressor, sockets) throws config_error with a clear message
// (missing data file, port in use, bad weights...). After that, faults are values: a silent or
// misbehaving neighbour, a diverged model or a stop signal end the loop cleanly, the summary
// records why, and the return value says how it ended.
#include "node/config/config.hpp"

namespace qgossip {

enum class node_exit : int {
  ok = 0,
  failed = 1,        // a run-time fault: silent neighbour, transport error, corrupt message
  diverged = 3,      // the loss or the model became non-finite
  interrupted = 130, // SIGINT / SIGTERM
};

struct node_run_options {
  bool progress_json = true;  // the launcher protocol on stdout (node/progress.hpp)
};

node_exit run_node(const run_config& config, int rank, const node_run_options& options = {});

// Set by the SIGINT/SIGTERM handler that main() installs; the loop stops at the next round.
void request_stop();
bool stop_requested();

}  // namespace qgossip
