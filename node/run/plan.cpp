#include "node/run/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "node/models/model_factory.hpp"

namespace qgossip {

node_plan make_plan(const run_config& c, const data_split& data, int rank) {
  node_plan p{.steps_per_epoch = 0,
              .local_steps = 1,
              .rounds = 0,
              .eval_period = 0,
              .schedule = lr_schedule(c.train.lr),
              .sampler = nullptr};
  if (c.model.kind == model_kind::external) {  // the program's loop decides the length and the data
    p.local_steps = static_cast<std::uint64_t>(c.train.local_steps);
    p.rounds = kProgramRounds;
    p.eval_period = std::numeric_limits<std::uint64_t>::max();
    return p;
  }
  const std::size_t smallest_shard = data.total_train / static_cast<std::size_t>(c.topology.n);
  const auto batch = static_cast<std::size_t>(c.train.batch);
  if (smallest_shard < batch)
    throw config_error(c.file, 0, 0,
                       "train.batch " + std::to_string(batch) + " is larger than a node's shard (" +
                           std::to_string(smallest_shard) + " examples)");
  p.steps_per_epoch = smallest_shard / batch;
  p.local_steps = static_cast<std::uint64_t>(c.train.local_steps);
  const double per_epoch = p.rounds_per_epoch();
  p.rounds = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(c.train.epochs * per_epoch)));
  p.eval_period = c.train.eval_every > 0
                      ? std::max<std::uint64_t>(
                            1, static_cast<std::uint64_t>(std::llround(c.train.eval_every * per_epoch)))
                      : std::numeric_limits<std::uint64_t>::max();
  std::vector<std::size_t> shard_rows(data.train.size);  // data.train is the shard already
  std::iota(shard_rows.begin(), shard_rows.end(), std::size_t{0});
  p.sampler = std::make_unique<batch_sampler>(shard_rows, batch, batch_order_seed(c.seed, rank));
  return p;
}

}  // namespace qgossip
