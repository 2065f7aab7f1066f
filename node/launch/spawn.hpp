#pragma once
// Starting one node process: everything prepared before fork (only async-signal-safe calls after
// it), then fork + execve into its own process group with PR_SET_PDEATHSIG=SIGKILL, stdin from
// /dev/null, stdout into a pipe for the launcher and stderr appended to the node's log file.
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "node/launch/launcher.hpp"
#include "node/launch/unique_fd.hpp"

namespace qgossip {

// Everything a child needs, prepared before fork.
struct spawn_plan {
  std::string program;  // argv[0] resolved against PATH (the node's own PATH when it sets one)
  std::vector<std::string> args;
  std::vector<std::string> env;  // the launcher's environment with the node's overrides
  unique_fd log;                 // the node's stderr; -1: inherit the launcher's
  std::string log_path;          // empty when inherited
  off_t log_start = 0;           // the log's size before this run: only later lines describe it
};

// This process's environment with `overrides` set or replaced ("KEY=VALUE" entries, the overrides
// last), for a child's execve.
[[nodiscard]] std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// Throws config_error when the log file or its directory cannot be created.
[[nodiscard]] spawn_plan make_plan(const node_process& node);

struct spawned {
  pid_t pid = -1;
  unique_fd out;           // the read end of its stdout (blocking; the caller decides)
  std::string exec_error;  // "cannot execute 'X': <why>" when execve failed (the child exits 127)
};

// Forks and execs one node. Exec failures come back through a close-on-exec pipe (EOF: exec
// succeeded; an int: the errno) and are also appended to the node's log. Throws std::system_error
// when pipe or fork fails. The child resets `reset_signals` (the ones the launcher catches) and
// SIGPIPE to their defaults before it unblocks signals.
[[nodiscard]] spawned spawn(spawn_plan& plan, int devnull, const std::vector<int>& reset_signals);

// Sends `sig` to the node's process group (to the node alone when the group is gone).
void signal_group(pid_t pid, int sig);

}  // namespace qgossip
