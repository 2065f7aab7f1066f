#include "gossip/zmq/link_liveness.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

link_liveness::link_liveness(std::chrono::milliseconds timeout, std::chrono::milliseconds recovery_cap)
    : timeout_(timeout), recovery_cap_(recovery_cap) {
  QG_ENFORCE(timeout.count() > 0 && recovery_cap >= timeout,
             "timeout=" << timeout.count() << "ms recovery_cap=" << recovery_cap.count() << "ms");
}

void link_liveness::start(clock::time_point now, const tcp_progress& s) {
  last_ = s;
  answered(now, s.bytes_sent);
}

void link_liveness::heard(clock::time_point now) { answered(now, last_.bytes_sent); }

void link_liveness::answered(clock::time_point now, std::uint64_t bytes_sent) {
  progress_ = now;
  sent_at_answer_ = bytes_sent;
  asked_.reset();
  ask_end_.reset();
  reached_.reset();
}

link_liveness::clock::duration link_liveness::limit() const {
  return timeout_ + std::min<clock::duration>(last_.rto, recovery_cap_);
}

bool link_liveness::judge(clock::time_point now, const tcp_progress& s) {
  // Counters of another connection (the kernel reused the descriptor): start over.
  if (s.bytes_received < last_.bytes_received || s.bytes_acked < last_.bytes_acked || s.bytes_sent < last_.bytes_sent) {
    start(now, s);
    return false;
  }
  if (s.bytes_received > last_.bytes_received) {
    answered(now, s.bytes_sent);
  } else if ((s.bytes_acked > last_.bytes_acked || s.delivered > last_.delivered) &&
             last_.outstanding > kHeartbeatBytes) {  // draining
    progress_ = now;
  }
  // Asked once something left: bytes in flight, or none outstanding (acknowledged already), or the
  // neighbour's window shut. A transmission our own shaper dropped (its queue full) counts in
  // bytes_sent but leaves it all unsent: not asked yet.
  const bool shut = s.window == 0;  // its host holds all it will take: its process is not reading
  const std::uint64_t in_flight = s.outstanding - std::min(s.unsent, s.outstanding);
  const bool something_left = in_flight > 0 || s.outstanding == 0 || shut;
  if (!asked_ && s.bytes_sent > sent_at_answer_ && something_left) asked_ = now;
  // Once nothing of ours waits to leave, the PING behind our data is in flight, at most at
  // snd_nxt (ask_end_). Reached: that much is acknowledged (the PING with it), or the window is shut.
  // Data acknowledged ahead of its PING proves nothing: a PONG is owed only for a PING delivered.
  if (asked_ && !ask_end_ && s.unsent == 0) ask_end_ = s.bytes_acked + in_flight;  // snd_nxt
  if (asked_ && !reached_ && ((ask_end_ && s.bytes_acked >= *ask_end_) || shut)) reached_ = now;
  last_ = s;
  if (!asked_) return false;  // nothing left that the neighbour could have answered
  if (!reached_) return now - std::max(progress_, *asked_) >= recovery_cap_;  // the path is stuck
  return now - std::max(progress_, *reached_) >= limit();
}

}  // namespace qgossip
