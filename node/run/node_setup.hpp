#pragma once
// Everything a node builds before its first round, from the run config and its rank, in order:
// the topology, the data shard, the learner (model, algorithm, codec: node/run/learner.hpp), the
// plan (rounds, schedule, sampler: node/run/plan.hpp), the checkpoints to keep or resume from, the
// log, and the links (transport, exchange, failure handling, round pattern: node/run/links.hpp).
// Construction may throw config_error (missing data file, port in use, bad weights, a model too
// large; a failed allocation is rephrased as one saying what was being allocated) or
// start_up_interrupted (a stop signal before round 1: node/run/start_up.hpp); nothing after it
// does. The round loop (node/run/round_steps.hpp) works on this.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/work_pool.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/config/config.hpp"
#include "node/data/load.hpp"
#include "node/log/run_log.hpp"
#include "node/run/learner.hpp"
#include "node/run/links.hpp"
#include "node/run/plan.hpp"
#include "node/run/run_control.hpp"
#include "node/run/start_up.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"

namespace qgossip {

// Checkpoints (train.checkpoint_every > 0 or a resume): this node's directory, how many it keeps
// (node/run/resume.hpp checkpoint_keep), and the one the run continues from, held until the round
// loop has loaded it.
struct node_checkpoints {
  std::filesystem::path dir;
  std::size_t keep = 0;
  std::optional<checkpoint> resume;
  std::chrono::milliseconds pause{0};  // node_run_options::checkpoint_pause_for_testing
};

// A program's own model (model.kind external: a node driven by another program's loop,
// node/run/node_session.hpp): its parameters, one flat float32 vector it trains in place (the node
// starts from them, x_1, takes each round's change from them, and writes its model back into them
// after the round), and the node's state the program saved with it (node_session::state(), encoded
// as a checkpoint: the node continues from it as from a checkpoint of --resume; empty: a fresh start).
struct program_model {
  std::span<float> params;
  std::span<const std::byte> state;
};

struct node_setup {
  node_setup(const run_config& c, int rank, const node_run_options& options, program_model program = {});

  const run_config& config;
  const int rank;
  const int n;
  const std::chrono::steady_clock::time_point wall_start = std::chrono::steady_clock::now();
  // The threads of the round's work that splits (node.threads: core/work_pool.hpp), installed on
  // the thread that runs a round (round_driver, round_thread).
  work_pool pool;
  const topology topo;
  const topology_report report;
  data_split data;
  node_learner learner;
  node_plan plan;
  node_checkpoints checkpoints;
  std::unique_ptr<run_log> log;
  node_links links;
  // The attack this node sends in place of its honest messages, described ("noise (sigma 1)"), when
  // a scenario's hostile: list names its rank (node_run_options::scenario; its round pattern is then
  // node/run/hostile_round.hpp's); empty for an honest node.
  std::string attack;
  // The models of the processes a node speaks for (node_session::set_group_hashes), the speaker's
  // first; empty for a node of one process.
  std::vector<std::uint64_t> group_hashes;

  // The one-paragraph start-up line of the node log (what runs, with whom, for how long).
  [[nodiscard]] std::string describe() const;
  // The data set, its size and shape, standardization and augmentation (start-up line, run.json).
  [[nodiscard]] std::string describe_data() const;
};

}  // namespace qgossip
