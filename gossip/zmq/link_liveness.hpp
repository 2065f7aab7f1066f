#pragma once
// Whether a neighbour is alive, judged by the progress of our TCP connection to it (docs/failures.md,
// "Noticing"). Our DEALER PINGs the neighbour every heartbeat interval (ZMTP 3.1); the neighbour's
// ZeroMQ I/O thread answers each with a PONG, and PONGs are the only bytes its ROUTER ever sends us on
// that connection. So a PONG is proof of life, and bytes arriving on the connection are PONGs.
//
// A PONG can be late for reasons that are not death, all of them a slow link:
//  - our PING waits behind our own data on the connection (a round of messages leaving at 1 Mbit/s);
//  - the PING or the PONG waits in a shaper's queue (tc tbf, a router's buffer), or was dropped
//    there and is retransmitted after the connection's retransmission timeout (RTO).
// So a sample (tcp_progress, the kernel's counters) tells three things:
//  - answered: bytes arrived from the neighbour since the last sample (a PONG);
//  - draining: the neighbour's host acknowledged more of our bytes while more than a few PINGs' worth
//    were outstanding: our PING is still queued behind data that leaves at the link's rate;
//  - asked: we transmitted bytes since the last answer (a PING, or data with a PING behind it).
// The neighbour is lost when, since the latest of (its last answer, the last draining, the first
// transmission after that answer), limit() = timeout + min(RTO, timeout) has passed: a PONG owes us
// nothing before a PING has left, and the RTO term covers one retransmission of a dropped PING or
// PONG. A stopped process (SIGSTOP, a hung host) is found within limit() of its last PONG plus a
// heartbeat interval; one that died closes its connection, which the transport sees at once.
// What the neighbour's kernel does alone never counts as life: it acknowledges our bytes while its
// process is stopped, but only as long as we have data queued (draining), which in a round is at
// most a couple of messages, and only until its receive buffer is full.
//
// Pure bookkeeping on samples the transport takes; no clock of its own. Not thread-safe.
#include <chrono>
#include <cstdint>
#include <optional>

namespace qgossip {

// One reading of a TCP connection's counters (gossip/zmq/tcp_progress.hpp reads them).
struct tcp_progress {
  std::uint64_t bytes_received = 0;  // payload bytes received on the connection, ever
  std::uint64_t bytes_acked = 0;     // our payload bytes the peer's host acknowledged, ever
  std::uint64_t bytes_sent = 0;      // our payload bytes transmitted (retransmissions included), ever
  std::uint64_t outstanding = 0;     // bytes queued on our side, sent or not, not yet acknowledged
  std::chrono::microseconds rto{0};  // the connection's retransmission timeout now
};

class link_liveness {
 public:
  using clock = std::chrono::steady_clock;
  // More than this many bytes outstanding is data, not just heartbeats (a ZMTP PING is under 64
  // bytes with CURVE's framing; a few may queue).
  static constexpr std::uint64_t kHeartbeatBytes = 512;

  // REQUIRES: timeout > 0.
  explicit link_liveness(std::chrono::milliseconds timeout);

  // A new connection is up (its handshake succeeded) at now, its counters at s.
  void start(clock::time_point now, const tcp_progress& s);
  // A later sample of the same connection. Returns true when the neighbour is judged lost.
  [[nodiscard]] bool judge(clock::time_point now, const tcp_progress& s);
  // How long after the latest progress the neighbour is lost, for the RTO of the last sample.
  [[nodiscard]] clock::duration limit() const;

 private:
  std::chrono::milliseconds timeout_;
  tcp_progress last_;
  clock::time_point progress_{};              // latest answer, draining, or start
  std::uint64_t sent_at_answer_ = 0;          // bytes_sent at the latest answer (or start)
  std::optional<clock::time_point> asked_;    // first transmission seen after that answer
};

}  // namespace qgossip
