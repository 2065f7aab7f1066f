// The node -> launcher protocol: event parsing, and the progress display.
#include "node/launch/progress.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace qgossip;

TEST_CASE("parse_node_event reads the four protocol lines") {
  auto start = parse_node_event(R"({"event":"start","rank":0,"n":8,"rounds":1170,"epochs":5.0})");
  REQUIRE(start);
  CHECK(start->kind == event_kind::start);
  CHECK(start->rank == 0);
  CHECK(start->n == 8);
  CHECK(start->rounds == 1170);
  CHECK(start->epochs == 5.0);

  auto progress = parse_node_event(
      R"({"event":"progress","rank":2,"iteration":120,"rounds":1170,"epoch":0.51,"train_loss":0.63,)"
      R"("test_acc":null,"bytes_sent":12345678,"bytes_recv":12345679,"wall_s":12.3})");
  REQUIRE(progress);
  CHECK(progress->kind == event_kind::progress);
  CHECK(progress->rank == 2);
  CHECK(progress->iteration == 120);
  CHECK(progress->epoch == 0.51);
  CHECK(progress->train_loss == 0.63);
  CHECK_FALSE(progress->test_acc);
  CHECK(progress->bytes_sent == 12345678u);
  CHECK(progress->bytes_recv == 12345679u);
  CHECK(progress->wall_s == 12.3);

  auto done = parse_node_event(
      R"({"event":"done","rank":0,"iteration":1170,"epoch":5.0,"train_loss":0.31,"test_acc":0.86,)"
      R"("bytes_sent":9000000000,"bytes_recv":1,"wall_s":88.1,"future_field":"ignored"})");
  REQUIRE(done);
  CHECK(done->kind == event_kind::done);
  CHECK(done->rounds == 0);  // not given on this line
  CHECK(done->test_acc == 0.86);
  CHECK(done->bytes_sent == 9000000000u);  // beyond 32 bits

  auto error = parse_node_event(
      R"({"event":"error","rank":0,"message":"timeout: no message from rank 3 for iteration 17 within 30000 ms"})");
  REQUIRE(error);
  CHECK(error->kind == event_kind::error);
  CHECK(error->message == "timeout: no message from rank 3 for iteration 17 within 30000 ms");
}

TEST_CASE("parse_node_event rejects lines that are not protocol events, and says why") {
  struct bad_case {
    const char* line;
    const char* why;
  };
  const std::vector<bad_case> cases = {
      {"epoch 3 done", "not JSON"},
      {R"({"event":"start","rank":0)", "not JSON: parse error at line 1"},
      {R"([{"event":"start","rank":0}])", "not JSON: expected a JSON object"},
      {R"({"event":"start","rank":[0]})", "\"rank\" must be an integer"},
      {R"({"rank":0})", "missing \"event\""},
      {R"({"event":7,"rank":0})", "\"event\" must be a string"},
      {R"({"event":"finish","rank":0})", "unknown event \"finish\""},
      {R"({"event":"start"})", "missing \"rank\""},
      {R"({"event":"start","rank":1.5})", "\"rank\" must be an integer"},
      {R"({"event":"start","rank":-1})", "\"rank\" must be an integer"},
      {R"({"event":"start","rank":"0"})", "\"rank\" must be an integer"},
      {R"({"event":"progress","rank":0,"epoch":1})", "missing \"iteration\""},
      {R"({"event":"progress","rank":0,"iteration":1})", "missing \"epoch\""},
      {R"({"event":"progress","rank":0,"iteration":1,"epoch":1,"test_acc":"high"})",
       "\"test_acc\" must be a number or null"},
      {R"({"event":"done","rank":0,"iteration":1,"epoch":1,"bytes_sent":-5})",
       "\"bytes_sent\" must be an integer"},
      {R"({"event":"error","rank":0})", "missing \"message\""},
      {R"({"event":"error","rank":0,"message":null})", "\"message\" must be a string"},
  };
  for (const bad_case& c : cases) {
    CAPTURE(c.line);
    std::string why;
    CHECK_FALSE(parse_node_event(c.line, &why));
    CHECK_MESSAGE(why.find(c.why) != std::string::npos, why);
  }
}

TEST_CASE("progress_board shows min-max across nodes, total bytes and the slowest node's ETA") {
  const std::vector<int> ranks = {0, 1};
  progress_board board(ranks);
  CHECK(board.status_line() == "nodes 0/2");

  node_event s;
  s.kind = event_kind::start;
  s.n = 2;
  s.rounds = 1170;
  s.epochs = 5;
  board.apply(0, s);
  CHECK(board.status_line() == "nodes 1/2  round 0/1170 (0%)  epoch 0.00  sent 0 B");

  node_event p;
  p.kind = event_kind::progress;
  p.iteration = 412;
  p.epoch = 1.76;
  p.train_loss = 0.41;
  p.test_acc = 0.82;
  p.bytes_sent = 100'000'000;
  p.wall_s = 41.2;  // 758 rounds left at 0.1 s/round: 75.8 s
  board.apply(0, p);
  board.apply(1, s);
  p.iteration = 420;
  p.epoch = 1.79;
  p.train_loss = 0.47;
  p.test_acc = 0.84;
  p.bytes_sent = 23'400'000;
  p.wall_s = 40.0;  // 750 rounds left at 0.095 s/round: 71.4 s
  board.apply(1, p);
  CHECK(board.status_line() ==
        "round 412/1170 (35%)  epoch 1.76  loss 0.410\u20130.470  acc 0.820\u20130.840  sent 123.4 MB  ETA "
        "1m16s");

  // An event without accuracy keeps the last one; equal values print once.
  p.test_acc.reset();
  p.train_loss = 0.41;
  board.apply(1, p);
  CHECK(board.node(1).test_acc == 0.84);
  CHECK(board.status_line().find("loss 0.410  acc 0.820\u20130.840") != std::string::npos);

  node_event d = p;
  d.kind = event_kind::done;
  d.iteration = 1170;
  d.epoch = 5;
  d.wall_s = 111.1;
  board.apply(1, d);
  CHECK(board.node(1).done);
  CHECK(board.node(1).rounds == 1170);
  CHECK(board.node(1).epochs == 5);
  // The done node no longer bounds the ETA; node 0 still does.
  CHECK(board.status_line().find("ETA 1m16s") != std::string::npos);

  node_event e;
  e.kind = event_kind::error;
  e.message = "peer 1 vanished";
  board.apply(0, e);
  CHECK(board.node(0).error == "peer 1 vanished");
  CHECK(board.node(0).iteration == 412);  // an error does not erase metrics

  const std::vector<std::string> outcome = {"exit 1", "done"};
  const std::string table = board.summary_table(outcome);
  CHECK(table.rfind(" rank iteration   epoch", 0) == 0);
  CHECK(table.find("    0       412    1.76      0.410   0.820      100.0      41.2  exit 1\n") !=
        std::string::npos);
  CHECK(table.find("    1      1170    5.00      0.410   0.840       23.4     111.1  done\n") !=
        std::string::npos);
}

TEST_CASE("durations and byte counts print compactly") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(45.4) == "45s");
  CHECK(format_duration(72) == "1m12s");
  CHECK(format_duration(3720) == "1h02m");
  CHECK(format_duration(-1) == "?");
  CHECK(format_bytes(950) == "950 B");
  CHECK(format_bytes(1500) == "1.5 kB");
  CHECK(format_bytes(123'400'000) == "123.4 MB");
  CHECK(format_bytes(12'300'000'000ull) == "12.3 GB");
}

TEST_CASE("parse_node_event reads a peer_left event (network.on_peer_failure: continue)") {
  std::string why;
  auto ev = parse_node_event(
      R"({"event":"peer_left","rank":2,"peer":3,"round":120,"reported_by":4,"cause":"its link closed","unix_s":1.5e9})",
      &why);
  REQUIRE_MESSAGE(ev, why);
  CHECK(ev->kind == event_kind::peer_left);
  CHECK(ev->rank == 2);
  CHECK(ev->peer == 3);
  CHECK(ev->iteration == 120);
  CHECK(ev->reported_by == 4);
  CHECK(ev->message == "its link closed");
  CHECK_FALSE(parse_node_event(R"({"event":"peer_left","rank":2,"round":120})", &why));  // no peer
  CHECK(why.find("peer") != std::string::npos);
  // The board keeps per-node metrics only: an event about another node changes none of them.
  const int ranks[] = {2, 3};
  progress_board board(ranks);
  board.apply(0, *ev);
  CHECK(board.node(0).error.empty());
  CHECK(board.node(1).error.empty());
}
