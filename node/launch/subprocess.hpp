#pragma once
// Runs a program to completion with the caller's stdio (for helper scripts such as the plotter).
#include <string>
#include <vector>

namespace qgossip {

// Returns the program's exit code, 128 + signal when killed, or 127 when it cannot be started.
int run_and_wait(const std::vector<std::string>& argv);

// The path of the running executable (/proc/self/exe), for starting more of ourselves.
std::string self_executable();

// scripts/<name> of this source tree (next to the executable's build tree or the configured
// source directory), or "" when not found.
std::string find_script(const std::string& name);

}  // namespace qgossip
