#pragma once
// How the launch ended: the result (exit code, the first node to fail and why) and the per-node
// outcome column of the final table, from how each node ended. Pure: no I/O except reading the
// failed node's stderr log for its last line.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "node/launch/launcher.hpp"
#include "node/launch/progress.hpp"

namespace qgossip {

// One node as the launcher saw it end.
struct node_end {
  std::size_t slot = 0;  // its place in launch order (and on the progress board)
  int rank = 0;
  int wait_status = 0;           // from waitpid
  bool signalled_by_us = false;  // the launcher sent it a stop signal
  // When the launcher first saw it fail (an error event, or a failed exit).
  std::optional<std::chrono::steady_clock::time_point> failed_at;
  std::string exec_error;  // "cannot execute ..." when execve failed
  std::string log_path;    // its stderr log; empty when it had none
  off_t log_start = 0;     // the log's size before this run
  // It left the run (network.on_peer_failure: continue): "at round 120 (rank 2: its link closed
  // ...)", as the first node to notice reported it; empty when it did not leave.
  std::string left;
};

// "SIGINT", "SIGKILL", ...; "signal 42" for others.
[[nodiscard]] std::string signal_name(int sig);
// How a node ended, for the failure line: "failed (exit 3)", "was killed by signal 9 (SIGKILL)".
[[nodiscard]] std::string describe_end(int status);
// A node failed: it did not exit 0, or it sent an error event.
[[nodiscard]] bool has_failed(const node_end& end, const progress_board& board);

// exit_code, failed_rank, failure and finals (see launch_result). interrupted_by: the signal that
// made the launcher stop the nodes, 0 when none did.
[[nodiscard]] launch_result make_result(std::span<const node_end> ends, const progress_board& board,
                                        int interrupted_by);
// The table's last column: "done", "exit 1 (error)", "stopped (signal SIGTERM)", "stopped (exit 130)", ...
[[nodiscard]] std::vector<std::string> outcome_column(std::span<const node_end> ends,
                                                      const progress_board& board);

}  // namespace qgossip
