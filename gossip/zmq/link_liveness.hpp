#pragma once
// Whether a neighbour is alive, judged by the progress of our TCP connection to it (docs/failures.md,
// "Noticing"). Our DEALER PINGs the neighbour every heartbeat interval (ZMTP 3.1); the neighbour's
// ZeroMQ I/O thread answers each with a PONG, and PONGs are the only bytes its ROUTER ever sends us on
// that connection. So a PONG is proof of life, and bytes arriving on the connection are PONGs.
//
// A PONG can be late for reasons that are not death, all of them a slow link:
//  - our PING waits behind our own data on the connection (a round of messages leaving at 1 Mbit/s);
//  - the PING or the PONG waits in a shaper's queue (tc tbf, a router's buffer), or was dropped
//    there and is retransmitted after the connection's retransmission timeout (RTO), or later still
//    when the retransmission is dropped too (the RTO doubles) or our own shaper's queue, full of our
//    other connections' data, keeps refusing it (2-3 s measured: all-gather, 7 connections through
//    one 1 Mbit/s tbf).
// So a sample (tcp_progress, the kernel's counters) tells four things:
//  - answered: bytes arrived from the neighbour since the last sample (a PONG), or a whole message
//    of its arrived on its own connection to us (heard(): a neighbour whose PONGs wait behind its
//    own data on a slow uplink still gets that data through);
//  - draining: the neighbour's host took more of our data (acknowledged it, or selectively
//    acknowledged segments past a lost one) while more than a few PINGs' worth was outstanding: our
//    PING is still queued behind data that leaves at the link's rate;
//  - asked: we transmitted bytes since the last answer (a PING, or data with a PING behind it);
//  - reached: once nothing of ours waits to leave (so the PING behind our queued data is in flight),
//    all that was then in flight is acknowledged; or the neighbour's window is shut (its host holds
//    all it will take: its process reads nothing). Data acknowledged ahead of its PING is draining,
//    not reaching: on a slow uplink the PING may still be seconds behind it.
// Only a PING that reached the neighbour owes us a PONG: the neighbour is lost when, since the latest
// of (its last answer, the last draining, the ask reaching it), limit() = timeout + RTO has passed
// (the RTO term: one retransmission of a PONG dropped by the neighbour's own shaper, whose RTO on the
// same path ours estimates). While the ask has not reached it, the path, not the neighbour, is what
// we see stuck, and the neighbour is lost only after recovery_cap (the node's round time-out) without
// progress: a host that vanished, taking no more of our bytes, is found then. A stopped process
// (SIGSTOP, a hung process) is found within limit() of its kernel's acknowledgement of our PING, or
// of its window shutting; one that died closes its connection, which the transport sees at once.
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
  std::uint64_t unsent = 0;          // of outstanding: not yet transmitted even once
  std::uint64_t local = 0;           // transmitted but still in this host's queues (qdisc, device): bytes
                                     // of buffer (SO_MEMINFO's wmem_alloc), a little above the payload
  std::uint64_t delivered = 0;       // our segments the peer's host received, SACKed ones included, ever
  std::uint64_t window = ~std::uint64_t{0};  // the peer's advertised receive window (bytes); ~0: unknown
  std::chrono::microseconds rto{0};  // the connection's retransmission timeout now
};

class link_liveness {
 public:
  using clock = std::chrono::steady_clock;
  // More than this many bytes outstanding is data, not just heartbeats (a ZMTP PING is under 64
  // bytes with CURVE's framing; a few may queue).
  static constexpr std::uint64_t kHeartbeatBytes = 512;

  // REQUIRES: timeout > 0, recovery_cap >= timeout.
  link_liveness(std::chrono::milliseconds timeout, std::chrono::milliseconds recovery_cap);

  // A new connection is up (its handshake succeeded) at now, its counters at s.
  void start(clock::time_point now, const tcp_progress& s);
  // A message from the neighbour arrived (on its own connection to us) at now: an answer.
  void heard(clock::time_point now);
  // A later sample of the same connection. Returns true when the neighbour is judged lost.
  [[nodiscard]] bool judge(clock::time_point now, const tcp_progress& s);
  // How long after the latest progress (or the ask reaching it) the neighbour is lost, for the RTO
  // of the last sample (at most recovery_cap).
  [[nodiscard]] clock::duration limit() const;

 private:
  // An answer at now, with bytes_sent transmitted so far: nothing is asked of the neighbour.
  void answered(clock::time_point now, std::uint64_t bytes_sent);

  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds recovery_cap_;
  tcp_progress last_;
  clock::time_point progress_{};              // latest answer, draining, or start
  std::uint64_t sent_at_answer_ = 0;          // bytes_sent at the latest answer (or start)
  std::optional<clock::time_point> asked_;    // first transmission seen after that answer
  std::optional<std::uint64_t> ask_end_;      // snd_nxt once nothing of ours waited to leave
  std::optional<clock::time_point> reached_;  // when bytes_acked reached ask_end_
};

}  // namespace qgossip
