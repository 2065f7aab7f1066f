#include "node/run/round_pattern.hpp"

#include <algorithm>

#include "gossip/ring_allreduce.hpp"

namespace qgossip {

pattern_shape shape_of(communication pattern, int rank, int n, const std::vector<int>& row_neighbours,
                       std::uint64_t max_staleness) {
  pattern_shape s;
  if (pattern != communication::ring_allreduce) {
    s.train_peers = row_neighbours;
    s.max_staleness = max_staleness;
    return s;
  }
  // The ring: its left and right neighbours (one, for two nodes). A rank can run n−1 exchange
  // iterations ahead of its right neighbour.
  if (n > 1) {
    s.train_peers = {(rank + 1) % n, (rank + n - 1) % n};
    std::sort(s.train_peers.begin(), s.train_peers.end());
    s.train_peers.erase(std::unique(s.train_peers.begin(), s.train_peers.end()), s.train_peers.end());
  }
  s.iterations_per_round = ring_allreduce_steps(n);
  s.lookahead = static_cast<std::uint64_t>(std::max(n, 2));
  s.gossip = false;
  return s;
}

const async_progress* async_progress_of(const round_pattern& pattern) {
  return dynamic_cast<const async_progress*>(&pattern);
}

}  // namespace qgossip
