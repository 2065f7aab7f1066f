// `qgossip shards` (node/cli/command_shards.cpp): the shard files equal what the nodes compute
// (partition_iid / partition_by_label with the run's seed), the batch files hold every epoch's batches
// inside the shard without repeats, and shards.json says what the files hold.
#include <doctest/doctest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/cli/commands.hpp"
#include "node/data/load.hpp"
#include "node/data/npy.hpp"
#include "node/data/partition.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using qgossip::testing::scratch;

fs::path write_config(const fs::path& dir, const std::string& partition) {
  const fs::path p = dir / ("run-" + partition + ".yaml");
  std::ofstream(p) << "name: shards\nseed: 7\ntopology: {graph: ring, n: 4}\nalgorithm: dpsgd\n"
                      "compressor: identity\nmodel: {kind: mlp, hidden: [16]}\n"
                      "data: {dataset: synthetic, partition: "
                   << partition << (partition == "label" ? ", skew: 0.5" : "")
                   << ", synthetic: {train: 810, test: 100, dim: 8, classes: 4}}\n"
                      "train: {epochs: 2, batch: 32, lr: 0.1}\n";
  return p;
}

int run_shards(std::vector<std::string> args) {
  CLI::App app;
  int code = -1;
  add_shards_command(app, &code);
  args.insert(args.begin(), "shards");
  std::reverse(args.begin(), args.end());  // CLI11's vector form takes the arguments last first
  app.parse(args);
  return code;
}

std::vector<std::int64_t> read_i64(const fs::path& p, std::vector<std::uint64_t>* shape = nullptr) {
  const npy_array a = read_npy_array(p.string());
  REQUIRE(a.descr == "<i8");
  if (shape) *shape = a.shape;
  std::vector<std::int64_t> v(a.count());
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

}  // namespace

TEST_CASE("qgossip shards: iid shards equal partition_iid, batches stay in the shard") {
  scratch s;
  const fs::path config = write_config(s.dir, "iid");
  CHECK(run_shards({"--config", config.string(), "--out", (s.dir / "out").string()}) == 0);
  std::set<std::int64_t> all;
  for (int r = 0; r < 4; ++r) {
    const std::vector<std::int64_t> shard = read_i64(s.dir / "out" / ("shard-" + std::to_string(r) + ".npy"));
    const std::vector<std::size_t> expected = partition_iid(810, 4, r, 7);
    REQUIRE(shard.size() == expected.size());
    CHECK(std::equal(shard.begin(), shard.end(), expected.begin(),
                     [](std::int64_t a, std::size_t b) { return a == static_cast<std::int64_t>(b); }));
    all.insert(shard.begin(), shard.end());

    std::vector<std::uint64_t> shape;
    const std::vector<std::int64_t> batches = read_i64(s.dir / "out" / ("batches-" + std::to_string(r) + ".npy"), &shape);
    // 810 / 4 = 202 (smallest shard) / 32 = 6 steps per epoch, 2 epochs (train.epochs).
    REQUIRE(shape == std::vector<std::uint64_t>{12, 32});
    const std::set<std::int64_t> in_shard(shard.begin(), shard.end());
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::set<std::int64_t> seen;
      for (std::size_t i = std::size_t(epoch) * 6 * 32; i < std::size_t(epoch + 1) * 6 * 32; ++i) {
        CHECK(in_shard.count(batches[i]) == 1);
        seen.insert(batches[i]);
      }
      CHECK(seen.size() == 6 * 32);  // an epoch draws every example at most once
    }
    CHECK(!std::equal(batches.begin(), batches.begin() + 192, batches.begin() + 192));  // a new order each epoch
  }
  CHECK(all.size() == 810);  // disjoint and covering
  std::ifstream meta(s.dir / "out" / "shards.json");
  const std::string text((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"steps_per_epoch\": 6") != std::string::npos);
  CHECK(text.find("\"steps_written\": 12") != std::string::npos);
  CHECK(text.find("\"model_params\": 212") != std::string::npos);  // 8*16+16 + 16*4+4
}

TEST_CASE("qgossip shards: label-skewed shards equal partition_by_label; --epochs and --set apply") {
  scratch s;
  const fs::path config = write_config(s.dir, "label");
  CHECK(run_shards({"--config", config.string(), "--out", (s.dir / "out").string(), "--epochs", "0.5", "--set",
                    "topology={graph: ring, n: 3}"}) == 0);
  // The labels the nodes see: the synthetic set as a node loads it (the same spec and seed).
  data_spec spec;
  spec.dataset = dataset_kind::synthetic;
  spec.synthetic_train = 810;
  spec.synthetic_test = 100;
  spec.synthetic_dim = 8;
  spec.synthetic_classes = 4;
  const data_split whole = load_shard(spec, 1, 0, 7);
  for (int r = 0; r < 3; ++r) {
    const std::vector<std::int64_t> shard = read_i64(s.dir / "out" / ("shard-" + std::to_string(r) + ".npy"));
    const std::vector<std::size_t> expected = partition_by_label(whole.train.labels, 4, 3, r, 7, 0.5);
    REQUIRE(shard.size() == 270);
    CHECK(std::equal(shard.begin(), shard.end(), expected.begin(),
                     [](std::int64_t a, std::size_t b) { return a == static_cast<std::int64_t>(b); }));
    std::vector<std::uint64_t> shape;
    read_i64(s.dir / "out" / ("batches-" + std::to_string(r) + ".npy"), &shape);
    CHECK(shape == std::vector<std::uint64_t>{4, 32});  // 270 / 32 = 8 steps per epoch, half an epoch
  }
  CHECK(!fs::exists(s.dir / "out" / "shard-3.npy"));
}

TEST_CASE("qgossip shards: a bad config is a config_error naming the file") {
  scratch s;
  const fs::path bad = s.dir / "bad.yaml";
  std::ofstream(bad) << "name: x\ntopology: {graph: ring, n: 2}\ntrain: {batch: 0}\n";
  CHECK_THROWS_AS(run_shards({"--config", bad.string(), "--out", (s.dir / "o").string()}), config_error);
}
