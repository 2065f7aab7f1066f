#pragma once
// Everything a node builds before its first round, from the run config and its rank: topology,
// data shard, model, codec, algorithm, peers, round counts, sampler, log, links and exchange.
// Construction may throw config_error (missing data file, port in use, bad weights, a model too
// large; a failed allocation is rephrased as one saying what was being allocated) or
// start_up_interrupted (a stop signal before round 1); nothing after it does. The round loop
// (node/run/round_steps.hpp) works on this.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/isgq.hpp"
#include "gossip/exchange.hpp"
#include "gossip/ring_allreduce.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/config/config.hpp"
#include "node/data/batch_sampler.hpp"
#include "node/data/load.hpp"
#include "node/log/run_log.hpp"
#include "node/models/model.hpp"
#include "node/optim/lr_schedule.hpp"
#include "node/run/node_network.hpp"
#include "node/run/node_runner.hpp"
#include "node/run/peer_failures.hpp"
#include "topology/report.hpp"

namespace qgossip {

struct node_setup {
  node_setup(const run_config& c, int rank, const node_run_options& options);

  const run_config& config;
  const int rank;
  const int n;
  const std::chrono::steady_clock::time_point wall_start = std::chrono::steady_clock::now();
  topology_report report;

  data_split data;
  std::unique_ptr<model> net;
  // ISGQ (all-gather only) sends each layer's quantized factors instead of a compressed gradient:
  // `factored` encodes and decodes those; `codec` is then the raw-float identity, used for sizing.
  std::unique_ptr<isgq_codec> factored;
  std::unique_ptr<compressor> codec;
  std::vector<fc_factors> fc_shapes;
  std::string codec_description;

  std::unique_ptr<algorithm> alg;
  communication pattern = communication::neighbours;
  // Whom training messages go to and come from (a ring all-reduce: its left and right), every
  // other rank, and every peer this node talks to at all (probes add rank 0, or on rank 0 everyone).
  std::vector<int> train_peers, all_others, peers;
  bool probing = false;

  std::uint64_t steps_per_round = 1;  // exchange iterations per round (ring all-reduce: 2(n-1))
  // A round takes local_steps (H) optimizer steps, each on one batch; an epoch is steps_per_epoch
  // batches of the node's shard, so a round is H / steps_per_epoch epochs.
  std::uint64_t steps_per_epoch = 0, local_steps = 1, rounds = 0, eval_period = 0;
  lr_schedule schedule;
  std::unique_ptr<batch_sampler> sampler;  // this node's own order of its own shard

  // Checkpoints (train.checkpoint_every > 0 or a resume): this node's directory, how many it keeps
  // (node/run/resume.hpp checkpoint_keep), and the one the run continues from, held until
  // round_steps has loaded it.
  std::filesystem::path checkpoint_dir;
  std::size_t checkpoint_keep = 0;
  std::optional<checkpoint> resume;
  std::chrono::milliseconds checkpoint_pause{0};

  std::unique_ptr<run_log> log;
  std::size_t largest_message = 0;
  std::uint64_t lookahead = 1;
  std::unique_ptr<node_network> network;
  // Failed and misbehaving neighbours (network.on_peer_failure): the exchange's callbacks.
  std::unique_ptr<peer_failures> failures;
  // Checks a neighbour's train message before the exchange delivers it (round_steps decodes it);
  // unset until the round loop sets it.
  std::function<status(const wire_header&, std::span<const std::byte>)> validate;
  std::unique_ptr<exchange> ex;
  std::unique_ptr<ring_allreduce> reducer;  // ring all-reduce with n > 1 only

  // The epoch reached after `steps` optimizer steps (round t ends at step t·H).
  [[nodiscard]] double epoch_after(std::uint64_t steps) const {
    return static_cast<double>(steps) / static_cast<double>(steps_per_epoch);
  }

  // Called by the constructor once the model, algorithm and round counts exist.
  void prepare_checkpoints(const topology& topo, const node_run_options& options);

  // The one-paragraph start-up line of the node log (what runs, with whom, for how long).
  [[nodiscard]] std::string describe() const;
  // The data set, its size and shape, standardization and augmentation (start-up line, run.json).
  [[nodiscard]] std::string describe_data() const;
};

// Thrown by node_setup's constructor when a stop was requested (SIGINT, SIGTERM) before the node
// was ready; run_node catches it and writes the summary of a node interrupted at start-up.
struct start_up_interrupted {
  std::string doing;  // "before building the model", ...
};

// What node_setup is doing now ("loading the data", "opening the network"...). Thread-safe: the
// watchdog that run_node keeps during start-up reads it.
const char* start_up_phase();

// Human-readable log lines on stderr, prefixed with the rank so interleaved output stays legible.
void say(int rank, const std::string& text);

}  // namespace qgossip
