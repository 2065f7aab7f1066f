// Checkpoints in a node (node/run/resume.hpp, run_log's continued CSV, train.checkpoint_every):
// how many a node keeps, the round a resumed run continues from, what a fresh start and a resume
// delete, and the CSV cut back to the checkpoint's length. Real runs killed and resumed:
// tests/integration/resume_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/config/config.hpp"
#include "node/config/topology_builder.hpp"
#include "node/log/run_log.hpp"
#include "node/run/resume.hpp"
#include "topology/diameter.hpp"
#include "topology/topology.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using qgossip::testing::scratch;
using qgossip::testing::read_text;

run_config three_nodes(const fs::path& out) {
  run_config c;
  c.name = "r";
  c.output_dir = out.string();
  c.topology.n = 3;
  c.run_id = 42;
  return c;
}

void write_round(const run_config& c, int rank, std::uint64_t round, std::uint64_t run_id = 42) {
  checkpoint ck;
  ck.run_id = run_id;
  ck.rank = static_cast<std::uint32_t>(rank);
  ck.round = round;
  add_csv_bytes(ck, 100 + round);
  REQUIRE(write_checkpoint(checkpoint_dir(c, rank), ck, {.keep = 10}).is_ok());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("checkpoint_keep: 1 + ceil(rounds apart / every), at least 2") {
  CHECK(checkpoint_keep(1, 1) == 2);
  CHECK(checkpoint_keep(4, 1) == 5);  // a ring of 8, every round
  CHECK(checkpoint_keep(4, 5) == 2);
  CHECK(checkpoint_keep(5, 2) == 4);
  CHECK(checkpoint_keep(6, 3) == 3);
  CHECK(checkpoint_keep(0, 3) == 2);  // one node
}

TEST_CASE("graph_diameter: ring, complete, star, torus") {
  auto diameter = [](const std::string& graph, int n, int rows = 0, int cols = 0) {
    topology_config t;
    t.graph = *parse_name<graph_kind>(graph);
    t.n = n;
    t.rows = rows;
    t.cols = cols;
    return graph_diameter(build_topology(t));
  };
  CHECK(diameter("ring", 8) == 4);
  CHECK(diameter("ring", 5) == 2);
  CHECK(diameter("complete", 6) == 1);
  CHECK(diameter("star", 6) == 2);
  CHECK(diameter("torus", 16, 4, 4) == 4);
}

TEST_CASE("common_resume_round: the newest round every rank has a valid checkpoint of") {
  scratch s;
  const run_config c = three_nodes(s.dir);
  for (std::uint64_t r : {5, 10}) write_round(c, 0, r);
  for (std::uint64_t r : {10, 15}) write_round(c, 1, r);
  for (std::uint64_t r : {5, 10}) write_round(c, 2, r);
  std::vector<std::string> notes;
  auto note = [&](const std::string& line) { notes.push_back(line); };
  CHECK(common_resume_round(c, note) == 10);
  CHECK(notes.empty());

  SUBCASE("a damaged or unfinished file does not count, and is noted") {
    fs::resize_file(checkpoint_path(checkpoint_dir(c, 1), 10), 30);
    std::ofstream(checkpoint_dir(c, 2) / "ckpt-15.tmp") << "half";
    CHECK(common_resume_round(c, note) == 0);  // rank 1 has only 15 left: no round everywhere
    REQUIRE(notes.size() == 2);
    CHECK(notes[0].find("ckpt-10.bin") != std::string::npos);
    CHECK(notes[1].find("unfinished write") != std::string::npos);
  }
  SUBCASE("a rank whose directory is not here: give the round") {
    fs::remove_all(checkpoint_dir(c, 2));
    CHECK(error_of([&] { (void)common_resume_round(c, note); }).find("--resume-round") != std::string::npos);
  }
  SUBCASE("a rank with only another run's checkpoints: another config") {
    fs::remove_all(checkpoint_dir(c, 2));
    write_round(c, 2, 10, 43);
    CHECK(error_of([&] { (void)common_resume_round(c, note); }).find("another configuration") != std::string::npos);
  }
  SUBCASE("a rank without any checkpoint yet: from round 0") {
    fs::remove_all(checkpoint_dir(c, 2));
    fs::create_directories(checkpoint_dir(c, 2));
    CHECK(common_resume_round(c, note) == 0);
  }
}

TEST_CASE("discard_checkpoints_after: later rounds and their unfinished writes go; round 0: all") {
  scratch s;
  const run_config c = three_nodes(s.dir);
  for (std::uint64_t r : {5, 10, 15}) write_round(c, 0, r);
  const fs::path dir = checkpoint_dir(c, 0);
  std::ofstream(dir / "ckpt-20.tmp") << "half";
  std::ofstream(dir / "notes.txt") << "kept";
  CHECK(discard_checkpoints_after(dir, 10) == 2);
  CHECK(list_checkpoints(dir, {}).rounds == std::vector<std::uint64_t>{5, 10});
  CHECK(fs::exists(dir / "notes.txt"));
  CHECK(discard_checkpoints_after(dir, 0) == 2);
  CHECK(list_checkpoints(dir, {}).rounds.empty());
  CHECK(fs::exists(dir / "notes.txt"));
  CHECK(discard_checkpoints_after(s.dir / "absent", 0) == 0);
}

TEST_CASE("checkpoint_csv_bytes reads back what add_csv_bytes wrote; a checkpoint without it is an error") {
  checkpoint ck;
  add_csv_bytes(ck, 1234);
  CHECK(checkpoint_csv_bytes(ck, "f") == 1234);
  CHECK(error_of([] { (void)checkpoint_csv_bytes(checkpoint{}, "f.bin"); }).find("f.bin") != std::string::npos);
}

TEST_CASE("run_log continued at a checkpoint's CSV length drops the later rows and appends") {
  scratch s;
  round_record r;
  std::uint64_t at = 0;
  {
    run_log log(s.dir, 0, false);
    r.iteration = 1;
    log.row(r);
    at = log.sync_csv();
    r.iteration = 2;
    log.row(r);  // written after the checkpoint: dropped on resume
  }
  const std::string before = read_text(s.dir / "node-0.csv");
  REQUIRE(before.size() > at);
  {
    run_log log(s.dir, 0, false, at);
    CHECK(log.sync_csv() == at);
    r.iteration = 3;
    log.row(r);
  }
  const std::string after = read_text(s.dir / "node-0.csv");
  CHECK(after.substr(0, at) == before.substr(0, at));
  CHECK(after.substr(at, 2) == "3,");
  CHECK(std::count(after.begin(), after.end(), '\n') == 3);  // header, 1, 3

  CHECK(error_of([&] { run_log log(s.dir, 0, false, after.size() + 1); }).find("not the file the checkpoint") !=
        std::string::npos);
  s.write("node-1.csv", "something else\n1,2\n");
  CHECK(error_of([&] { run_log log(s.dir, 1, false, 5); }).find("does not start with the header") !=
        std::string::npos);
  CHECK(error_of([&] { run_log log(s.dir, 2, false, 5); }).find("cannot continue") != std::string::npos);
}

TEST_CASE("train.checkpoint_every: rounds, in the resolved config; a time or a model with local buffers is refused") {
  scratch s;
  const std::string base = "topology: {graph: ring, n: 4}\nalgorithm: dcd\ndata: {dataset: synthetic}\n";
  const run_config c = load_run_config(s.write("a.yaml", base + "train: {checkpoint_every: 25}\n"));
  CHECK(c.train.checkpoint_every == 25);
  CHECK(c.canonical.find("checkpoint_every: 25") != std::string::npos);
  CHECK(load_run_config(s.write("b.yaml", base)).run_id != c.run_id);
  for (const char* time : {"10min", "30s", "5m"}) {
    CAPTURE(time);
    const std::string e =
        error_of([&] { (void)load_run_config(s.write("t.yaml", base + "train: {checkpoint_every: " + time + "}\n")); });
    CHECK(e.find("is a time; give a number of rounds") != std::string::npos);
    CHECK(e.find("t.yaml:4") != std::string::npos);
  }
  CHECK(error_of([&] { (void)load_run_config(s.write("n.yaml", base + "train: {checkpoint_every: -1}\n")); })
            .find("out of range") != std::string::npos);
  const std::string torch = "topology: {graph: ring, n: 4}\nalgorithm: dcd\ndata: {dataset: cifar10, dir: " +
                            s.dir.string() + "}\nmodel: {kind: resnet20}\ntrain: {checkpoint_every: 10}\n";
  CHECK(error_of([&] { (void)load_run_config(s.write("r.yaml", torch)); }).find("keeps BatchNorm running statistics") !=
        std::string::npos);
}
