#pragma once
// One node of `qgossip launch --exec` made of a group of processes (topology.group_size g > 1;
// python/qgossip/group.py, docs/python.md "Groups"). The launcher starts `qgossip group-exec --size g
// -- PROGRAM...` as the node, behind its exec prefix (so the whole group shares the node's namespace
// and cgroup), and group-exec starts g copies of PROGRAM with torchrun's variables for a world of the
// group's own: RANK = LOCAL_RANK = l, WORLD_SIZE = LOCAL_WORLD_SIZE = g, GROUP_RANK = 0, MASTER_ADDR
// 127.0.0.1, MASTER_PORT a port free here, and QGOSSIP_GROUP_SIZE = g. Member 0 (the speaker, which
// runs the node) keeps group-exec's stdout, the launcher's progress pipe; the others' stdout goes to
// stderr (the node's log).
//
// To the launcher the group is one node: its signals reach every member (they stay in group-exec's
// process group, and group-exec outlives them), the first member to fail ends the others (SIGTERM,
// SIGKILL after grace_s: a member waiting in a collective would otherwise wait for torch's time-out),
// and group-exec ends as that member did (its exit code, or the same signal raised on itself), so the
// launcher's rules for a node's end apply unchanged. Members die with group-exec (PR_SET_PDEATHSIG).
#include <string>
#include <vector>

namespace qgossip {

struct group_request {
  int size = 2;                      // processes in the group; REQUIRES: >= 1
  std::vector<std::string> program;  // argv of every member (argv[0] looked up in PATH); REQUIRES: non-empty
  double grace_s = 5;                // after the first failure, before the others are SIGKILLed
};

// Runs the group to its end and returns group-exec's exit code (or does not return: a member killed
// by a signal is mirrored by raising it). Throws std::system_error when fork or a socket fails.
[[nodiscard]] int run_group(const group_request& request);

}  // namespace qgossip
