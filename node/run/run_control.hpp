#pragma once
// How a node's run is steered and how it speaks, the lowest room of node/run (docs/design.md): what
// `qgossip run` asks of it (node_run_options), how it ends (node_exit), the stop flag a signal
// raises, and its human-readable lines on stderr. Every other file of node/run may include this;
// it includes none of them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "node/log/node_status.hpp"

namespace qgossip {

enum class node_exit : int {
  ok = 0,
  failed = 1,        // a run-time fault: silent neighbour, transport error, corrupt message
  refused = 2,       // its peers refuse it: its key, or (rejoining) every live neighbour (docs/failures.md)
  diverged = 3,      // the loss or the model became non-finite
  halted = 75,       // SIGUSR1 (a job's time limit near): every node stopped after one agreed round,
                     // its checkpoint written; resume with --resume (EX_TEMPFAIL: try again)
  interrupted = 130, // SIGINT / SIGTERM
};

// The summary's status of a node that ends with `exit` (refused is a failure).
[[nodiscard]] node_status status_of(node_exit exit);

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
  // A scenario file (`qgossip run --scenario FILE`; docs/security.md, "Attacks as experiment
  // input") whose hostile: list may name this rank: the node then sends that attack instead of its
  // honest messages (node/run/hostile_round.hpp). Empty, or a list without this rank: an honest node.
  std::string scenario;
};

// Set by the SIGINT/SIGTERM handler that `qgossip run` installs first thing (async-signal-safe: an
// atomic flag). The loop stops at the next round, the exchange within its stop-check interval, and
// the start-up (node_setup) at its next step; each way ends in a summary with status interrupted and
// exit 130, a stop before round 1 included.
void request_stop();
bool stop_requested();
// Clears the flag (for tests that run several nodes in one process).
void clear_stop_request();
// Set by `qgossip run`'s SIGUSR1 handler (Slurm's --signal=USR1@SECONDS before a time limit): the
// node agrees with the others on a round to stop after, checkpoints it and exits 75
// (docs/checkpoints.md, "Stopping for a time limit"). Async-signal-safe, as request_stop.
void request_halt();
bool halt_requested();

// Human-readable log lines on stderr, prefixed with the rank so interleaved output stays legible.
void say(int rank, const std::string& text);

}  // namespace qgossip
