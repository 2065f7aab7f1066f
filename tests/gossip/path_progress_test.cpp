// path_progress as a specification: a path is stuck only when no connection to or from the host
// moves, and only after window + 2 RTO of the connection that moved last. Pure bookkeeping on a
// simulated clock: nothing here can flake.
#include "gossip/zmq/path_progress.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace qgossip;
using namespace std::chrono_literals;

namespace {

using clock = path_progress::clock;

tcp_progress reading(std::uint64_t received, std::uint64_t acked, std::chrono::microseconds rto = 200ms) {
  tcp_progress p;
  p.bytes_received = received;
  p.bytes_acked = acked;
  p.rto = rto;
  return p;
}

// One pass observing each (fd, host, reading).
struct pass_of {
  path_progress& paths;
  clock::time_point now;
  explicit pass_of(path_progress& p, clock::time_point t) : paths(p), now(t) { paths.begin_pass(); }
  pass_of& see(int fd, const char* host, const tcp_progress& s) {
    paths.observe(now, fd, host, s);
    return *this;
  }
  ~pass_of() { paths.end_pass(); }
};

}  // namespace

TEST_CASE("path_progress: a cut path is stuck window + 2 RTO after the last byte moved, and only then") {
  path_progress paths(1000ms, 30000ms);
  const auto t0 = clock::now();
  { pass_of(paths, t0).see(5, "10.0.0.2", reading(100, 100)).see(9, "10.0.0.2", reading(50, 0)); }
  { pass_of(paths, t0 + 500ms).see(5, "10.0.0.2", reading(116, 116)).see(9, "10.0.0.2", reading(66, 0)); }
  CHECK(paths.limit("10.0.0.2") == 1400ms);
  // The cut: nothing moves from 500 ms on, on either connection.
  for (auto t = 1000ms; t < 1900ms; t += 500ms) {
    pass_of(paths, t0 + t).see(5, "10.0.0.2", reading(116, 116)).see(9, "10.0.0.2", reading(66, 0));
    CHECK_FALSE(paths.stuck(t0 + t, "10.0.0.2"));
  }
  { pass_of(paths, t0 + 1900ms).see(5, "10.0.0.2", reading(116, 116)).see(9, "10.0.0.2", reading(66, 0)); }
  CHECK(paths.stuck(t0 + 1900ms, "10.0.0.2"));
  CHECK_FALSE(paths.stuck(t0 + 1900ms, "10.0.0.3"));  // a host never seen is never stuck
}

TEST_CASE("path_progress: one connection that moves keeps the path alive while the others stall") {
  path_progress paths(1000ms, 30000ms);
  const auto t0 = clock::now();
  // Our link to the host stalls for 10 s (its PING in our shaper's queue, its retransmissions backing
  // off); the host's own DEALER to us still delivers a PING every 250 ms.
  std::uint64_t inbound = 0;
  for (auto t = 0ms; t <= 10000ms; t += 250ms) {
    inbound += 16;
    pass_of(paths, t0 + t).see(5, "10.0.0.2", reading(0, 0, 3200ms)).see(9, "10.0.0.2", reading(inbound, 0));
    CHECK_FALSE(paths.stuck(t0 + t, "10.0.0.2"));
  }
  // Acknowledgements alone (SACKed or cumulative) are movement too.
  std::uint64_t acked = 0;
  for (auto t = 10250ms; t <= 20000ms; t += 250ms) {
    acked += 1448;
    pass_of(paths, t0 + t).see(5, "10.0.0.2", reading(0, acked)).see(9, "10.0.0.2", reading(inbound, 0));
    CHECK_FALSE(paths.stuck(t0 + t, "10.0.0.2"));
  }
}

TEST_CASE("path_progress: a slow path's long RTO is its margin, and the cap bounds it") {
  path_progress paths(1000ms, 5000ms);
  const auto t0 = clock::now();
  { pass_of(paths, t0).see(5, "10.0.0.2", reading(10, 10, 1750ms)); }
  CHECK(paths.limit("10.0.0.2") == 4500ms);  // 1 s + 2 x 1.75 s
  { pass_of(paths, t0 + 4000ms).see(5, "10.0.0.2", reading(10, 10, 6400ms)); }  // backed off: not the margin
  CHECK_FALSE(paths.stuck(t0 + 4000ms, "10.0.0.2"));
  { pass_of(paths, t0 + 4500ms).see(5, "10.0.0.2", reading(10, 10, 6400ms)); }
  CHECK(paths.stuck(t0 + 4500ms, "10.0.0.2"));
  { pass_of(paths, t0 + 5000ms).see(5, "10.0.0.2", reading(11, 10, 3000ms)); }  // it moves: RTO 3 s
  CHECK(paths.limit("10.0.0.2") == 5000ms);  // 1 + 6 s, capped at 5 s
}

TEST_CASE("path_progress: hosts are judged apart; a new connection is movement; a host with none is forgotten") {
  path_progress paths(1000ms, 30000ms);
  const auto t0 = clock::now();
  { pass_of(paths, t0).see(5, "10.0.0.2", reading(100, 100)).see(6, "10.0.0.3", reading(0, 0)); }
  // 10.0.0.3 keeps moving, 10.0.0.2 does not.
  { pass_of(paths, t0 + 1500ms).see(5, "10.0.0.2", reading(100, 100)).see(6, "10.0.0.3", reading(16, 16)); }
  CHECK(paths.stuck(t0 + 1500ms, "10.0.0.2"));
  CHECK_FALSE(paths.stuck(t0 + 1500ms, "10.0.0.3"));
  // Descriptor 5 now names a new connection to the same host (its counters restarted): movement.
  { pass_of(paths, t0 + 2000ms).see(5, "10.0.0.2", reading(0, 0)).see(6, "10.0.0.3", reading(32, 32)); }
  CHECK_FALSE(paths.stuck(t0 + 2000ms, "10.0.0.2"));
  // ... as is a descriptor reused for another host.
  { pass_of(paths, t0 + 3500ms).see(5, "10.0.0.4", reading(0, 0)).see(6, "10.0.0.3", reading(48, 48)); }
  CHECK_FALSE(paths.stuck(t0 + 3500ms, "10.0.0.4"));
  // 10.0.0.2 has no connection left (its descriptor now 10.0.0.4's): forgotten, never stuck.
  CHECK_FALSE(paths.stuck(t0 + 3500ms, "10.0.0.2"));
}
