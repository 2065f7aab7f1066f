#include "node/run/run_control.hpp"

#include <atomic>
#include <cstdio>
#include <sstream>

namespace qgossip {

namespace {
std::atomic<bool> g_stop{false};
std::atomic<bool> g_halt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "request_stop runs in a signal handler");
}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }
void clear_stop_request() {
  g_stop.store(false);
  g_halt.store(false);
}
void request_halt() { g_halt.store(true); }
bool halt_requested() { return g_halt.load(); }

void say(int rank, const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) std::fprintf(stderr, "[node %d] %s\n", rank, line.c_str());
  std::fflush(stderr);
}

node_status status_of(node_exit exit) {
  switch (exit) {
    case node_exit::ok:
      return node_status::ok;
    case node_exit::diverged:
      return node_status::diverged;
    case node_exit::interrupted:
      return node_status::interrupted;
    case node_exit::halted:
      return node_status::halted;
    case node_exit::failed:
    case node_exit::refused:
      break;
  }
  return node_status::failed;
}

}  // namespace qgossip
