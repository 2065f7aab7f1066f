// `qgossip shards`: every rank's training shard and batch order as .npy files, computed by the same
// code the nodes use (node/data/load.hpp shard_indices, node/data/batch_sampler.hpp), so that
// another trainer (bench/peers/: PyTorch DDP and DiLoCo) trains on exactly the examples, in exactly
// the order, a qgossip node of the same run would.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "core/json.hpp"
#include "node/cli/commands.hpp"
#include "node/config/config.hpp"
#include "node/data/batch_sampler.hpp"
#include "node/data/load.hpp"
#include "node/data/npy.hpp"
#include "node/data/standardize.hpp"

namespace qgossip {

namespace {

void write_npy_i64(const std::filesystem::path& path, const std::vector<std::int64_t>& values,
                   const std::vector<std::uint64_t>& shape) {
  write_npy(path.string(), "<i8", shape, std::as_bytes(std::span<const std::int64_t>(values)));
}

struct shards_options {
  std::string config;
  std::vector<std::string> sets;
  std::string out;
  double epochs = -1;  // < 0: the run's train.epochs
};

void write_shards(const shards_options& o) {
  const run_config c = load_run_config(o.config, o.sets);
  const int n = c.topology.n;
  // The whole training set (not standardized: the order of examples is what matters here), loaded
  // once for all ranks; load_shard keeps exactly shard_indices(...) of it on each node.
  data_spec unstandardized = c.data;
  unstandardized.standardize = false;
  const data_split whole = load_shard(unstandardized, 1, 0, c.seed);
  const channel_stats stats = measure_channels(whole.train);
  const auto batch = static_cast<std::size_t>(c.train.batch);
  const std::size_t smallest_shard = whole.total_train / static_cast<std::size_t>(n);
  if (smallest_shard < batch)
    throw config_error(c.file, 0, 0, "train.batch " + std::to_string(batch) + " is larger than a node's shard (" +
                                          std::to_string(smallest_shard) + " examples)");
  const std::uint64_t steps_per_epoch = smallest_shard / batch;  // as node_setup: the same on every node
  const double epochs = o.epochs >= 0 ? o.epochs : c.train.epochs;
  const auto steps = static_cast<std::uint64_t>(std::ceil(epochs * static_cast<double>(steps_per_epoch)));

  const std::filesystem::path dir(o.out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw config_error(dir.string() + ": cannot create the directory: " + ec.message());
  nlohmann::ordered_json j = {
      {"config", c.file},
      {"name", c.name},
      {"seed", c.seed},
      {"n", n},
      {"dataset", to_text(c.data.dataset)},
      {"dir", c.data.dir},
      {"partition", to_text(c.data.partition)},
      {"skew", c.data.skew},
      {"alpha", c.data.alpha},
      {"total_train", whole.total_train},
      {"test_examples", whole.test.size},
      {"dim", whole.train.dim},
      {"classes", whole.train.classes},
      {"batch", batch},
      {"steps_per_epoch", steps_per_epoch},
      {"steps_written", steps},
      {"epochs_written", epochs},
      {"model_kind", to_text(c.model.kind)},
      {"model_params", eigen_model_params(c.model, whole.train.dim, whole.train.classes)},
      {"standardize", c.data.standardize},
      {"channel_mean", stats.mean},
      {"channel_stddev", stats.stddev},
      {"shard_sizes", nlohmann::ordered_json::array()}};
  for (int r = 0; r < n; ++r) {
    const std::vector<std::size_t> shard = shard_indices(c.data, whole.train, n, r, c.seed);
    j["shard_sizes"].push_back(shard.size());
    const std::vector<std::int64_t> rows(shard.begin(), shard.end());
    write_npy_i64(dir / ("shard-" + std::to_string(r) + ".npy"), rows, {rows.size()});
    // The node's sampler runs over positions in its shard; written here as training-set indices.
    std::vector<std::size_t> positions(shard.size());
    std::iota(positions.begin(), positions.end(), std::size_t{0});
    batch_sampler sampler(positions, batch, batch_order_seed(c.seed, r));
    std::vector<std::int64_t> order;
    order.reserve(steps * batch);
    for (std::uint64_t t = 0; t < steps; ++t)
      for (std::size_t p : sampler.next()) order.push_back(static_cast<std::int64_t>(shard[p]));
    write_npy_i64(dir / ("batches-" + std::to_string(r) + ".npy"), order, {steps, batch});
  }
  std::ofstream f(dir / "shards.json");
  f << json_text(j, true) << "\n";
  if (!f) throw config_error((dir / "shards.json").string() + ": write failed");
  std::printf("wrote %d shards of %s (%zu training examples, %llu steps of %zu = %g epochs each) to %s/\n", n,
              to_text(c.data.dataset).c_str(), whole.total_train, static_cast<unsigned long long>(steps), batch, epochs,
              dir.c_str());
}

}  // namespace

void add_shards_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("shards", "Write every rank's training shard and batch order as .npy (for other trainers)");
  cmd->footer(
      "Computes, with the nodes' own code, what each rank r of the run trains on and writes into --out:\n"
      "  shard-<r>.npy    int64 (|shard|,): the training-set indices of rank r's shard, ascending\n"
      "                   (data.partition with data.skew or data.alpha, over the topology's n nodes,\n"
      "                   seeded by `seed`)\n"
      "  batches-<r>.npy  int64 (steps, batch): the training-set indices of rank r's batch at each step,\n"
      "                   in the order its node draws them (a fresh seeded permutation every epoch)\n"
      "  shards.json      n, seed, partition, skew, alpha, batch, steps_per_epoch, steps_written,\n"
      "                   total_train, dim, classes, model_params, standardize, and channel_mean/\n"
      "                   channel_stddev of the whole training set (what data.standardize uses), shard_sizes\n"
      "Indices count from 0 in the data set's own order (Fashion-MNIST: the IDX file's). bench/peers/ reads\n"
      "these so that its PyTorch trainers see the same examples in the same order as qgossip's nodes.\n"
      "Example: qgossip shards --config configs/demo.yaml --out runs/shards/demo --epochs 12");
  auto opt = std::make_shared<shards_options>();
  cmd->add_option("--config", opt->config, "Run YAML")->required();
  cmd->add_option("--set", opt->sets, "Override a config value first, as qgossip launch does, e.g. --set topology.n=16");
  cmd->add_option("--out", opt->out, "Directory to write into (created)")->required();
  cmd->add_option("--epochs", opt->epochs, "Epochs of batches to write (default: the run's train.epochs)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([opt, exit_code] {
    write_shards(*opt);
    *exit_code = 0;
  });
}

}  // namespace qgossip
