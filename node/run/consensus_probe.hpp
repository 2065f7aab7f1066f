#pragma once
// Consensus probes (train.consensus_every): every node sends its model to rank 0 over a probe
// exchange apart from training traffic; rank 0 averages the n models (in rank order, in double) and
// records the consensus distance (1/n) Σ‖x_i − x̄‖² and the average model's test loss and accuracy.
#include <chrono>
#include <cstdint>
#include <vector>

#include "core/aligned.hpp"
#include "core/status.hpp"
#include "gossip/exchange.hpp"
#include "node/log/run_log.hpp"

namespace qgossip {

struct node_setup;

class consensus_probe {
 public:
  explicit consensus_probe(node_setup& s);
  // One probe at round t (`last`: evaluate the average on the whole test set). Rank 0 fills rec's
  // consensus_dist, avg_test_loss and avg_test_acc. A failed exchange or a malformed probe: an error.
  [[nodiscard]] status run(std::uint64_t t, bool last, round_record& rec);
  // Exchange time spent in probes so far (subtracted from the training communication time).
  [[nodiscard]] std::chrono::nanoseconds comm_time() const { return comm_; }

 private:
  node_setup& s_;
  float_vector average_;
  std::vector<double> sum_;
  std::vector<inbound_message> inbound_;
  std::chrono::nanoseconds comm_{0};
};

}  // namespace qgossip
