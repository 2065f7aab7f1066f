#pragma once
// Whether the network path to a remote host moves at all: the one fast verdict on a cut link
// (docs/failures.md, "A cut path"). link_liveness judges one connection, and while its PING has not
// reached the neighbour it must wait the round time-out: a PING stuck in our own full shaper looks,
// on that connection alone, like one lost beyond a pulled cable. But a cut path is silent on every
// connection between the two hosts at once, both ways: none of our bytes acknowledged, selectively
// or not, on our connections to any rank there, and no byte arriving from it, on those or on its
// ranks' connections to us (whose DEALERs PING us every heartbeat interval). A slow path that still
// moves shows something on one of them: its ACKs, its PINGs, its data.
//
// So each host (its address) is stuck when no connection to or from it moved for window + twice the
// retransmission timeout the moving connection had (TCP backs off from there; a slow path's RTO is
// long, and so is its margin), at most `cap`. A host with no readable connection is never stuck: a
// closed connection is the transport's own, quicker news. The transport observes no loopback
// connection: a path to its own host cannot be cut (gossip/zmq/transport.cpp, is_loopback).
//
// Pure bookkeeping on readings the transport takes, one pass at a time; no clock of its own.
// Not thread-safe.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "gossip/zmq/link_liveness.hpp"

namespace qgossip {

class path_progress {
 public:
  using clock = std::chrono::steady_clock;

  // REQUIRES: window > 0, cap >= window.
  path_progress(std::chrono::milliseconds window, std::chrono::milliseconds cap);

  // A pass reads every connection once: begin_pass, observe each, end_pass.
  void begin_pass();
  // Connection `fd`, to or from `host`, read now. A descriptor seen before with another host or
  // smaller counters is a new connection, and a new connection is progress (its handshake crossed).
  void observe(clock::time_point now, int fd, const std::string& host, const tcp_progress& s);
  // Forgets the connections not observed in this pass, and the hosts left with none.
  void end_pass();

  // No connection to or from host moved for limit(host) (false for a host with no connection).
  [[nodiscard]] bool stuck(clock::time_point now, const std::string& host) const;
  // window + 2 · the RTO of the connection that last moved, at most cap.
  [[nodiscard]] clock::duration limit(const std::string& host) const;

 private:
  struct connection {
    std::string host;
    tcp_progress last;
    std::uint64_t pass = 0;
  };
  struct path {
    clock::time_point moved{};
    std::chrono::microseconds rto{0};  // the RTO of the connection that moved then
    std::uint64_t pass = 0;            // the last pass that observed one of its connections
  };
  void moved(path& p, clock::time_point now, std::chrono::microseconds rto);

  std::chrono::milliseconds window_, cap_;
  std::uint64_t pass_ = 0;
  std::map<int, connection> connections_;
  std::map<std::string, path> paths_;
};

}  // namespace qgossip
