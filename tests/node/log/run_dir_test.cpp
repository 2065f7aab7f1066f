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
