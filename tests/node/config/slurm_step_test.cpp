// Slurm's host lists and tasks per node (node/config/slurm_step.hpp): the expansions are those
// `scontrol show hostnames` gives (Slurm 22.05, checked by hand), and the placement of a step's
// tasks read from a step's variables, with every refusal's message.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/config/slurm_step.hpp"
#include "tests/node/config/config_files.hpp"

using namespace qgossip;
using qgossip::testing::env_of;

namespace {

using names = std::vector<std::string>;

// What expanding `list` throws, or "(no error)".
std::string hostlist_error(const std::string& list) {
  try {
    (void)expand_hostlist(list);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string tasks_error(const std::string& counts) {
  try {
    (void)expand_tasks_per_node(counts);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string placement_error(const std::map<std::string, std::string>& vars, int n) {
  try {
    (void)slurm_step_placement(env_of(vars), n);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("host lists expand as scontrol show hostnames does: ranges, zero padding, several groups") {
  CHECK(expand_hostlist("node[01-03,07],gpu-a[1-2],login") ==
        names{"node01", "node02", "node03", "node07", "gpu-a1", "gpu-a2", "login"});
  CHECK(expand_hostlist("vm") == names{"vm"});
  CHECK(expand_hostlist("n[8-10]") == names{"n8", "n9", "n10"});          // no padding from the upper end
  CHECK(expand_hostlist("n[09-11]") == names{"n09", "n10", "n11"});       // the lower end's width kept
  CHECK(expand_hostlist("n[001-5]") == names{"n001", "n002", "n003", "n004", "n005"});
  CHECK(expand_hostlist("n[5,1-2]") == names{"n5", "n1", "n2"});          // the list's order, not sorted
  CHECK(expand_hostlist("a[1-2]b[3-4]") == names{"a1b3", "a1b4", "a2b3", "a2b4"});  // first group slowest
  CHECK(expand_hostlist("rack[0-1]-n[09-10]") == names{"rack0-n09", "rack0-n10", "rack1-n09", "rack1-n10"});
  CHECK(expand_hostlist("x[1-2]-ib") == names{"x1-ib", "x2-ib"});  // a suffix (Slurm itself never writes one)
  CHECK(expand_hostlist("10.0.0.[1-2]") == names{"10.0.0.1", "10.0.0.2"});
}

TEST_CASE("a malformed host list is refused, naming the list and what is wrong") {
  CHECK(hostlist_error("n[3-1]") == "host list 'n[3-1]': the range 3-1 runs down");
  CHECK(hostlist_error("n[]") == "host list 'n[]': '[]' holds '', not a number or a range of numbers (lo-hi)");
  CHECK(hostlist_error("n[1-x]") == "host list 'n[1-x]': '[1-x]' holds '1-x', not a number or a range of numbers (lo-hi)");
  CHECK(hostlist_error("n[1-2-3]") == "host list 'n[1-2-3]': '[1-2-3]' holds '1-2-3', not a number or a range of numbers (lo-hi)");
  CHECK(hostlist_error("n[1-2") == "host list 'n[1-2': a '[' is not closed");
  CHECK(hostlist_error("n]") == "host list 'n]': a ']' closes no '['");
  CHECK(hostlist_error("n[1[2]]") == "host list 'n[1[2]]': brackets do not nest");
  CHECK(hostlist_error("a,,b") == "host list 'a,,b': an empty host name");
  CHECK(hostlist_error("") == "host list '': an empty host name");
  CHECK(hostlist_error("n[0-99999999]") == "host list 'n[0-99999999]': the range 0-99999999 has more than 65536 numbers");
  CHECK(hostlist_error("a[0-999]b[0-999]") == "host list 'a[0-999]b[0-999]': it names more than 65536 hosts");
  CHECK(hostlist_error("n[1-9999999999999999999]").find("not a number") != std::string::npos);  // 19 digits
}

TEST_CASE("tasks per node: counts, repeated counts, and what is not one") {
  CHECK(expand_tasks_per_node("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(expand_tasks_per_node("8") == std::vector<int>{8});
  CHECK(expand_tasks_per_node("1(x4)") == std::vector<int>{1, 1, 1, 1});
  CHECK(expand_tasks_per_node("3,2(x2),4") == std::vector<int>{3, 2, 2, 4});
  CHECK(tasks_error("2(x3") == "tasks per node '2(x3': '2(x3' is not a count (2) or a repeated count (2(x3))");
  for (const char* bad : {"", "0", "-1", "2(x0)", "2(x)", "(x2)", "2x3", "2,,1", "two"}) {
    CAPTURE(bad);
    CHECK(contains(tasks_error(bad), "is not a count (2) or a repeated count (2(x3))"));
  }
  CHECK(tasks_error("1(x70000)") == "tasks per node '1(x70000)': more than 65536 nodes or tasks");
}

TEST_CASE("block distribution: consecutive tasks share a node, nodes in the list's order") {
  CHECK(block_task_hosts({"a", "b", "c"}, {2, 1, 3}) == names{"a", "a", "b", "c", "c", "c"});
  CHECK(block_task_hosts({"vm"}, {8}) == names(8, "vm"));
  try {
    (void)block_task_hosts({"a", "b"}, {1});
    FAIL("no error");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) == "the node list names 2 hosts but the tasks per node count 1");
  }
}

TEST_CASE("a step's placement from its variables, the job's when the step's are not set") {
  const slurm_placement p = slurm_step_placement(
      env_of({{"SLURM_STEP_NODELIST", "node[01-03,07]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
              {"SLURM_STEP_NUM_TASKS", "7"}, {"SLURM_DISTRIBUTION", "block"},
              {"SLURM_JOB_NODELIST", "other[1-9]"}, {"SLURM_NTASKS", "99"}}),
      7);
  CHECK(p.task_hosts == names{"node01", "node01", "node02", "node02", "node03", "node03", "node07"});
  CHECK(p.source == "SLURM_STEP_NODELIST=node[01-03,07], SLURM_STEP_TASKS_PER_NODE=2(x3),1");
  // A batch script: the job's variables; no task count at all: the tasks per node's sum.
  const slurm_placement b =
      slurm_step_placement(env_of({{"SLURM_JOB_NODELIST", "gpu[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}}), 4);
  CHECK(b.task_hosts == names{"gpu1", "gpu1", "gpu2", "gpu2"});
  CHECK(b.source == "SLURM_JOB_NODELIST=gpu[1-2], SLURM_TASKS_PER_NODE=2(x2)");
  // block:cyclic places tasks across sockets within a node; across nodes it is block.
  CHECK(slurm_step_placement(env_of({{"SLURM_STEP_NODELIST", "a,b"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                     {"SLURM_DISTRIBUTION", "block:cyclic"}}),
                             4)
            .task_hosts == names{"a", "a", "b", "b"});
  // cyclic (and plane: srun's SLURM_DISTRIBUTION for plane=N) with one task per node, or on one
  // node, is the same placement.
  CHECK(slurm_step_placement(env_of({{"SLURM_STEP_NODELIST", "n[1-3]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
                                     {"SLURM_DISTRIBUTION", "cyclic"}}),
                             3)
            .task_hosts == names{"n1", "n2", "n3"});
  CHECK(slurm_step_placement(env_of({{"SLURM_STEP_NODELIST", "vm"}, {"SLURM_STEP_TASKS_PER_NODE", "3"},
                                     {"SLURM_DISTRIBUTION", "plane"}}),
                             3)
            .task_hosts == names{"vm", "vm", "vm"});
}

TEST_CASE("the step's refusals: a missing variable, another distribution, another task count") {
  CHECK(placement_error({}, 8) ==
        "{from: slurm} needs SLURM_STEP_NODELIST, which is not set: run under srun (or in a job, which sets "
        "SLURM_JOB_NODELIST)");
  CHECK(placement_error({{"SLURM_STEP_NODELIST", "vm"}}, 8) ==
        "{from: slurm} needs SLURM_STEP_TASKS_PER_NODE, which is not set: run under srun (or in a job, which sets "
        "SLURM_TASKS_PER_NODE)");
  const std::map<std::string, std::string> two{{"SLURM_STEP_NODELIST", "a,b"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};
  auto with = [&](std::string key, std::string value) {
    auto v = two;
    v[key] = value;
    return v;
  };
  CHECK(placement_error(with("SLURM_DISTRIBUTION", "cyclic"), 4) ==
        "{from: slurm} places tasks in blocks (consecutive ranks on one node), but SLURM_DISTRIBUTION=cyclic: run "
        "srun with --distribution=block, or list the hosts under nodes");
  CHECK(contains(placement_error(with("SLURM_DISTRIBUTION", "arbitrary"), 4), "SLURM_DISTRIBUTION=arbitrary"));
  CHECK(contains(placement_error(with("SLURM_DISTRIBUTION", "plane"), 4), "SLURM_DISTRIBUTION=plane:"));
  CHECK(contains(placement_error(with("SLURM_DISTRIBUTION", "cyclic:block"), 4), "SLURM_DISTRIBUTION=cyclic:block:"));
  CHECK(placement_error(with("SLURM_STEP_NUM_TASKS", "4"), 8) ==
        "the step runs 4 tasks (SLURM_STEP_NUM_TASKS=4) but the topology has n = 8 nodes; {from: slurm} needs one "
        "task per rank: srun -n 8");
  CHECK(placement_error(two, 3) ==
        "the step runs 4 tasks (SLURM_STEP_TASKS_PER_NODE=2(x2)) but the topology has n = 3 nodes; {from: slurm} "
        "needs one task per rank: srun -n 3");
  CHECK(placement_error(with("SLURM_STEP_NUM_TASKS", "5"), 4) ==
        "SLURM_STEP_NUM_TASKS=5 but SLURM_STEP_TASKS_PER_NODE=2(x2) places 4 tasks");
  CHECK(placement_error(with("SLURM_STEP_NUM_TASKS", "four"), 4) ==
        "SLURM_STEP_NUM_TASKS='four' is not a number of tasks");
  CHECK(placement_error(with("SLURM_STEP_TASKS_PER_NODE", "4"), 4) ==
        "SLURM_STEP_NODELIST=a,b names 2 hosts but SLURM_STEP_TASKS_PER_NODE=4 counts the tasks of 1");
  CHECK(placement_error(with("SLURM_STEP_NODELIST", "a[2-1]"), 4) == "host list 'a[2-1]': the range 2-1 runs down");
  CHECK(placement_error(two, 4) == "(no error)");
}
