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

#include "node/attack/attack_kind.hpp"

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
  // model.kind external (a node driven by another program's loop, node/run/node_session.hpp): the
  // program's parameters, one flat float32 vector it trains in place. The node starts from them
  // (x_1), takes each round's change from them, and writes its model back into them after the round.
  std::span<float> program_params;
  // ... and the node's state the program saved with it (node_session::state(), encoded as a
  // checkpoint): the node continues from it as from a checkpoint of --resume. Empty: a fresh start.
  std::span<const std::byte> program_state;
  // A scenario's hostile: entry for this rank (`qgossip run --scenario FILE`, node/attack/): the node
  // sends that attack instead of its honest messages. Unset: an honest node, as always.
  std::optional<attack_spec> hostile;
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
