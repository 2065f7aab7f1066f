#pragma once
// How a node ended, as its summary says ("status" in node-<rank>.json, docs/errors.md): one enum and
// its names, which the summary writer, `qgossip logs` and `qgossip verify` read.
#include <span>

#include "core/names.hpp"

namespace qgossip {

enum class node_status {
  ok,           // its rounds completed (or it ended with its neighbours)
  failed,       // a run-time fault, or its peers refused it
  diverged,     // the loss or the model became non-finite
  interrupted,  // SIGINT / SIGTERM
  halted,       // SIGUSR1: stopped after the agreed round, checkpointed
};
inline constexpr named<node_status> kNodeStatusNames[] = {
    {node_status::ok, "ok"},
    {node_status::failed, "failed"},
    {node_status::diverged, "diverged"},
    {node_status::interrupted, "interrupted"},
    {node_status::halted, "halted"},
};
constexpr std::span<const named<node_status>> names_of(node_status) { return kNodeStatusNames; }

}  // namespace qgossip
