#pragma once
// Runs a program to completion with the caller's stdio (for helper scripts such as the plotter).
#include <string>
#include <vector>

namespace qgossip {

// Returns the program's exit code, 128 + signal when killed, or 127 when it cannot be started.
int run_and_wait(const std::vector<std::string>& argv);

// A helper program started early and held until told to go: it prepares while the run goes on (the
// plotter imports matplotlib, half a second), then blocks reading one line from its stdin. go()
// writes "go" and returns; wait() waits for it and returns its exit code (as run_and_wait). Without
// go() the destructor closes its stdin and the program exits without doing its work. It runs at a lower priority (nice
// 10), so its preparing takes no CPU from the nodes, and in a process group of its own, so a Ctrl-C
// meant for the launcher does not interrupt it. Not thread-safe.
class standby_process {
 public:
  explicit standby_process(const std::vector<std::string>& argv);
  ~standby_process();
  standby_process(const standby_process&) = delete;
  standby_process& operator=(const standby_process&) = delete;
  void go();
  [[nodiscard]] int wait();

 private:
  int pid_ = -1;
  int stdin_ = -1;
};

// The path of the running executable (/proc/self/exe), for starting more of ourselves.
std::string self_executable();

// scripts/<name> of this source tree (next to the executable's build tree or the configured
// source directory), or "" when not found.
std::string find_script(const std::string& name);

}  // namespace qgossip
