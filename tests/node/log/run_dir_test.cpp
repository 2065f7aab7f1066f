// read_run_dir: one listing and one parse of a run directory, for `qgossip logs` and `qgossip verify`
// alike; what is there, what is not, and why a file could not be read.
#include "node/log/run_dir.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "node/log/run_log.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;
using qgossip::testing::scratch;

TEST_CASE("read_run_dir: run.json and the node summaries parsed, the other node files noted") {
  scratch tmp;
  {
    run_log log(tmp.dir, 0, false);
    log.write_run_json("unit", "name: unit\n", 3, "dcd", "identity", "mlp", 7, "", "none", "");
    node_summary s;
    s.rounds = 12;
    log.finish(s);
  }
  std::ofstream(tmp.dir / "node-1.csv") << "iteration\n";
  std::ofstream(tmp.dir / "node-1.log") << "rank 1\n";
  std::ofstream(tmp.dir / "node-2.json") << "{\"rank\": 2, \"status\": ";  // cut short
  for (const char* other : {"node-03.csv", "node-x.json", "node-1.json.tmp", "notes.txt", "node-1234567.csv"})
    std::ofstream(tmp.dir / other) << "{}";

  const run_dir_contents d = read_run_dir(tmp.dir);
  CHECK(d.is_directory);
  CHECK(d.list_error.empty());
  REQUIRE(d.run_json);
  CHECK(d.n == 3);
  CHECK(*json_string(*d.run_json, "name") == "unit");
  REQUIRE(d.nodes.size() == 3);  // the other names are not node files

  const node_files& n0 = d.nodes.at(0);
  CHECK((n0.has_json && n0.has_csv && !n0.has_log));
  REQUIRE(n0.summary);
  CHECK(json_number(*n0.summary, "rounds") == 12);

  const node_files& n1 = d.nodes.at(1);
  CHECK((!n1.has_json && n1.has_csv && n1.has_log));
  CHECK_FALSE(n1.summary);
  CHECK(n1.summary_error.empty());

  const node_files& n2 = d.nodes.at(2);
  CHECK(n2.has_json);
  CHECK_FALSE(n2.summary);
  CHECK(n2.summary_error.find("unexpected end of input") != std::string::npos);
  CHECK(d.file(2, ".json") == tmp.dir / "node-2.json");
}

TEST_CASE("read_run_dir: an unreadable run.json, a path that is no directory, an empty one") {
  scratch tmp;
  std::ofstream(tmp.dir / "run.json") << "[1, 2]";
  const run_dir_contents d = read_run_dir(tmp.dir);
  CHECK(d.has_run_json);
  CHECK_FALSE(d.run_json);
  CHECK(d.run_json_error == "expected a JSON object, got JSON array");
  CHECK(d.n == 0);

  const run_dir_contents absent = read_run_dir(tmp.dir / "absent");
  CHECK_FALSE(absent.is_directory);
  CHECK(absent.list_error == "No such file or directory");
  CHECK(absent.nodes.empty());

  const run_dir_contents file = read_run_dir(tmp.dir / "run.json");
  CHECK_FALSE(file.is_directory);
  CHECK(file.list_error == "Not a directory");

  fs::create_directory(tmp.dir / "empty");
  const run_dir_contents empty = read_run_dir(tmp.dir / "empty");
  CHECK(empty.is_directory);
  CHECK(empty.list_error.empty());
  CHECK_FALSE(empty.has_run_json);
  CHECK(empty.nodes.empty());
}

// Issue 31, item 2: after a 3-node run, a 2-node run of the same name found node-2.* still there:
// `launch` exited 1 ("node 2 did not reach the last round") and `logs` printed 3 rows for 2 nodes.
TEST_CASE("read_run_dir: node files of ranks run.json does not have are strays, not read") {
  scratch tmp;
  run_log(tmp.dir, 0, false).write_run_json("two", "name: two\n", 2, "dcd", "identity", "mlp", 7, "", "none", "");
  for (const char* f : {"node-0.json", "node-1.json", "node-2.json", "node-2.csv", "node-5.log"})
    std::ofstream(tmp.dir / f) << "{\"rank\": 0}";
  const run_dir_contents d = read_run_dir(tmp.dir);
  CHECK(d.n == 2);
  CHECK(d.nodes.size() == 2);
  CHECK(d.strays == std::vector<int>{2, 5});
}

TEST_CASE("set_aside_earlier_run: another run id's files move to <dir>.earlier-<k>; the same run id stays") {
  scratch tmp;
  const fs::path dir = tmp.dir / "demo";
  fs::create_directories(dir / "keys");
  fs::create_directories(dir / "checkpoints" / "node-0");
  std::ofstream(dir / "keys" / "node-0.pub") << "key";
  run_log(dir, 0, false).write_run_json("demo", "name: demo\n", 3, "dcd", "identity", "mlp", 7, "", "none", "");
  for (const char* f : {"node-0.csv", "node-2.json", "node-2.log", "convergence.png", "notes.txt"})
    std::ofstream(dir / f) << "x";

  CHECK_FALSE(set_aside_earlier_run(dir, "0x0000000000000007"));  // a rerun of the same config
  CHECK(fs::exists(dir / "node-2.json"));

  const auto moved = set_aside_earlier_run(dir, "0x0000000000000008");
  REQUIRE(moved);
  CHECK(*moved == tmp.dir / "demo.earlier-1");
  for (const char* f : {"run.json", "node-0.csv", "node-2.json", "node-2.log", "convergence.png", "checkpoints"}) {
    CAPTURE(f);
    CHECK(fs::exists(*moved / f));
    CHECK_FALSE(fs::exists(dir / f));
  }
  CHECK(fs::exists(dir / "keys" / "node-0.pub"));  // the keys stay: the next run uses them
  CHECK(fs::exists(dir / "notes.txt"));            // not a run's file
  CHECK_FALSE(set_aside_earlier_run(dir, "0x0000000000000008"));  // nothing left to move

  // Node files without run.json (a run that failed before writing it) are another run's too.
  std::ofstream(dir / "node-1.csv") << "x";
  CHECK(set_aside_earlier_run(dir, "0x0000000000000008") == tmp.dir / "demo.earlier-2");
  CHECK_FALSE(set_aside_earlier_run(tmp.dir / "absent", "0x1"));
}
