#include <cstdio>
#include <string>
#include <vector>

#include "node/cli/commands.hpp"
#include "node/log/replica_check.hpp"
#include "node/log/run_dir.hpp"

namespace qgossip {

namespace {

// "2, 5": ranks for a message.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

// Prints the outcome of check_replicas; returns 0 when every copy matches (or none is held).
int print_replica_check(const std::string& run_dir) {
  const run_dir_contents d = read_run_dir(run_dir);
  if (!d.is_directory || (!d.has_run_json && d.nodes.empty())) {  // bad input, not a failed check
    std::fprintf(stderr, "verify: %s: %s; expected a run folder (runs/<name>/: run.json, node-<rank>.json)\n",
                 run_dir.c_str(), !d.is_directory ? (d.list_error.empty() ? "not a directory" : d.list_error.c_str())
                                                  : "holds no run");
    return 2;
  }
  if (!d.strays.empty())
    std::fprintf(stderr, "verify: ignored node files of rank %s: run.json's run has %d nodes (an earlier run's?)\n",
                 rank_list(d.strays).c_str(), d.n);
  const replica_check_result r = check_replicas(d);
  for (const auto& p : r.problems) std::fprintf(stderr, "verify: %s\n", p.c_str());
  if (!r.finished()) {
    for (const auto& u : r.unfinished) std::fprintf(stderr, "verify: %s\n", u.c_str());
    std::fprintf(stderr,
                 "verify: %s: the run did not finish, so its copies were not compared (they differ mid-run); "
                 "verify a run whose every node ended with status ok (or halted, at one round)\n",
                 run_dir.c_str());
    return 2;
  }
  if (!r.departed.empty())
    std::printf("verify: ranks that left the run, not compared: %s (the survivors hold no copies of them)\n",
                rank_list(r.departed).c_str());
  if (!r.hostile.empty())
    std::printf(
        "verify: hostile ranks (a scenario's attack), whose copies are forged on purpose, not compared: %s\n",
        rank_list(r.hostile).c_str());
  for (const auto& m : r.mismatches) std::fprintf(stderr, "verify: MISMATCH %s\n", m.c_str());
  if (r.group_members_checked > 0)  // nodes of several processes (the Python module's group=)
    std::printf("verify: %d members of the nodes' process groups compared with their node's model\n",
                r.group_members_checked);
  if (r.copies_kind.empty() && r.problems.empty()) {
    std::printf("verify: %d nodes; this algorithm holds no copies of its neighbours\n", r.nodes);
    return r.mismatches.empty() ? 0 : 1;
  }
  if (r.copies_kind == "same_model") {
    std::printf("verify: %d nodes of a centralized run, %d model hashes compared with node 0's: %s\n", r.nodes,
                r.edges_checked, r.ok() ? "all equal (64-bit hashes)" : "FAILED");
    return r.ok() ? 0 : 1;
  }
  std::printf("verify: %d nodes, %d %s copies checked against their owners: %s\n", r.nodes, r.edges_checked,
              r.copies_kind.c_str(), r.ok() ? "all equal (64-bit hashes)" : "FAILED");
  return r.ok() ? 0 : 1;
}

void add_verify_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("verify", "Check that every replica/estimate in a finished run equals its owner's");
  cmd->footer(
      "Reads runs/<name>/node-<rank>.json. DCD-PSGD: node i's replica of j must hash-equal j's model.\n"
      "ECD-PSGD: node i's estimate of j must hash-equal j's own estimate. CHOCO-SGD: node i's public copy\n"
      "of j must hash-equal j's own public copy (per edge with asynchronous gossip). Exit 0 when all match, 1 when\n"
      "some do not, 2 when the run did not finish (a node with no summary, a status other than ok, or\n"
      "fewer rounds than the others): then nothing is compared and the unfinished nodes are named; also 2\n"
      "when RUN_DIR is no run folder. A run halted by SIGUSR1 (status halted: every node stopped after the\n"
      "same agreed round) is compared at that round.");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("RUN_DIR", *dir, "Run directory (runs/<name>)")->required();
  cmd->callback([dir, exit_code] { *exit_code = print_replica_check(*dir); });
}

}  // namespace qgossip
