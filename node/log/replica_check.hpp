#pragma once
// Checks, from the node summaries of a finished run (node-<rank>.json), that every copy a node
// holds of a neighbour equals what that neighbour holds itself:
//  - "replica" (DCD-PSGD): node i's replica of j hashes equal to j's model_hash;
//  - "estimate" (ECD-PSGD): node i's estimate of j hashes equal to j's own estimate (its copy_<j>);
//  - "public_copy" (CHOCO-SGD): as estimates;
//  - "same_model" (centralized allreduce/allgather): every node's model_hash equals node 0's;
// and, for a node that speaks for a group of processes, that every member holds the node's model
// (each of its "group_model_hashes" equals its model_hash).
// This is the end-to-end proof that compression, the wire and the update order keep copies exact.
// The summaries come from read_run_dir (node/log/run_dir.hpp), as `qgossip logs` reads them.
// Thread-safety: reads files (the path overload) and returns a value; no shared state.
#include <filesystem>
#include <string>
#include <vector>

#include "node/log/run_dir.hpp"

namespace qgossip {

struct replica_check_result {
  std::string copies_kind;             // "" when the algorithm holds no copies
  int nodes = 0;
  int edges_checked = 0;               // directed (holder, owner) pairs compared
  int group_members_checked = 0;       // members of groups compared with their node's model
  std::vector<std::string> mismatches; // "node 2's replica of 3 is 0x.. but node 3 has 0x.."
  std::vector<std::string> problems;   // unreadable or missing summaries
  // The run did not finish, so its copies are not compared (they differ mid-run for no fault):
  // "node 3 has no summary (node-3.json)", "node 1 did not finish: status interrupted (...)",
  // "node 2 stopped after round 40 of 100". Ranks expected: 0..n-1 with n from run.json, else
  // those with a summary. When not empty, mismatches is empty and edges_checked is 0.
  std::vector<std::string> unfinished;
  // Ranks that left the run (network.on_peer_failure: continue), from the survivors' summaries
  // ("departed"): not required to finish, and their copies are not compared; the survivors hold
  // none of them.
  std::vector<int> departed;
  // Hostile ranks (their summary's "hostile": a scenario's attack): their copies are forged on
  // purpose, so what the others hold of them is not compared; what they hold of others is.
  std::vector<int> hostile;
  bool finished() const { return unfinished.empty(); }
  bool ok() const { return mismatches.empty() && problems.empty() && unfinished.empty(); }
};

// Compares the copies of a run read by read_run_dir. Problems: a node-<r>.json that is unreadable
// ("<dir>/node-<r>.json: <why>"), a directory that could not be listed, no summary at all, a summary
// without copies_kind, a copy of a node with no summary.
[[nodiscard]] replica_check_result check_replicas(const run_dir_contents& run);
// The same on read_run_dir(run_dir).
[[nodiscard]] replica_check_result check_replicas(const std::filesystem::path& run_dir);

}  // namespace qgossip
