#include "gossip/zmq/link_liveness.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

link_liveness::link_liveness(std::chrono::milliseconds timeout) : timeout_(timeout) {
  QG_ENFORCE(timeout.count() > 0, "timeout=" << timeout.count() << "ms");
}

void link_liveness::start(clock::time_point now, const tcp_progress& s) {
  last_ = s;
  progress_ = now;
  sent_at_answer_ = s.bytes_sent;
  asked_.reset();
}

link_liveness::clock::duration link_liveness::limit() const {
  return timeout_ + std::min<clock::duration>(last_.rto, timeout_);
}

bool link_liveness::judge(clock::time_point now, const tcp_progress& s) {
  // Counters of another connection (the kernel reused the descriptor): start over.
  if (s.bytes_received < last_.bytes_received || s.bytes_acked < last_.bytes_acked || s.bytes_sent < last_.bytes_sent) {
    start(now, s);
    return false;
  }
  if (s.bytes_received > last_.bytes_received) {  // answered
    progress_ = now;
    sent_at_answer_ = s.bytes_sent;
    asked_.reset();
  } else if (s.bytes_acked > last_.bytes_acked && last_.outstanding > kHeartbeatBytes) {  // draining
    progress_ = now;
  }
  if (!asked_ && s.bytes_sent > sent_at_answer_) asked_ = now;
  last_ = s;
  if (!asked_) return false;  // nothing left that the neighbour could have answered
  return now - std::max(progress_, *asked_) >= limit();
}

}  // namespace qgossip
