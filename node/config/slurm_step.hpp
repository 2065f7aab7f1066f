#pragma once
// Where the tasks of a Slurm step run, from the variables Slurm gives every task: the step's node
// list in Slurm's hostlist syntax (SLURM_STEP_NODELIST: "node[01-03,07],gpu-a[1-2],login"), its
// tasks per node ("2(x3),1"), its distribution and task count. What `topology.nodes: {from: slurm}`
// resolves (node/config/topology_section.cpp, docs/slurm.md). The environment is read only through
// the env_lookup the config loader is given (docs/design.md, "Rules that hold everywhere": nothing
// below the loader reads it).
// Errors are config_errors without a position; the loader places them at the `nodes` key.
// Pure functions: thread-safe.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip {

// An environment variable's value, or nullopt when it is not set.
using env_lookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (std::getenv).
[[nodiscard]] env_lookup process_environment();

// This task's rank as Slurm gives it (SLURM_PROCID), or nullopt when it is not set. Throws
// config_error when it is not a whole number ("SLURM_PROCID='x' is not a rank (a whole number)").
[[nodiscard]] std::optional<long long> slurm_procid(const env_lookup& env);

// The most hosts a host list may expand to, and the most tasks a tasks-per-node list may count (a
// guard against "n[0-999999999]"; a topology has at most 4096 nodes).
inline constexpr std::int64_t kMaxSlurmHosts = std::int64_t{1} << 16;

// Expands a Slurm host list, in its order: comma-separated names, each with any number of bracket
// groups of numbers and ranges, the first group varying slowest, the zero padding of a range's lower
// end kept ("n[09-11]" -> n09 n10 n11; "r[0-1]-n[1-2]" -> r0-n1 r0-n2 r1-n1 r1-n2), as
// `scontrol show hostnames` does. Throws config_error naming the list and what is wrong: an empty
// name, an unclosed or nested bracket, a range that runs down, more than kMaxSlurmHosts names.
[[nodiscard]] std::vector<std::string> expand_hostlist(std::string_view list);

// Expands a tasks-per-node list: "2(x3),1" -> 2 2 2 1 (a count, or a count repeated on (xN) nodes;
// counts and repeats >= 1). Throws config_error naming the list and the bad entry.
[[nodiscard]] std::vector<int> expand_tasks_per_node(std::string_view counts);

// Block distribution: task t runs on the host that holds it when each host's tasks are numbered
// consecutively, host by host. REQUIRES: one count per host (else config_error naming both sizes).
[[nodiscard]] std::vector<std::string> block_task_hosts(const std::vector<std::string>& hosts,
                                                        const std::vector<int>& tasks_per_node);

// The hosts of tasks 0..n-1 of the step this process runs in, and the variables they came from.
struct slurm_placement {
  std::vector<std::string> task_hosts;  // task_hosts[r]: the host of the node that runs task r
  std::string source;                   // "SLURM_STEP_NODELIST=vm, SLURM_STEP_TASKS_PER_NODE=8"
};

// Reads the node list (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST, as in a batch script), the
// tasks per node (SLURM_STEP_TASKS_PER_NODE, else SLURM_TASKS_PER_NODE), the distribution
// (SLURM_DISTRIBUTION) and the task count (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS) and places the
// tasks. Throws config_error when a variable is missing or malformed, when the distribution is not
// block (cyclic and plane are taken on one node or where no node runs two tasks: the same
// placement), or when the step does not run exactly n × group_size tasks (one per rank of the
// topology, or group_size consecutive tasks per rank: topology.group_size, docs/python.md "Groups").
[[nodiscard]] slurm_placement slurm_step_placement(const env_lookup& env, int n, int group_size = 1);

}  // namespace qgossip
