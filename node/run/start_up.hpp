#pragma once
// The start-up of a node (node/run/node_setup.hpp builds its parts in steps): which step it is in,
// for the watchdog that honours a stop request during a long one (node/run/node_runner.cpp), and
// allocations that fail said in words. Thread-safe where noted.
#include <new>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace qgossip {

// Thrown by a start-up step when a stop was requested (SIGINT, SIGTERM) before the node was ready;
// run_node catches it and writes the summary of a node interrupted at start-up.
struct start_up_interrupted {
  std::string doing;  // "before building the model", ...
};

// The start-up moves on to `next` ("loading the data"): a stop requested so far ends it here
// (start_up_interrupted), else `next` is what the node is now doing.
void start_up_step(const char* next);
// What the start-up is doing now. Thread-safe: the watchdog reads it.
const char* start_up_phase();

// Runs f, turning a failed allocation inside into a config_error that says what was being
// allocated (a bare "std::bad_alloc" names nothing). `what` is only called when needed.
template <class F, class What>
decltype(auto) allocating(What&& what, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw config_error("out of memory while " + what() +
                       "; make the model or the data smaller, or run fewer nodes on this host");
  } catch (const std::length_error&) {
    throw config_error("out of memory while " + what() + " (more elements than a vector can hold)");
  }
}

// "3.2 MiB": floats as memory, for those messages.
[[nodiscard]] std::string mib(std::uint64_t floats);

}  // namespace qgossip
