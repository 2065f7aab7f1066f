// load_shard on files written here: CIFAR-10 batches (shard sizes, contents, standardization with
// statistics of the whole training set) and .npy images (class counts, shape agreement).
#include "node/data/load.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "node/data/cifar10.hpp"
#include "node/data/partition.hpp"
#include "tests/node/data/data_files.hpp"

using namespace qgossip;
using namespace qgossip::testing;

namespace {

// `count` CIFAR-10 records for examples first.. with varied pixels and labels.
std::string cifar_records(std::size_t first, std::size_t count) {
  std::string s;
  for (std::size_t e = first; e < first + count; ++e) {
    s += static_cast<char>(e % 10);
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t p = 0; p < 1024; ++p) s += static_cast<char>((e * 131 + c * 71 + p * 29 + (e * p) % 37) % 256);
  }
  return s;
}

// Five training batches of 4 records (20 examples) and a test batch of 3.
void write_cifar(const temp_dir& dir) {
  for (int b = 0; b < 5; ++b) {
    dir.write("data_batch_" + std::to_string(b + 1) + ".bin", cifar_records(4 * static_cast<std::size_t>(b), 4));
  }
  dir.write("test_batch.bin", cifar_records(50, 3));
}

data_spec cifar_spec(const temp_dir& dir, bool standardize) {
  data_spec spec;
  spec.dataset = dataset_kind::cifar10;
  spec.dir = dir.str();
  spec.partition = partition_kind::iid;
  spec.standardize = standardize;
  return spec;
}

constexpr int kNodes = 4;
constexpr std::uint64_t kSeed = 99;

}  // namespace

TEST_CASE("load_shard cifar10: each node holds its iid shard of the 20 examples and the whole test set") {
  const temp_dir dir("load_cifar");
  write_cifar(dir);
  const dataset whole = load_cifar10(dir.str(), split::train);
  std::size_t held = 0;
  for (int rank = 0; rank < kNodes; ++rank) {
    const data_split d = load_shard(cifar_spec(dir, false), kNodes, rank, kSeed);
    CHECK(d.total_train == 20);
    CHECK(d.train.size == 5);
    CHECK(d.train.shape == image_shape{3, 32, 32});
    CHECK(d.test.size == 3);
    CHECK(d.test.features == load_cifar10(dir.str(), split::test).features);
    CHECK(d.standardization.empty());
    const dataset expected = whole.subset(partition_iid(20, kNodes, rank, kSeed));
    CHECK(d.train.features == expected.features);
    CHECK(d.train.labels == expected.labels);
    held += d.train.size;
  }
  CHECK(held == 20);
}

TEST_CASE("load_shard cifar10 standardized: statistics of the whole training set, applied to shards and test") {
  const temp_dir dir("load_cifar_std");
  write_cifar(dir);
  dataset whole = load_cifar10(dir.str(), split::train);
  dataset test = load_cifar10(dir.str(), split::test);
  const channel_stats stats = measure_channels(whole);
  standardize(whole, stats);
  standardize(test, stats);

  dataset all_shards;  // the shards of the four nodes together
  for (int rank = 0; rank < kNodes; ++rank) {
    const data_split d = load_shard(cifar_spec(dir, true), kNodes, rank, kSeed);
    REQUIRE(d.standardization.mean.size() == 3);
    CHECK(d.standardization.mean == stats.mean);
    CHECK(d.standardization.stddev == stats.stddev);
    CHECK(d.train.features == whole.subset(partition_iid(20, kNodes, rank, kSeed)).features);
    CHECK(d.test.features == test.features);
    all_shards.features.insert(all_shards.features.end(), d.train.features.begin(), d.train.features.end());
    all_shards.size += d.train.size;
  }
  all_shards.dim = 3072;
  all_shards.shape = {3, 32, 32};
  const channel_stats after = measure_channels(all_shards);
  for (std::size_t c = 0; c < 3; ++c) {
    CAPTURE(c);
    CHECK(std::fabs(after.mean[c]) < 1e-5);
    CHECK(std::fabs(after.stddev[c] - 1.0) < 1e-5);
  }
}

TEST_CASE("load_shard npy: train and test share the larger class count; their image shapes must agree") {
  const temp_dir dir("load_npy");
  dir.write("train_images.npy", npy_file("|u1", "(4, 6, 6)", std::string(144, '\x20')));
  dir.write("train_labels.npy", npy_file("|u1", "(4,)", bytes_of<std::uint8_t>({0, 1, 2, 3})));
  dir.write("test_images.npy", npy_file("|u1", "(2, 6, 6)", std::string(72, '\x40')));
  dir.write("test_labels.npy", npy_file("<i8", "(2,)", bytes_of<std::int64_t>({5, 0})));
  data_spec spec;
  spec.dataset = dataset_kind::npy;
  spec.dir = dir.str();
  const data_split d = load_shard(spec, 2, 1, kSeed);
  CHECK(d.train.size == 2);
  CHECK(d.total_train == 4);
  CHECK(d.train.classes == 6);
  CHECK(d.test.classes == 6);
  CHECK(d.train.shape == image_shape{1, 6, 6});

  dir.write("test_images.npy", npy_file("|u1", "(2, 6, 5)", std::string(60, '\x40')));
  CHECK(error_of([&] { (void)load_shard(spec, 2, 1, kSeed); }) ==
        dir.file("test_images.npy") + ": images are 1x6x5, train_images.npy's are 1x6x6");
}

TEST_CASE("data sets and partitions are named by one table each") {
  CHECK(parse_name<dataset_kind>("fashion-mnist") == dataset_kind::fashion_mnist);
  CHECK_FALSE(parse_name<dataset_kind>("imagenet").has_value());  // the config loader says which exist
  CHECK(name_list<dataset_kind>() == "fashion-mnist, cifar10, npy, synthetic");
  CHECK(name_of(partition_kind::label) == "label");
}

// Issue 31, item 7: a missing data.dir was found only once every node had started and loaded;
// `qgossip launch` now checks the files first, reading none of them.
TEST_CASE("check_data_files: names the first missing file and the folder it was looked for in") {
  const temp_dir dir("check_files");
  data_spec spec = cifar_spec(dir, false);
  auto error = [&] {
    try {
      check_data_files(spec);
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error().starts_with("data.dir " + dir.str() + " has no data_batch_1.bin (a relative data.dir is read from"));
  write_cifar(dir);
  CHECK(error() == "(no error)");
  spec.dataset = dataset_kind::npy;
  CHECK(error().starts_with("data.dir " + dir.str() + " has no train_images.npy"));
  spec.dataset = dataset_kind::synthetic;
  CHECK(error() == "(no error)");
  spec.dataset = dataset_kind::fashion_mnist;
  CHECK(error().starts_with("data.dir " + dir.str() + " has no train-images-idx3-ubyte.gz"));
}
