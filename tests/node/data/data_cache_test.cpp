// The data cache (node/data/data_cache.hpp): load_shard with the cache on gives bit for bit what it
// gives with the cache off (Fashion-MNIST from its Debian package, .npy images written here), the
// second start maps the file instead of decoding, and a truncated, corrupt, stale or unwritable
// cache is rebuilt or bypassed with a logged reason.
#include "node/data/data_cache.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node/data/idx_reader.hpp"
#include "node/data/load.hpp"
#include "tests/node/data/data_files.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

// The log lines load_shard gives (thread-safe: the concurrency test shares one).
struct log_lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  data_log sink() {
    return [this](const std::string& line) {
      const std::lock_guard<std::mutex> hold(mutex);
      lines.push_back(line);
    };
  }
  std::size_t count(const std::string& part) {
    const std::lock_guard<std::mutex> hold(mutex);
    std::size_t n = 0;
    for (const auto& l : lines) n += contains(l, part) ? 1 : 0;
    return n;
  }
};

// Every field of a and b, the features bit for bit.
void check_same(const data_split& a, const data_split& b) {
  CHECK(a.total_train == b.total_train);
  CHECK(a.train.size == b.train.size);
  CHECK(a.train.dim == b.train.dim);
  CHECK(a.train.classes == b.train.classes);
  CHECK(a.train.shape == b.train.shape);
  CHECK(std::memcmp(a.train.features.data(), b.train.features.data(), a.train.features.size() * 4) == 0);
  CHECK(a.train.features.size() == b.train.features.size());
  CHECK(a.train.labels == b.train.labels);
  CHECK(a.test.size == b.test.size);
  CHECK(a.test.classes == b.test.classes);
  CHECK(a.test.features.size() == b.test.features.size());
  CHECK(std::memcmp(a.test.features.data(), b.test.features.data(), a.test.features.size() * 4) == 0);
  CHECK(a.test.labels == b.test.labels);
  CHECK(a.standardization.mean == b.standardization.mean);
  CHECK(a.standardization.stddev == b.standardization.stddev);
}

// 24 training and 7 test RGB images 5x6 (HWC float32, channels last) with 3 classes.
void write_npy_set(const temp_dir& dir) {
  auto images = [](std::size_t n, std::size_t salt) {
    std::vector<float> v(n * 5 * 6 * 3);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 + salt) % 101) / 7.0f - 3.0f;
    return v;
  };
  auto labels = [](std::size_t n) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 7) % 3);
    return v;
  };
  dir.write("train_images.npy", npy_file("<f4", "(24, 5, 6, 3)", bytes_of(images(24, 1))));
  dir.write("train_labels.npy", npy_file("|u1", "(24,)", bytes_of(labels(24))));
  dir.write("test_images.npy", npy_file("<f4", "(7, 5, 6, 3)", bytes_of(images(7, 5))));
  dir.write("test_labels.npy", npy_file("|u1", "(7,)", bytes_of(labels(7))));
}

data_spec npy_spec(const temp_dir& data, const temp_dir& cache) {
  data_spec spec;
  spec.dataset = dataset_kind::npy;
  spec.dir = data.str();
  spec.cache_dir = cache.str();
  return spec;
}

data_spec uncached(data_spec spec) {
  spec.cache = false;
  return spec;
}

constexpr std::uint64_t kSeed = 7;

}  // namespace

TEST_CASE("data cache, npy: cached and uncached shards are identical; the second start maps the file") {
  const temp_dir data("cache_npy"), cache("cache_npy_dir");
  write_npy_set(data);
  for (const bool standardize : {true, false}) {
    for (const partition_kind partition : {partition_kind::iid, partition_kind::label}) {
      CAPTURE(standardize);
      CAPTURE(partition);
      data_spec spec = npy_spec(data, cache);
      spec.standardize = standardize;
      spec.partition = partition;
      spec.skew = 0.5;
      for (int rank = 0; rank < 3; ++rank) {
        log_lines log;
        const data_split with = load_shard(spec, 3, rank, kSeed, log.sink());
        const data_split without = load_shard(uncached(spec), 3, rank, kSeed, log.sink());
        check_same(with, without);
        // Only the very first call builds the file; all later ones map it.
        CHECK(log.count("building") == (standardize && partition == partition_kind::iid && rank == 0 ? 1 : 0));
        CHECK(log.count("warning") == 0);
      }
    }
  }
  CHECK(fs::exists(data_cache_path(cache.str(), npy_spec(data, cache))));
}

TEST_CASE("data cache, Fashion-MNIST from its Debian package: cached (built, then mapped) == uncached") {
  if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: " << kFashionMnistDir << " is not installed (Debian package dataset-fashion-mnist)");
    return;
  }
  const temp_dir cache("cache_fmnist");
  data_spec spec;
  spec.dataset = dataset_kind::fashion_mnist;
  spec.dir = kFashionMnistDir;
  spec.standardize = true;
  spec.cache_dir = cache.str();
  log_lines log;
  const data_split without = load_shard(uncached(spec), 8, 5, kSeed, log.sink());
  const data_split built = load_shard(spec, 8, 5, kSeed, log.sink());
  CHECK(log.count("building") == 1);
  const data_split mapped = load_shard(spec, 8, 5, kSeed, log.sink());
  CHECK(log.count("building") == 1);
  CHECK(without.total_train == 60000);
  CHECK(without.test.size == 10000);
  CHECK(without.standardization.mean.size() == 1);
  check_same(built, without);
  check_same(mapped, without);
}

TEST_CASE("data cache: a truncated, corrupt or stale file is rebuilt, saying why") {
  const temp_dir data("cache_bad"), cache("cache_bad_dir");
  write_npy_set(data);
  const data_spec spec = npy_spec(data, cache);
  const data_split expected = load_shard(uncached(spec), 2, 1, kSeed);
  const std::string path = data_cache_path(cache.str(), spec);
  log_lines log;
  check_same(load_shard(spec, 2, 1, kSeed, log.sink()), expected);
  REQUIRE(log.count("building") == 1);
  CHECK(log.count("no cache file yet") == 1);

  SUBCASE("truncated") {
    fs::resize_file(path, fs::file_size(path) - 10);
    check_same(load_shard(spec, 2, 1, kSeed, log.sink()), expected);
    CHECK(log.count("(truncated: ") == 1);
  }
  SUBCASE("truncated inside the header") {
    fs::resize_file(path, 100);
    check_same(load_shard(spec, 2, 1, kSeed, log.sink()), expected);
    CHECK(log.count("shorter than the 128-byte header") == 1);
  }
  auto flip = [&](std::uintmax_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x10));
  };
  SUBCASE("one flipped byte in the features: found by a node that copies that row") {
    flip(fs::file_size(path) / 2);  // in the training features (24 rows of 360 bytes, 7 test rows)
    // With n = 1 the node copies every row.
    check_same(load_shard(spec, 1, 0, kSeed, log.sink()), load_shard(uncached(spec), 1, 0, kSeed));
    CHECK(log.count("(checksum mismatch in training row ") == 1);
  }
  SUBCASE("one flipped byte in the labels") {
    flip(fs::file_size(path) - 1);  // the last test label
    check_same(load_shard(spec, 2, 1, kSeed, log.sink()), expected);
    CHECK(log.count("(checksum mismatch in the statistics, row checksums or labels)") == 1);
  }
  SUBCASE("a source file changed (another size)") {
    data.write("test_labels.npy", npy_file("|u1", "(7,)", bytes_of<std::uint8_t>({2, 2, 2, 2, 2, 2, 2})));
    const data_split changed = load_shard(spec, 2, 1, kSeed, log.sink());
    CHECK(log.count("made from other source files") == 1);
    check_same(changed, load_shard(uncached(spec), 2, 1, kSeed));
    CHECK(changed.test.labels == std::vector<std::uint8_t>(7, 2));
  }
  // After the rebuild the file is good again: mapped, no further rebuild.
  check_same(load_shard(spec, 2, 1, kSeed, log.sink()), load_shard(uncached(spec), 2, 1, kSeed));
  CHECK(log.count("building") == 2);
  CHECK(!fs::exists(path + ".tmp"));
}

TEST_CASE("data cache: a directory that cannot be created means decoding in memory, with one warning") {
  const temp_dir data("cache_unwritable"), scratch("cache_unwritable_dir");
  write_npy_set(data);
  data_spec spec = npy_spec(data, scratch);
  spec.cache_dir = scratch.write("a_file", "x") + "/qgossip";  // below a regular file: ENOTDIR, even for root
  log_lines log;
  check_same(load_shard(spec, 2, 0, kSeed, log.sink()), load_shard(uncached(spec), 2, 0, kSeed));
  REQUIRE(log.lines.size() == 1);
  CHECK(starts_with(log.lines[0], "warning: data cache not used ("));
  CHECK(contains(log.lines[0], "a_file/qgossip: cannot create"));
}

TEST_CASE("data cache: nodes starting at once build it once; the others wait and map it") {
  const temp_dir data("cache_race"), cache("cache_race_dir");
  write_npy_set(data);
  const data_spec spec = npy_spec(data, cache);
  constexpr int kNodes = 6;
  log_lines log;
  std::vector<data_split> got(kNodes);
  std::vector<std::thread> nodes;
  for (int rank = 0; rank < kNodes; ++rank)
    nodes.emplace_back([&, rank] { got[rank] = load_shard(spec, kNodes, rank, kSeed, log.sink()); });
  for (auto& t : nodes) t.join();
  CHECK(log.count("building") == 1);
  CHECK(log.lines.size() == 1);
  for (int rank = 0; rank < kNodes; ++rank) check_same(got[rank], load_shard(uncached(spec), kNodes, rank, kSeed));
}

TEST_CASE("data cache: synthetic data are never cached; a missing source file is the decoder's error") {
  const temp_dir cache("cache_synthetic");
  data_spec spec;
  spec.dataset = dataset_kind::synthetic;
  spec.cache_dir = cache.str();
  log_lines log;
  check_same(load_shard(spec, 2, 0, kSeed, log.sink()), load_shard(uncached(spec), 2, 0, kSeed));
  CHECK(log.lines.empty());
  CHECK(fs::is_empty(cache.str()));

  const temp_dir empty("cache_missing");
  spec = npy_spec(empty, cache);
  CHECK(contains(error_of([&] { (void)load_shard(spec, 2, 0, kSeed, log.sink()); }), "train_images.npy"));
  CHECK(log.lines.empty());
}
