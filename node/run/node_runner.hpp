#pragma once
// One node of a run, from config to summary: `qgossip run --config RUN.yaml --rank R`.
//
// Start-up (topology, data, model, compressor, sockets) throws config_error with a clear message
// (missing data file, port in use, bad weights, a host that does not resolve, out of memory while
// building something named...). A stop signal during start-up is not an error: the node writes a
// summary with status interrupted and returns node_exit::interrupted. After that, faults are values: a silent
// or misbehaving neighbour, a diverged model or a stop signal end the loop cleanly, the summary records why,
// and the return value says how it ended.
#include "node/config/config.hpp"
#include "node/run/run_control.hpp"  // node_exit, node_run_options, the stop flag

namespace qgossip {

node_exit run_node(const run_config& config, int rank, const node_run_options& options = {});

}  // namespace qgossip
