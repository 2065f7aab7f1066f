#pragma once
// Which neighbours' messages a decentralized algorithm has absorbed in the round under way, and the
// rule it holds them to. Synchronous gossip: exactly one message per neighbour per round — a second,
// or a round finished without one, is a broken invariant (QG_ENFORCE names the rank). Asynchronous
// gossip (train.max_staleness > 0): any number per round, each neighbour's in its order (the round
// pattern delivers them so), and a round may finish without one (the algorithm mixes with the newest
// copy it holds). Not thread-safe.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"

namespace qgossip {

class round_receipts {
 public:
  round_receipts(std::size_t neighbours, bool asynchronous) : received_(neighbours), asynchronous_(asynchronous) {}

  // outgoing(): a new round.
  void begin_round() { received_.assign(received_.size(), false); }
  // absorb() of neighbour k (rank `from`).
  void mark(std::size_t k, int from) {
    QG_ENFORCE(asynchronous_ || !received_[k], "two messages from rank " << from << " in one round");
    received_[k] = true;
  }
  // finish(t).
  void check_complete(const mixing_row& row, std::uint64_t t) const {
    if (asynchronous_) return;
    for (std::size_t k = 0; k < received_.size(); ++k)
      QG_ENFORCE(received_[k], "round " << t << " finished without a message from rank " << row.neighbours[k]);
  }
  // One flag per neighbour, for remix_row (which keeps the survivors' entries).
  [[nodiscard]] std::vector<bool>& flags() { return received_; }
  [[nodiscard]] bool asynchronous() const { return asynchronous_; }

 private:
  std::vector<bool> received_;
  bool asynchronous_;
};

}  // namespace qgossip
