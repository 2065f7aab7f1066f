// `qgossip logs`: run directories written by the real run_log (so reader and writer cannot drift apart),
// then damaged the ways real runs are: a run in progress, a crashed node, a half-written line, a garbled
// summary, columns added or missing; and the warning thresholds on both sides of each edge.
#include "node/log/run_summary.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "node/log/run_log.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using qgossip::testing::scratch;

// What one synthetic node does: `rounds` rounds logged every 10, each round 1000 bytes each way.
struct fake_node {
  int rank = 0;
  std::uint64_t rounds = 100;
  double wall_s = 10;
  double compute_s = 4, codec_s = 1, comm_s = 5;
  double acc = 0.80;
  double loss = 0.5;
  std::string status = "ok";
  std::string error;
  std::string rejoins;  // the summary's account of returns
  std::string hostile;  // the summary's attack (a hostile node)
  bool write_summary = true;
};

void write_node(const fs::path& dir, int rank, const std::function<void(fake_node&)>& tweak = {}) {
  fake_node f;
  f.rank = rank;
  if (tweak) tweak(f);
  run_log log(dir, f.rank, false);
  round_record r;
  for (std::uint64_t t = 10; t <= f.rounds; t += 10) {
    const double share = static_cast<double>(t) / static_cast<double>(f.rounds);
    r.iteration = t;
    r.epoch = share * 2;
    r.wall_s = share * f.wall_s;
    r.lr = 0.1;
    r.train_loss = f.loss + (1 - share);
    r.test_loss.reset();
    r.test_acc.reset();
    if (t % 50 == 0 || t == f.rounds) {
      r.test_loss = f.loss * 1.1;
      r.test_acc = f.acc * share;
    }
    r.bytes_sent = r.bytes_recv = 1000 * t;
    r.round_bytes_sent = r.round_bytes_recv = 1000;
    r.compute_s = share * f.compute_s;
    r.codec_s = share * f.codec_s;
    r.comm_s = share * f.comm_s;
    r.rejected = f.rank == 1 ? 3 : 0;
    log.row(r);
  }
  if (!f.write_summary) return;
  node_summary s;
  s.rank = f.rank;
  s.status = *parse_name<node_status>(f.status);
  s.error = f.error;
  s.host = "testhost";
  s.last = r;
  s.rounds = f.rounds;
  s.mean_round_bytes_sent = 1000;
  s.wall_s = f.wall_s;
  s.copies_kind = "replica";
  s.rejected_detail = f.rank == 1 ? "crc=3" : "";
  s.rejoins = f.rejoins;
  s.hostile = f.hostile;
  log.finish(s);
}

void write_run(const fs::path& dir, int n) {
  run_log log(dir, 0, false);  // re-creates node-0.csv: call before write_node(rank 0)
  log.write_run_json("unit", "name: unit\n", n, "dcd", "qsgd(bits=8)", "mlp", 0x1234, "ring", "", "");
}

run_summary read(const fs::path& dir, const log_thresholds& th = {}) {
  std::string why;
  auto s = read_run_summary(dir, &why, th);
  REQUIRE_MESSAGE(s.has_value(), why);
  return *s;
}

std::vector<std::string> kinds_for(const run_summary& s, int rank) {
  std::vector<std::string> out;
  for (const auto& w : s.warnings)
    if (w.rank == rank) out.push_back(w.kind);
  return out;
}

void append(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

}  // namespace

TEST_CASE("spread_of: min, median (middle two averaged), max") {
  CHECK_FALSE(spread_of({}).has_value());
  auto odd = spread_of({3, 1, 2});
  REQUIRE(odd);
  CHECK(odd->min == 1);
  CHECK(odd->median == 2);
  CHECK(odd->max == 3);
  CHECK(odd->count == 3);
  auto even = spread_of({4, 1, 2, 10});
  REQUIRE(even);
  CHECK(even->median == 3);
  CHECK(even->count == 4);
}

TEST_CASE("logs: a healthy run reads back what the nodes wrote, with no warnings") {
  scratch tmp;
  write_run(tmp.dir, 3);
  for (int r = 0; r < 3; ++r)
    write_node(tmp.dir, r, [&](fake_node& f) {
      f.wall_s = 10 + r;
      f.acc = 0.80 + 0.01 * r;
    });
  run_summary s = read(tmp.dir);
  CHECK(s.name == "unit");
  CHECK(s.algorithm == "dcd");
  CHECK(s.compressor == "qsgd(bits=8)");
  CHECK(s.n == 3);
  REQUIRE(s.nodes.size() == 3);
  for (const auto& n : s.nodes) {
    CHECK(n.status == "ok");
    CHECK(n.source == "summary");
    CHECK(n.has_csv);
    CHECK(n.csv_rows == 10);
    CHECK(n.rounds == 100);
    CHECK(n.bytes_sent == 100000);
    CHECK(n.mean_round_bytes_sent == 1000);
    CHECK(n.compute_s == doctest::Approx(4));
    CHECK(n.comm_s == doctest::Approx(5));
    CHECK(n.host == "testhost");
  }
  CHECK(s.nodes[1].rejected == 3);
  CHECK(s.nodes[1].rejected_detail == "crc=3");
  REQUIRE(s.test_acc);
  CHECK(s.test_acc->min == doctest::Approx(0.80));
  CHECK(s.test_acc->median == doctest::Approx(0.81));
  CHECK(s.test_acc->max == doctest::Approx(0.82));
  REQUIRE(s.wall_s);
  CHECK(s.wall_s->median == 11);
  CHECK(s.warnings.empty());
  CHECK(s.notes.empty());

  const std::string text = format_run_summary(s);
  CHECK(text.find("run unit (") == 0);
  CHECK(text.find("no warnings") != std::string::npos);
  CHECK(text.find("4.0 (40%)") != std::string::npos);  // compute 4 s of 10 s
  CHECK(text.find("rejected messages by reason: crc=3") != std::string::npos);
  const std::string json = run_summary_json(s);
  CHECK(json.find("\"warnings\": []") != std::string::npos);
  CHECK(json.find("\"test_acc\": {") != std::string::npos);
  CHECK(json.find("\"median\": 11.0,") != std::string::npos);  // wall time, exact in binary (a double: 11.0)
}

TEST_CASE("logs: failed, diverged and interrupted nodes are warned about with their error") {
  scratch tmp;
  write_run(tmp.dir, 4);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1, [&](fake_node& f) {
    f.rounds = 40;
    f.status = "failed";
    f.error = "round 41: timeout: no message from rank 2";
  });
  write_node(tmp.dir, 2, [&](fake_node& f) {
    f.status = "diverged";
    f.error = "train loss 2e+04 above 1e4";
  });
  write_node(tmp.dir, 3, [&](fake_node& f) {
    f.status = "interrupted";
    f.error = "round 99: cancelled";
  });
  run_summary s = read(tmp.dir);
  REQUIRE(s.warnings.size() == 3);
  CHECK(s.warnings[0].kind == "status");
  CHECK(s.warnings[0].message == "node 1 failed: round 41: timeout: no message from rank 2");
  CHECK(s.warnings[1].message == "node 2 diverged: train loss 2e+04 above 1e4");
  CHECK(s.warnings[2].message == "node 3 interrupted: round 99: cancelled");
  // Node 1's short run is explained by its failure: no second "rounds" warning for it.
  CHECK(kinds_for(s, 1) == std::vector<std::string>{"status"});
  const std::string text = format_run_summary(s);
  CHECK(text.find("WARNINGS:\n  [status] node 1 failed") != std::string::npos);
}

TEST_CASE("logs: an ok node with fewer rounds than the others lags") {
  scratch tmp;
  write_run(tmp.dir, 3);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1, [&](fake_node& f) { f.rounds = 90; });
  write_node(tmp.dir, 2);
  run_summary s = read(tmp.dir);
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0].rank == 1);
  CHECK(s.warnings[0].kind == "rounds");
  CHECK(s.warnings[0].message == "node 1 completed 90 rounds, another node 100");
}

TEST_CASE("logs: wall time, straggler and accuracy thresholds, on both sides") {
  scratch tmp;
  write_run(tmp.dir, 6);
  // Median wall 10 s, median work 5 s, median accuracy 0.80.
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1);
  write_node(tmp.dir, 2, [&](fake_node& f) { f.acc = 0.76; });     // 0.04 below: under the 0.05 gap
  write_node(tmp.dir, 3, [&](fake_node& f) { f.wall_s = 14.5; });  // 1.45x: under the 1.5x ratio
  write_node(tmp.dir, 4, [&](fake_node& f) {
    f.wall_s = 16;
    f.acc = 0.70;
  });                                                              // 1.6x and +6 s; 0.10 below
  write_node(tmp.dir, 5, [&](fake_node& f) { f.compute_s = 9; });  // work 10 s = 2x median, +5 s
  run_summary s = read(tmp.dir);
  CHECK(kinds_for(s, 0).empty());
  CHECK(kinds_for(s, 1).empty());
  CHECK(kinds_for(s, 2).empty());
  CHECK(kinds_for(s, 3).empty());
  CHECK(kinds_for(s, 4) == std::vector<std::string>{"wall", "accuracy"});
  CHECK(kinds_for(s, 5) == std::vector<std::string>{"straggler"});

  // A short run: the ratios are exceeded but not the absolute margins, so nothing is flagged.
  scratch small;
  write_run(small.dir, 3);
  write_node(small.dir, 0, [&](fake_node& f) {
    f.wall_s = 1;
    f.compute_s = 0.2;
    f.codec_s = 0.1;
    f.comm_s = 0.7;
  });
  write_node(small.dir, 1, [&](fake_node& f) {
    f.wall_s = 1;
    f.compute_s = 0.2;
    f.codec_s = 0.1;
    f.comm_s = 0.7;
  });
  write_node(small.dir, 2, [&](fake_node& f) {
    f.wall_s = 2.5;
    f.compute_s = 1.0;
    f.codec_s = 0.1;
    f.comm_s = 1.4;
  });
  CHECK(read(small.dir).warnings.empty());
  // ... and tightened thresholds do flag it (the thresholds are honoured, not built in).
  log_thresholds strict;
  strict.wall_min_excess_s = 1.0;
  strict.work_min_excess_s = 0.5;
  CHECK(kinds_for(read(small.dir, strict), 2) == std::vector<std::string>{"wall", "straggler"});
}

TEST_CASE("logs: a hostile node is marked and left out of the spread and the warnings") {
  scratch tmp;
  write_run(tmp.dir, 4);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1, [&](fake_node& f) { f.acc = 0.70; });  // the worst honest node
  write_node(tmp.dir, 2);
  write_node(tmp.dir, 3, [&](fake_node& f) {
    f.acc = 0.10;
    f.compute_s = 20;
    f.hostile = "flip";
  });
  const run_summary s = read(tmp.dir);
  CHECK(s.hostile == std::vector<int>{3});
  REQUIRE(s.test_acc);
  CHECK(s.test_acc->count == 3);
  CHECK(s.test_acc->min == doctest::Approx(0.70));  // the worst honest node, not the hostile one
  CHECK(kinds_for(s, 3).empty());                   // neither an accuracy nor a straggler warning
  CHECK(kinds_for(s, 1) == std::vector<std::string>{"accuracy"});
  const std::string text = format_run_summary(s);
  CHECK(text.find("ok hostile") != std::string::npos);
  CHECK(text.find("rank 3 flip") != std::string::npos);
  CHECK(text.find("spread across the honest nodes") != std::string::npos);
  CHECK(run_summary_json(s).find("\"hostile\": [\n    3") != std::string::npos);
}

// Issue 31, item 9: after churn, `logs` called a SIGSTOPped node a straggler ("spent 3.4 s
// computing": its stop counted as its work) and printed one near-identical rejoin line per node,
// each on its own clock.
TEST_CASE("logs: a node that left and rejoined is no straggler, and its return is told once") {
  scratch tmp;
  write_run(tmp.dir, 4);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1, [&](fake_node& f) { f.rejoins = "2 from round 30 (at 6.1 s, admitted by this node)"; });
  write_node(tmp.dir, 2, [&](fake_node& f) {
    f.compute_s = 9;  // 10 s of work against a median of 5: stopped for a while
    f.rejoins = "this node from round 30 (at 3.2 s, from rank 1's model)";
  });
  write_node(tmp.dir, 3, [&](fake_node& f) { f.rejoins = "2 from round 30 (at 6.0 s, admitted by this node)"; });
  run_summary s = read(tmp.dir);
  CHECK(kinds_for(s, 2) == std::vector<std::string>{"rejoins"});
  CHECK(kinds_for(s, 1).empty());
  CHECK(kinds_for(s, 3).empty());
  for (const auto& w : s.warnings)
    if (w.kind == "rejoins") CHECK(w.message == "node 2 rejoined the run from round 30 (at 3.2 s, from rank 1's model)");
  // Without the joiner's own account, one neighbour's stands in.
  scratch other;
  write_run(other.dir, 2);
  write_node(other.dir, 0, [&](fake_node& f) { f.rejoins = "1 from round 30 (at 6.1 s, admitted by this node)"; });
  write_node(other.dir, 1, [&](fake_node& f) { f.write_summary = false; });
  CHECK(kinds_for(read(other.dir), 0) == std::vector<std::string>{"rejoins"});
}

TEST_CASE("logs: nodes that stopped without a summary are reported from their CSVs, with notes") {
  scratch tmp;
  write_run(tmp.dir, 4);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1, [&](fake_node& f) {
    f.rounds = 60;
    f.wall_s = 6;
    f.acc = 0.6;
    f.write_summary = false;
  });
  append(tmp.dir / "node-1.csv", "70,1.4,7.0,0.1,0.8");  // the row it was writing when it died
  write_node(tmp.dir, 2, [&](fake_node& f) {
    f.rounds = 30;
    f.write_summary = false;
  });
  std::ofstream(tmp.dir / "node-2.log")
      << "rank 2: loading data\nrank 2: error: cannot bind tcp://*:29502\n\n";
  // rank 3: nothing at all
  run_summary s = read(tmp.dir);
  REQUIRE(s.nodes.size() == 4);

  const node_report& running = s.nodes[1];
  CHECK(running.status == "no summary");  // node 0's summary says the run is over
  CHECK(running.source == "csv");
  CHECK(running.rounds == 60);  // the half-written row is not counted
  CHECK(running.csv_rows == 6);
  CHECK(running.wall_s == doctest::Approx(6));
  CHECK(running.bytes_sent == 60000);
  CHECK(running.mean_round_bytes_sent == doctest::Approx(1000));
  REQUIRE(running.test_acc);  // the latest evaluation (iteration 60), not the empty last cell
  CHECK(*running.test_acc == doctest::Approx(0.6));
  bool incomplete_noted = false;
  for (const auto& n : running.notes)
    incomplete_noted |= n.find("last line is incomplete") != std::string::npos;
  CHECK(incomplete_noted);

  const node_report& crashed = s.nodes[2];
  CHECK(crashed.status == "no summary");
  CHECK(crashed.error == "last line of node-2.log: rank 2: error: cannot bind tcp://*:29502");
  CHECK(s.nodes[3].status == "no files");
  CHECK(s.nodes[3].source.empty());

  CHECK(kinds_for(s, 1) == std::vector<std::string>{"missing"});
  CHECK(kinds_for(s, 2) == std::vector<std::string>{"missing"});
  CHECK(kinds_for(s, 3) == std::vector<std::string>{"missing"});
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0] == "rank(s) 3: no files at all");
  // The table still prints every node, the one with no data as a dash.
  const std::string text = format_run_summary(s);
  CHECK(text.find("   3 no files          -\n") != std::string::npos);
  CHECK(text.find("cannot bind tcp://*:29502") != std::string::npos);
}

TEST_CASE("logs: columns are found by name; extra columns are read or ignored, absent ones noted") {
  scratch tmp;
  std::ofstream(tmp.dir / "node-0.csv")
      << "epoch,iteration,wall_s,train_loss,test_acc,bytes_sent,future_column,consensus_dist,avg_test_acc\n"
      << "0.5,10,1.5,0.9,,5000,7,0.25,\n"
      << "1.0,20,3.0,0.7,0.85,10000,8,,0.87\n";
  run_summary s = read(tmp.dir);
  REQUIRE(s.nodes.size() == 1);
  const node_report& n = s.nodes[0];
  CHECK(n.source == "csv");
  CHECK(n.rounds == 20);
  CHECK(n.epoch == 1.0);
  CHECK(n.wall_s == 3.0);
  CHECK(n.bytes_sent == 10000);
  CHECK(n.comm_s == 0);
  REQUIRE(n.consensus_dist);
  CHECK(*n.consensus_dist == 0.25);  // the latest non-empty value
  REQUIRE(n.avg_test_acc);
  CHECK(*n.avg_test_acc == 0.87);
  CHECK_FALSE(n.test_loss);
  bool absent_noted = false;
  for (const auto& note : n.notes)
    absent_noted |=
        note == "node-0.csv: no column test_loss, bytes_recv, compute_s, codec_s, comm_s, rejected";
  CHECK(absent_noted);
  CHECK(n.status == "running");  // fresh, and no node has a summary
  REQUIRE(s.notes.size() == 2);
  CHECK(s.notes[0] == "no run.json (rank 0 writes it when it starts)");
  CHECK(s.notes[1].find("run in progress") == 0);
  CHECK(format_run_summary(s).find("average model (probed by node 0): test accuracy 0.8700") !=
        std::string::npos);
}

TEST_CASE("logs: a garbled summary or malformed rows fall back to what is readable") {
  scratch tmp;
  write_run(tmp.dir, 2);
  write_node(tmp.dir, 0);
  write_node(tmp.dir, 1);
  std::ofstream(tmp.dir / "node-1.json") << "{\"rank\": 1, \"status\": ";  // truncated
  append(tmp.dir / "node-0.csv", "110,oops,1,1,1\n");
  run_summary s = read(tmp.dir);
  CHECK(s.nodes[0].status == "ok");  // its summary still counts
  bool malformed_noted = false;
  for (const auto& note : s.nodes[0].notes)
    malformed_noted |=
        note.find("1 malformed row(s) skipped, the first at node-0.csv:12") != std::string::npos;
  CHECK(malformed_noted);
  CHECK(s.nodes[1].status == "no summary");
  CHECK(s.nodes[1].source == "csv");
  CHECK(s.nodes[1].rounds == 100);
  REQUIRE_FALSE(s.nodes[1].notes.empty());
  CHECK(s.nodes[1].notes[0].find("node-1.json is unreadable") == 0);
}

TEST_CASE("logs: a diverged loss (null in the summary) is shown as absent, not as a number") {
  scratch tmp;
  write_run(tmp.dir, 1);
  {
    run_log log(tmp.dir, 0, false);
    round_record r;
    r.iteration = 5;
    r.train_loss = std::numeric_limits<double>::infinity();
    log.row(r);
    node_summary sum;
    sum.status = node_status::diverged;
    sum.error = "round 5: train loss is not finite";
    sum.last = r;
    sum.rounds = 5;
    log.finish(sum);
  }
  run_summary s = read(tmp.dir);
  CHECK_FALSE(s.nodes[0].train_loss);
  CHECK_FALSE(s.train_loss);
  CHECK(kinds_for(s, 0) == std::vector<std::string>{"status"});
}

TEST_CASE("logs: a directory with no run is an error that says so") {
  scratch tmp;
  std::string why;
  CHECK_FALSE(read_run_summary(tmp.dir, &why));
  CHECK(why.find("holds no run") != std::string::npos);
  std::ofstream(tmp.dir / "notes.txt") << "hello\n";
  CHECK_FALSE(read_run_summary(tmp.dir, &why));
  CHECK_FALSE(read_run_summary(tmp.dir / "absent", &why));
  CHECK(why.find("not a directory") != std::string::npos);
  // run.json alone (the launch has only just begun) is a run whose nodes have no files yet.
  write_run(tmp.dir, 2);
  fs::remove(tmp.dir / "node-0.csv");
  auto s = read_run_summary(tmp.dir, &why);
  REQUIRE(s);
  REQUIRE(s->nodes.size() == 2);
  CHECK(s->nodes[0].status == "no files");
}

TEST_CASE(
    "logs: a run in progress (no summary yet, fresh CSVs) is a note, not a warning; a stale one warns") {
  scratch tmp;
  write_run(tmp.dir, 3);
  for (int r = 0; r < 3; ++r) write_node(tmp.dir, r, [&](fake_node& f) { f.write_summary = false; });
  std::ofstream(tmp.dir / "node-1.log") << "rank 1: training\n";
  run_summary s = read(tmp.dir);
  for (const auto& n : s.nodes) {
    CHECK(n.status == "running");
    CHECK(n.source == "csv");
    CHECK(n.error.empty());  // a running node's log line is no error
  }
  CHECK(s.warnings.empty());
  REQUIRE(s.notes.size() == 1);
  CHECK(s.notes[0].find("run in progress: no node has written its summary yet") == 0);

  // The same files an hour later: the nodes stopped (killed with the launcher?) without summaries.
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (int r = 0; r < 3; ++r)
    fs::last_write_time(tmp.dir / ("node-" + std::to_string(r) + ".csv"), an_hour_ago);
  run_summary stale = read(tmp.dir);
  for (const auto& n : stale.nodes) CHECK(n.status == "no summary");
  CHECK(kinds_for(stale, 0) == std::vector<std::string>{"missing"});
  CHECK(stale.nodes[1].error == "last line of node-1.log: rank 1: training");
  REQUIRE_FALSE(stale.nodes[2].notes.empty());
  CHECK(stale.nodes[2].notes.back() ==
        "no node-2.json: the node stopped before writing it (crashed or killed?); figures are from its last "
        "CSV "
        "row, written 1h00m ago");
  // A tighter in-progress window turns a fresh run into a stale one too (the threshold is honoured).
  log_thresholds impatient;
  impatient.in_progress_s = -1;
  CHECK(read(tmp.dir, impatient).nodes[0].status == "no summary");
}

TEST_CASE("logs: the summary's times have the CSV's names; the old time_* names are still read") {
  scratch tmp;
  write_run(tmp.dir, 2);
  write_node(tmp.dir, 0);
  std::ifstream in(tmp.dir / "node-0.json");
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"compute_s\": 4", "\"codec_s\": 1", "\"comm_s\": 5", "\"transfer_s\": 0"})
    CHECK_MESSAGE(written.find(key) != std::string::npos, key);
  CHECK(written.find("time_") == std::string::npos);

  // A summary written before the rename.
  std::ofstream(tmp.dir / "node-1.json") << R"({"rank": 1, "status": "ok", "rounds": 100, "wall_s": 10,
    "time_compute_s": 3.5, "time_codec_s": 0.5, "time_comm_s": 6, "time_transfer_s": 0})";
  const run_summary s = read(tmp.dir);
  CHECK(s.nodes[1].source == "summary");
  CHECK(s.nodes[1].compute_s == 3.5);
  CHECK(s.nodes[1].codec_s == 0.5);
  CHECK(s.nodes[1].comm_s == 6);
}
