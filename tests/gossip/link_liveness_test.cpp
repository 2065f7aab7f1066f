// link_liveness as a specification: the samples a TCP connection gives when its neighbour answers,
// when our data to it drains slowly, when it stops, and when nothing was asked of it. Pure
// bookkeeping on a simulated clock: nothing here can flake.
#include "gossip/zmq/link_liveness.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace qgossip;
using namespace std::chrono_literals;

namespace {

using clock = link_liveness::clock;

// A connection as the kernel reports it, advanced by hand; PINGs are 16 bytes, PONGs 16 bytes.
struct connection {
  tcp_progress p;
  connection() { p.rto = 200ms; }
  void ping() { p.bytes_sent += 16; p.outstanding += 16; }
  void pong() { p.bytes_received += 16; }
  void acked(std::uint64_t b) { p.bytes_acked += b; p.outstanding -= b; }
  // Data of ours: queued at once, transmitted and acknowledged later (acked()).
  void queue(std::uint64_t b) { p.outstanding += b; }
  void transmit(std::uint64_t b) { p.bytes_sent += b; }
};

}  // namespace

TEST_CASE("link_liveness: a neighbour that answers every PING is never lost") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  for (int i = 1; i <= 400; ++i) {  // 100 s, a PING every 250 ms answered 50 ms later
    c.ping();
    CHECK_FALSE(l.judge(t0 + i * 250ms, c.p));
    c.pong();
    c.acked(16);
    CHECK_FALSE(l.judge(t0 + i * 250ms + 50ms, c.p));
  }
}

TEST_CASE("link_liveness: a neighbour that stops answering is lost timeout + RTO after the first unanswered PING") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.ping();
  c.pong();
  c.acked(16);
  CHECK_FALSE(l.judge(t0 + 100ms, c.p));  // answered at 100 ms
  // It stops: its kernel still acknowledges our PINGs, but nothing comes back.
  c.ping();
  c.acked(16);
  CHECK_FALSE(l.judge(t0 + 300ms, c.p));  // asked at 300 ms
  for (auto t = 400ms; t < 1500ms; t += 100ms) {
    c.ping();
    c.acked(16);  // heartbeats alone never count as draining
    CHECK_FALSE(l.judge(t0 + t, c.p));
  }
  CHECK(l.limit() == 1200ms);
  CHECK(l.judge(t0 + 1500ms, c.p));  // 300 + 1000 + 200
}

TEST_CASE("link_liveness: data draining at a slow link's rate keeps a neighbour alive whose PONGs wait behind it") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  // 1 MB queued at 1 Mbit/s (125 kB/s): 8 s of data, our PINGs behind it, no PONG meanwhile.
  c.queue(1'000'000);
  auto t = t0;
  for (int i = 0; i < 80; ++i) {
    t += 100ms;
    c.transmit(12'500);
    c.acked(12'500);
    CHECK_FALSE(l.judge(t, c.p));
  }
  // The PING behind the data gets through; the PONG returns 400 ms later (a shaper's queue).
  c.ping();
  CHECK_FALSE(l.judge(t + 100ms, c.p));
  c.acked(16);
  c.pong();
  CHECK_FALSE(l.judge(t + 400ms, c.p));
}

TEST_CASE("link_liveness: a neighbour whose window stays shut (its process stopped, its buffer full) is lost") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.queue(500'000);
  c.transmit(100'000);
  c.acked(100'000);
  CHECK_FALSE(l.judge(t0 + 100ms, c.p));  // draining at 100 ms
  for (auto t = 200ms; t < 1300ms; t += 100ms) CHECK_FALSE(l.judge(t0 + t, c.p));  // no more progress
  CHECK(l.judge(t0 + 1300ms, c.p));
}

TEST_CASE("link_liveness: nothing transmitted since the last answer (our own I/O thread starved) is no loss") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  CHECK_FALSE(l.judge(t0 + 10s, c.p));
  c.ping();
  CHECK_FALSE(l.judge(t0 + 11s, c.p));   // asked at 11 s
  CHECK_FALSE(l.judge(t0 + 12100ms, c.p));
  CHECK(l.judge(t0 + 12200ms, c.p));
}

TEST_CASE("link_liveness: the retransmission timeout lengthens the limit, up to a second timeout") {
  link_liveness l(1000ms);
  connection c;
  c.p.rto = 700ms;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.ping();
  CHECK_FALSE(l.judge(t0, c.p));
  CHECK(l.limit() == 1700ms);
  CHECK_FALSE(l.judge(t0 + 1600ms, c.p));
  c.p.rto = 6400ms;  // backed off five times: capped
  CHECK_FALSE(l.judge(t0 + 1900ms, c.p));
  CHECK(l.judge(t0 + 2000ms, c.p));
}

TEST_CASE("link_liveness: counters that go back belong to a new connection: the watch starts over") {
  link_liveness l(1000ms);
  connection c;
  const auto t0 = clock::now();
  c.p.bytes_received = 5000;
  c.p.bytes_sent = 5000;
  l.start(t0, c.p);
  c.ping();
  CHECK_FALSE(l.judge(t0 + 100ms, c.p));
  connection fresh;
  CHECK_FALSE(l.judge(t0 + 1500ms, fresh.p));  // would have been lost on the old counters
  fresh.ping();
  CHECK_FALSE(l.judge(t0 + 1600ms, fresh.p));
  CHECK(l.judge(t0 + 2800ms, fresh.p));
}
