#pragma once
// The plan (docs/design.md): how many rounds a node runs, how long a round is (H =
// train.local_steps optimizer steps, each on one batch), when it evaluates, the learning-rate
// schedule, and this node's own order of its own shard. Every node runs the same number of rounds,
// derived from the smallest shard, which every node can compute (shards differ by at most one
// example).
#include <cstdint>
#include <memory>

#include "node/config/config.hpp"
#include "node/data/batch_sampler.hpp"
#include "node/data/load.hpp"
#include "node/optim/lr_schedule.hpp"

namespace qgossip {

// The rounds of a node driven by a program (model.kind external): as many as its loop runs; this
// bound only keeps arithmetic on round numbers finite.
inline constexpr std::uint64_t kProgramRounds = std::uint64_t{1} << 48;

struct node_plan {
  std::uint64_t steps_per_epoch = 0;  // batches of the smallest shard (0: model.kind external, no shard)
  std::uint64_t local_steps = 1;      // H: optimizer steps per round
  std::uint64_t rounds = 0;
  std::uint64_t eval_period = 0;  // rounds between evaluations (UINT64_MAX: only at the end)
  lr_schedule schedule;
  std::unique_ptr<batch_sampler> sampler;

  // The epoch reached after `steps` optimizer steps (round t ends at step t·H).
  // (0 when the node has no shard: model.kind external.)
  [[nodiscard]] double epoch_after(std::uint64_t steps) const {
    return steps_per_epoch ? static_cast<double>(steps) / static_cast<double>(steps_per_epoch) : 0.0;
  }
  // The rounds as the log and the launcher show them: 0 (not known) for a program's open-ended run.
  [[nodiscard]] std::uint64_t shown_rounds() const { return rounds == kProgramRounds ? 0 : rounds; }
  [[nodiscard]] double rounds_per_epoch() const {
    return static_cast<double>(steps_per_epoch) / static_cast<double>(local_steps);
  }
};

// The plan of node `rank` of n, whose shard `data` holds (data.total_train examples in all). Throws
// config_error when a batch is larger than a node's shard.
[[nodiscard]] node_plan make_plan(const run_config& c, const data_split& data, int rank);

}  // namespace qgossip
