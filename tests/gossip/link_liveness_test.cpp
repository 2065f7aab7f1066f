// link_liveness as a specification: the samples a TCP connection gives when its neighbour answers,
// when our data to it drains slowly, when it stops, and when nothing was asked of it. Pure
// bookkeeping on a simulated clock: nothing here can flake.
#include "gossip/zmq/link_liveness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
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
  void queue(std::uint64_t b) { p.outstanding += b; p.unsent += b; }
  void transmit(std::uint64_t b) { p.bytes_sent += b; p.unsent -= std::min(b, p.unsent); }
};

}  // namespace

TEST_CASE("link_liveness: a neighbour that answers every PING is never lost") {
  link_liveness l(1000ms, 30000ms);
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
  link_liveness l(1000ms, 30000ms);
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
  link_liveness l(1000ms, 30000ms);
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

TEST_CASE("link_liveness: data acknowledged ahead of the PING behind it is not the PING reaching its host") {
  // All-gather on a slow uplink (tests/integration/slow_links.sh, 7 connections through one tbf):
  // our message and the PING behind it have all left our socket, but the neighbour's host
  // acknowledges a segment only every few seconds (2.5 s measured at 0.5 Mbit/s; here 3 s, longer
  // than limit() = 2.8 s). Its PONG can come only after the last segment, with the PING.
  link_liveness l(1000ms, 30000ms);
  connection c;
  c.p.rto = 1800ms;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  constexpr std::uint64_t kBytes = 54'000 + 16;  // a message, and a PING behind it
  c.queue(kBytes);
  c.transmit(1448);
  CHECK_FALSE(l.judge(t0 + 100ms, c.p));  // asked
  c.acked(1448);
  c.transmit(kBytes - 1448);  // everything left our socket; it waits in our shaper's queue
  auto t = t0 + 200ms;
  CHECK_FALSE(l.judge(t, c.p));
  for (std::uint64_t left = kBytes - 1448; left > 0;) {
    for (int i = 0; i < 29; ++i) CHECK_FALSE(l.judge(t += 100ms, c.p));
    const std::uint64_t segment = std::min<std::uint64_t>(1448, left);
    c.acked(segment);
    left -= segment;
    CHECK_FALSE(l.judge(t += 100ms, c.p));
  }
  // The PING is delivered with the last segment: its PONG is owed from now, limit() at most.
  CHECK(l.limit() == 2800ms);
  CHECK_FALSE(l.judge(t + 2700ms, c.p));
  CHECK(l.judge(t + 2800ms, c.p));
}

TEST_CASE("link_liveness: a neighbour whose window stays shut (its process stopped, its buffer full) is lost") {
  link_liveness l(1000ms, 30000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.queue(500'000);
  c.transmit(100'000);
  c.acked(100'000);
  c.p.window = 0;  // its receive buffer is full: the rest stays unsent
  CHECK_FALSE(l.judge(t0 + 100ms, c.p));  // asked, and reached, at 100 ms
  for (auto t = 200ms; t < 1300ms; t += 100ms) CHECK_FALSE(l.judge(t0 + t, c.p));  // no more progress
  CHECK(l.judge(t0 + 1300ms, c.p));
}

TEST_CASE("link_liveness: data that our own shaper keeps refusing is not the neighbour's fault") {
  // Transmissions dropped by our own full queue count in bytes_sent but leave everything unsent; the
  // neighbour, whose window is open, has nothing to answer yet.
  link_liveness l(1000ms, 8000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.queue(50'000);
  for (auto t = 100ms; t < 8000ms; t += 100ms) {
    c.p.bytes_sent += 1448;  // tried, dropped locally
    CHECK_FALSE(l.judge(t0 + t, c.p));
  }
  c.transmit(1448);  // one segment leaves at 8 s: asked; lost only at the recovery cap without progress
  CHECK_FALSE(l.judge(t0 + 8000ms, c.p));
  CHECK_FALSE(l.judge(t0 + 15900ms, c.p));
  CHECK(l.judge(t0 + 16000ms, c.p));
}

TEST_CASE("link_liveness: nothing transmitted since the last answer (our own I/O thread starved) is no loss") {
  link_liveness l(1000ms, 30000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  CHECK_FALSE(l.judge(t0 + 10s, c.p));
  c.ping();
  c.acked(16);
  CHECK_FALSE(l.judge(t0 + 11s, c.p));   // asked at 11 s, and the PING reached the neighbour's host
  CHECK_FALSE(l.judge(t0 + 12100ms, c.p));
  CHECK(l.judge(t0 + 12200ms, c.p));
}

TEST_CASE("link_liveness: the retransmission timeout lengthens the limit, up to the recovery cap") {
  link_liveness l(1000ms, 5000ms);
  connection c;
  c.p.rto = 700ms;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.ping();
  c.acked(16);
  CHECK_FALSE(l.judge(t0, c.p));
  CHECK(l.limit() == 1700ms);
  CHECK_FALSE(l.judge(t0 + 1600ms, c.p));
  c.p.rto = 1800ms;  // a congested path: one retransmission of the PONG takes longer
  CHECK_FALSE(l.judge(t0 + 2700ms, c.p));
  CHECK(l.judge(t0 + 2800ms, c.p));
  link_liveness capped(1000ms, 5000ms);
  capped.start(t0, c.p);
  c.ping();
  c.acked(16);
  c.p.rto = 120s;  // TCP's largest
  CHECK_FALSE(capped.judge(t0, c.p));
  CHECK(capped.limit() == 6000ms);
}

TEST_CASE("link_liveness: segments selectively acknowledged past a lost one are draining") {
  // A shaper dropped one of our segments: the cumulative acknowledgement waits for its retransmission
  // while the neighbour's host keeps receiving (SACKing) the segments behind it.
  link_liveness l(1000ms, 8000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.queue(200'000);
  c.transmit(20'000);
  for (int i = 1; i <= 40; ++i) {  // 4 s, bytes_acked stuck
    c.p.delivered += 2;
    CHECK_FALSE(l.judge(t0 + i * 100ms, c.p));
  }
  // Then nothing at all: what we transmitted never reached the neighbour's host, so the path is what
  // is stuck: lost only at the recovery cap after the last draining.
  CHECK_FALSE(l.judge(t0 + 4000ms + 7900ms, c.p));
  CHECK(l.judge(t0 + 4000ms + 8000ms, c.p));
}

TEST_CASE("link_liveness: a PING that has not reached the neighbour's host owes no PONG") {
  // Our shaper's queue, full of our other connections' data, drops our PING and its retransmissions
  // for 3 s (measured: all-gather, 7 connections through one 1 Mbit/s tbf); then it gets through.
  link_liveness l(1000ms, 8000ms);
  connection c;
  c.p.rto = 500ms;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  c.ping();
  for (auto t = 100ms; t <= 3000ms; t += 100ms) {
    if (t.count() % 500 == 0) c.p.bytes_sent += 16;  // retransmitted, dropped again
    CHECK_FALSE(l.judge(t0 + t, c.p));
  }
  c.acked(16);  // reached at 3.1 s; the PONG owes us limit() from there
  CHECK_FALSE(l.judge(t0 + 3100ms, c.p));
  CHECK_FALSE(l.judge(t0 + 4500ms, c.p));
  c.pong();
  CHECK_FALSE(l.judge(t0 + 4600ms, c.p));
  // A host that vanished: our PING is never acknowledged; found at the recovery cap after the ask.
  c.ping();
  for (auto t = 4700ms; t < 12700ms; t += 100ms) {
    if (t.count() % 1000 == 0) c.p.bytes_sent += 16;
    CHECK_FALSE(l.judge(t0 + t, c.p));
  }
  CHECK(l.judge(t0 + 12700ms, c.p));  // asked at 4.7 s + 8 s
}

TEST_CASE("link_liveness: a neighbour whose messages keep arriving is alive though its PONGs wait") {
  // Its uplink is slow and full of its own data: our PING is acknowledged, its PONG waits behind that
  // data, but its messages to us (on its own connection) arrive one by one.
  link_liveness l(1000ms, 30000ms);
  connection c;
  const auto t0 = clock::now();
  l.start(t0, c.p);
  for (int i = 1; i <= 20; ++i) {  // 10 s: a PING each 250 ms, acknowledged; a message each 500 ms
    const auto t = t0 + i * 500ms;
    c.ping();
    c.acked(16);
    CHECK_FALSE(l.judge(t, c.p));
    l.heard(t + 10ms);
    CHECK_FALSE(l.judge(t + 250ms, c.p));
  }
  // Its messages stop too: lost limit() after the next PING reached it.
  c.ping();
  c.acked(16);
  const auto t = t0 + 10500ms;
  CHECK_FALSE(l.judge(t, c.p));
  CHECK_FALSE(l.judge(t + 1100ms, c.p));
  CHECK(l.judge(t + 1200ms, c.p));
}

TEST_CASE("link_liveness: counters that go back belong to a new connection: the watch starts over") {
  link_liveness l(1000ms, 30000ms);
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
  fresh.acked(16);
  CHECK_FALSE(l.judge(t0 + 1600ms, fresh.p));
  CHECK(l.judge(t0 + 2800ms, fresh.p));
}
