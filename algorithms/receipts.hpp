#pragma once
// Which neighbours' messages a decentralized algorithm has absorbed, and the rule it holds them to.
// Synchronous gossip: exactly one message per neighbour per round — a second, or a round finished
// without one, is a broken invariant (QG_ENFORCE names the rank). Asynchronous gossip
// (train.max_staleness > 0): any number per round, each neighbour's in its order (the round pattern
// delivers them so), and a round may finish without one. Then each neighbour's term counts in the
// mix once per batch of new messages (take_fresh): a neighbour that sent nothing since the node last
// mixed with it adds nothing, its weight staying with the node (docs/algorithms.md, "Asynchronous
// gossip"), unless it has finished: its copy is then final and counts in every mix (mark_final).
// Not thread-safe.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"

namespace qgossip {

class round_receipts {
 public:
  // One per neighbour, in row order (remix_row keeps the survivors' entries).
  struct entry {
    bool this_round = false;  // a message absorbed in the round under way
    bool fresh = false;       // asynchronous: a message absorbed since the node last mixed with it
    bool final = false;       // asynchronous: the neighbour has finished; its copy counts in every mix
  };

  round_receipts(std::size_t neighbours, bool asynchronous) : entries_(neighbours), asynchronous_(asynchronous) {}

  // outgoing(): a new round.
  void begin_round() {
    for (entry& e : entries_) e.this_round = false;
  }
  // absorb() of neighbour k (rank `from`).
  void mark(std::size_t k, int from) {
    QG_ENFORCE(asynchronous_ || !entries_[k].this_round, "two messages from rank " << from << " in one round");
    entries_[k].this_round = true;
    entries_[k].fresh = true;
  }
  // Asynchronous: neighbour k has sent its last message and every one of them was absorbed.
  void mark_final(std::size_t k) {
    QG_ENFORCE(asynchronous_, "a synchronous round has no finished neighbours");
    entries_[k].final = true;
  }
  // finish(t).
  void check_complete(const mixing_row& row, std::uint64_t t) const {
    if (asynchronous_) return;
    for (std::size_t k = 0; k < entries_.size(); ++k)
      QG_ENFORCE(entries_[k].this_round, "round " << t << " finished without a message from rank " << row.neighbours[k]);
  }
  // Whether neighbour k's term belongs in the mix being built: always when synchronous; when
  // asynchronous, only if it sent something since the last mix (and the mix now uses it) or has
  // finished.
  [[nodiscard]] bool take_fresh(std::size_t k) {
    if (!asynchronous_) return true;
    const bool fresh = entries_[k].fresh || entries_[k].final;
    entries_[k].fresh = false;
    return fresh;
  }
  [[nodiscard]] std::vector<entry>& entries() { return entries_; }
  [[nodiscard]] bool asynchronous() const { return asynchronous_; }

 private:
  std::vector<entry> entries_;
  bool asynchronous_;
};

// take_fresh for each of the row's n neighbours, in order.
inline std::vector<bool> take_fresh(round_receipts& receipts, std::size_t n) {
  std::vector<bool> fresh(n);
  for (std::size_t k = 0; k < n; ++k) fresh[k] = receipts.take_fresh(k);
  return fresh;
}

// The node's own weight in a mix where the neighbours not `fresh` leave theirs with it: W_ii plus
// their W_ij (exactly W_ii when every neighbour is fresh, as in synchronous gossip).
inline double own_weight(const mixing_row& row, const std::vector<bool>& fresh) {
  double w = row.self_weight;
  for (std::size_t k = 0; k < fresh.size(); ++k)
    if (!fresh[k]) w += row.weights[k];
  return w;
}

}  // namespace qgossip
