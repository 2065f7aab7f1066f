#pragma once
// The launcher: starts n node processes on this host, supervises them, and shows their progress as
// one display.
//
// Each node is fork+exec'd with its own environment, stdin from /dev/null, stdout into a pipe the
// launcher reads (the JSON-lines protocol of node/launch/progress.hpp), and stderr appended to its log file.
// The launcher never blocks on one child: all pipes, child exits (SIGCHLD), signals and timers are
// handlers on one asio::io_context on launch()'s thread (supervisor.hpp; Asio: signal_set,
// posix::stream_descriptor, steady_timer).
//
// Failure policy:
//  - A node that exits non-zero, is killed by a signal, or sent an "error" event has failed. On the
//    first failure the others are stopped (SIGTERM to each node's process group, kill_grace_s, then
//    SIGKILL) and the result names the FIRST node to fail: the one whose error event or exit the
//    launcher saw first. Nodes that fail afterwards (their neighbour vanished) or that the launcher
//    stopped are not blamed.
//  - SIGINT or SIGTERM to the launcher (Ctrl-C): SIGINT is forwarded to every node, then the same
//    grace and SIGKILL; exit code 128 + the signal (130 for Ctrl-C). A second signal during the
//    grace period kills at once.
//  - Each node runs in its own process group (so a terminal's Ctrl-C reaches the nodes once, through
//    the launcher) and has PR_SET_PDEATHSIG=SIGKILL, so nodes die if the launcher dies.
//
// REQUIRES: at most one launch() at a time per process (it owns SIGINT, SIGTERM and SIGCHLD while it
// runs and restores the previous handlers on return; launch_signals.hpp), no other asio::signal_set
// on those signals, and no other code in the process may reap the children (waitpid(-1, ...)). PR_SET_PDEATHSIG fires when the *thread* that called launch() exits,
// so call it from a thread that outlives the run (normally main).
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "node/config/churn_file.hpp"
#include "node/launch/progress.hpp"

namespace qgossip {

struct node_process {
  int rank = 0;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH (execvp). REQUIRES: non-empty.
  // Set or overridden on top of the launcher's own environment (e.g. CUDA_VISIBLE_DEVICES).
  std::vector<std::pair<std::string, std::string>> env;
  // The node's stderr is appended here (parent directories are created). Empty: the node inherits
  // the launcher's stderr (which then interleaves with the live display).
  std::string stderr_log;
};

struct launch_options {
  // Redraw one status line in place (\r). Default: when the launcher's stderr is a terminal.
  bool live = default_live();
  // Seconds between redraws of the live line.
  double refresh_s = 0.5;
  // Seconds between plain status lines when not live (CI logs, pipes).
  double plain_interval_s = 10;
  // Where the display, node text lines and the final table go; nullptr: silent.
  std::ostream* out = default_out();
  // Seconds a node has to exit after SIGTERM/SIGINT before it is SIGKILLed.
  double kill_grace_s = 5;
  // network.on_peer_failure: continue. A node that fails or leaves does not stop the others; once
  // only nodes that left are still running (a stopped process), they are ended.
  bool continue_on_failure = false;
  // network.restart (with continue_on_failure): a node that fails while others still run is started
  // again, at most this many times, after restart_backoff_s doubling each time (at most 30 s); it
  // rejoins the running graph (docs/failures.md, "Rejoining"). Not after exit 2 (a refusal or a
  // config error: it would fail the same way) nor after the launcher's own stop signal.
  int restart_limit = 0;
  double restart_backoff_s = 1.0;
  // Churn (`qgossip launch --churn FILE`; node/config/churn_file.hpp): at each event's at_s from the
  // start, its node is SIGKILLed and started again down_s later (not counted as a failure nor
  // against restart_limit), or SIGSTOPped and SIGCONTinued down_s later. With continue_on_failure.
  std::vector<churn_event> churn;

  static bool default_live();
  static std::ostream* default_out();
};

struct launch_result {
  // 0: every node exited 0 without an error event. 2: the first node to fail exited 2 (bad input:
  // its config, data files, ports). 1: a node failed otherwise. 128+signal: interrupted.
  int exit_code = 0;
  int failed_rank = -1;  // the rank of the first node to fail; -1 when none did
  // "node 3 failed (exit 1): <its error event's message, else the last non-empty line of its
  // stderr log>"; "node 3 was killed by signal 9 (SIGKILL)" for a node that died of a signal (its
  // log is not quoted: its last line says nothing about the kill; an error event it sent before is,
  // after " after reporting: "); "interrupted by SIGINT" when the launcher was signalled; empty on
  // success.
  std::string failure;
  std::vector<final_metrics> finals;  // one per node, in the order given to launch()
  // "node 3 left the run at round 120 (rank 2: its link closed ...)", one per node that left.
  std::vector<std::string> departures;
};

// Runs the nodes to completion (or failure, or interruption) and returns what happened. A node that
// cannot be started (exec fails) counts as a node failing with exit 127. Throws config_error when
// `nodes` is malformed (empty argv, duplicate rank) or a log file cannot be created (before any node
// starts), and std::system_error when the OS refuses a pipe or fork (after killing what it started).
[[nodiscard]] launch_result launch(std::span<const node_process> nodes, const launch_options& options = {});

// The number of NVIDIA GPUs on this host: entries in /proc/driver/nvidia/gpus (0 when absent). The
// caller uses it to give node i CUDA_VISIBLE_DEVICES = i % count.
[[nodiscard]] int count_local_gpus(const std::filesystem::path& gpus_dir = "/proc/driver/nvidia/gpus");

}  // namespace qgossip
