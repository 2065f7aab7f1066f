// `qgossip verify` on a run that did not finish: its copies differ mid-run for no fault, so the check
// names the nodes that did not finish (no summary, a status other than ok, fewer rounds) instead of
// reporting hash mismatches. Summaries are written by the real run_log.
#include "node/log/replica_check.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "node/log/run_log.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using qgossip::testing::scratch;

// A DCD ring of n: node r holds replicas of r-1 and r+1; `model` gives each node's model hash and
// `held` the hash of the replica node r holds of owner.
void write_node(const fs::path& dir, int n, int r, const std::string& status, std::uint64_t rounds,
                std::uint64_t model, std::uint64_t held, const std::string& hostile = "",
                std::vector<std::uint64_t> group = {}) {
  run_log log(dir, r, false);
  if (r == 0) log.write_run_json("ring", "name: ring\n", n, "dcd", "qsgd", "mlp", 1, "", "none", "");
  node_summary s;
  s.rank = r;
  s.status = *parse_name<node_status>(status);
  s.error = status == "ok" ? "" : "interrupted by a signal at round " + std::to_string(rounds);
  s.rounds = rounds;
  s.model_hash = model;
  s.copies_kind = "replica";
  s.copies = {{(r + n - 1) % n, held}, {(r + 1) % n, held}};
  s.hostile = hostile;
  s.group_hashes = std::move(group);
  log.finish(s);
}

bool has(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("a finished run with equal copies passes") {
  scratch s;
  for (int r = 0; r < 3; ++r) write_node(s.dir, 3, r, "ok", 100, 7, 7);
  const replica_check_result res = check_replicas(s.dir);
  CHECK(res.finished());
  CHECK(res.ok());
  CHECK(res.edges_checked == 6);
}

TEST_CASE("a node of a group of processes: every member's model is the node's") {
  scratch s;
  write_node(s.dir, 3, 0, "ok", 100, 7, 7, "", {7, 7});
  write_node(s.dir, 3, 1, "ok", 100, 7, 7, "", {7, 7, 7});
  write_node(s.dir, 3, 2, "ok", 100, 7, 7);  // one process: nothing more to compare
  replica_check_result res = check_replicas(s.dir);
  CHECK(res.ok());
  CHECK(res.group_members_checked == 5);
  write_node(s.dir, 3, 1, "ok", 100, 7, 7, "", {7, 8, 7});  // member 1 holds another model
  res = check_replicas(s.dir);
  CHECK_FALSE(res.ok());
  CHECK(has(res.mismatches, "node 1's group member 1 holds 0x0000000000000008 but the node's model is 0x0000000000000007"));
}

TEST_CASE("a hostile node's copies are forged on purpose: not compared; what it holds of others is") {
  scratch s;
  // Node 1 is hostile: its model (9) is not what nodes 0 and 2 hold of it (7), which is no fault.
  write_node(s.dir, 3, 0, "ok", 100, 7, 7);
  write_node(s.dir, 3, 1, "ok", 100, 9, 7, "flip");
  write_node(s.dir, 3, 2, "ok", 100, 7, 7);
  replica_check_result res = check_replicas(s.dir);
  CHECK(res.ok());
  CHECK(res.hostile == std::vector<int>{1});
  CHECK(res.edges_checked == 4);  // 0 and 2 of each other, and 1 of both
  // Without the mark the same copies are a mismatch.
  write_node(s.dir, 3, 1, "ok", 100, 9, 7);
  res = check_replicas(s.dir);
  CHECK_FALSE(res.ok());
  CHECK(has(res.mismatches, "replica of 1"));
}

TEST_CASE("an unfinished run names its unfinished nodes and compares nothing") {
  scratch s;
  // Node 0 finished, node 1 was interrupted at round 40 (its model and replicas differ), node 2 left
  // no summary.
  write_node(s.dir, 3, 0, "ok", 100, 7, 7);
  write_node(s.dir, 3, 1, "interrupted", 40, 9, 3);
  const replica_check_result res = check_replicas(s.dir);
  INFO(res.unfinished.size());
  CHECK(!res.finished());
  CHECK(!res.ok());
  CHECK(res.mismatches.empty());
  CHECK(res.edges_checked == 0);
  CHECK(has(res.unfinished, "node 2 has no summary (node-2.json)"));
  CHECK(
      has(res.unfinished,
          "node 1 did not finish: status interrupted after 40 rounds (interrupted by a signal at round 40)"));
  CHECK(!has(res.unfinished, "node 0"));
}

TEST_CASE("a node with status ok but fewer rounds than the others did not reach the last round") {
  scratch s;
  write_node(s.dir, 3, 0, "ok", 100, 7, 7);
  write_node(s.dir, 3, 1, "ok", 60, 7, 7);
  write_node(s.dir, 3, 2, "ok", 100, 7, 7);
  const replica_check_result res = check_replicas(s.dir);
  CHECK(!res.finished());
  CHECK(has(res.unfinished, "node 1 did not reach the last round: 60 rounds of 100"));
  CHECK(res.mismatches.empty());
}

TEST_CASE("a run halted at one agreed round (SIGUSR1) is compared there; one halted early is not") {
  scratch s;
  for (int r = 0; r < 3; ++r) write_node(s.dir, 3, r, "halted", 80, 7, 7);
  const replica_check_result res = check_replicas(s.dir);
  CHECK(res.finished());
  CHECK(res.ok());
  CHECK(res.edges_checked == 6);

  scratch t;  // a halted node behind the others, and a mismatch the halt does not excuse
  write_node(t.dir, 3, 0, "halted", 80, 7, 7);
  write_node(t.dir, 3, 1, "halted", 79, 7, 7);
  write_node(t.dir, 3, 2, "halted", 80, 7, 7);
  CHECK(has(check_replicas(t.dir).unfinished, "node 1 did not reach the last round: 79 rounds of 80"));
  write_node(t.dir, 3, 1, "halted", 80, 7, 8);
  const replica_check_result bad = check_replicas(t.dir);
  CHECK(bad.finished());
  CHECK(!bad.ok());
}

TEST_CASE("an unreadable summary is a problem that names the file and what is wrong with it") {
  scratch s;
  for (int r = 0; r < 3; ++r) write_node(s.dir, 3, r, "ok", 100, 7, 7);
  std::ofstream(s.dir / "node-1.json") << "{\"rank\": 1, \"status\": ";  // cut short
  const replica_check_result res = check_replicas(s.dir);
  CHECK(!res.ok());
  CHECK(has(res.problems, (s.dir / "node-1.json").string() + ": parse error at line 1"));
  CHECK(has(res.unfinished, "node 1 has no summary (node-1.json)"));

  const replica_check_result none = check_replicas(s.dir / "absent");
  CHECK(has(none.problems, "cannot read " + (s.dir / "absent").string() + ": No such file or directory"));
  CHECK(has(none.problems, "no node-<rank>.json summaries in " + (s.dir / "absent").string()));
}

// CHOCO-SGD with a public copy per edge: node r keeps copy_r_at_j for each neighbour j, and j's
// copy_r is compared with it (not with a single copy_r, which such a node does not write).
TEST_CASE("a public copy per edge is compared with the holder's copy of it") {
  for (const bool corrupt : {false, true}) {
    scratch s;
    const int n = 3;
    for (int r = 0; r < n; ++r) {
      run_log log(s.dir, r, false);
      if (r == 0) log.write_run_json("ring", "name: ring\n", n, "choco", "qsgd", "mlp", 1, "", "none", "");
      node_summary sum;
      sum.rank = r;
      sum.rounds = 100;
      sum.copies_kind = "public_copy";
      // r's copy for edge (r, j) hashes to 10 r + j; j holds the same, except node 2's copy of 1 when
      // corrupt.
      for (int j = 0; j < n; ++j)
        if (j != r) sum.copies.push_back({r, static_cast<std::uint64_t>(10 * r + j), j});
      for (int j = 0; j < n; ++j)
        if (j != r)
          sum.copies.push_back({j, static_cast<std::uint64_t>(10 * j + r + (corrupt && r == 2 && j == 1))});
      log.finish(sum);
    }
    const replica_check_result res = check_replicas(s.dir);
    CHECK(res.finished());
    CHECK(res.edges_checked == 6);
    CHECK(res.ok() == !corrupt);
    if (corrupt) {
      REQUIRE(res.mismatches.size() == 1);
      CHECK(has(res.mismatches, "node 2's public_copy of 1"));
    }
  }
}
