#include "node/data/load.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "node/data/cifar10.hpp"
#include "node/data/data_cache.hpp"
#include "node/data/idx_reader.hpp"
#include "node/data/npy_images.hpp"
#include "node/data/partition.hpp"
#include "node/data/synthetic.hpp"
#include "core/crc32c.hpp"

namespace qgossip {

namespace {

std::string shape_text(const image_shape& s) {
  return std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width);
}

std::vector<std::size_t> range(std::size_t from, std::size_t count) {
  std::vector<std::size_t> v(count);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// A data set of v's shape holding the given rows of features/labels (train or test of v), in order.
// With row CRCs (a mapped cache file) each row is checked as it is copied: data_cache_corrupt names
// the first bad one. The features are appended, not zero-filled first (one pass over fresh pages).
dataset rows_of(const whole_view& v, std::span<const float> features, std::span<const std::uint8_t> labels,
                std::span<const std::uint32_t> row_crc, const std::vector<std::size_t>& rows, const char* which) {
  dataset out;
  out.size = rows.size();
  out.dim = v.dim;
  out.classes = v.classes;
  out.shape = v.shape;
  out.features.reserve(rows.size() * v.dim);
  out.labels.resize(rows.size());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    QG_ENFORCE(rows[k] < labels.size(), "row " << rows[k] << " of " << labels.size());
    const std::span<const float> row = features.subspan(rows[k] * v.dim, v.dim);
    if (!row_crc.empty() && crc32c(std::as_bytes(row)) != row_crc[rows[k]])
      throw data_cache_corrupt(std::string("checksum mismatch in ") + which + " row " + std::to_string(rows[k]));
    out.features.insert(out.features.end(), row.begin(), row.end());
    out.labels[k] = labels[rows[k]];
  }
  return out;
}

// The whole training and test sets, before standardization and sharding.
std::pair<dataset, dataset> load_whole(const data_spec& spec, std::uint64_t seed) {
  data_split out;
  switch (spec.dataset) {
  case dataset_kind::fashion_mnist:
    out.train = load_fashion_mnist(spec.dir, split::train);
    out.test = load_fashion_mnist(spec.dir, split::test);
    break;
  case dataset_kind::cifar10:
    out.train = load_cifar10(spec.dir, split::train);
    out.test = load_cifar10(spec.dir, split::test);
    break;
  case dataset_kind::npy:
    out.train = load_npy_images(spec.dir, split::train);
    out.test = load_npy_images(spec.dir, split::test);
    // Each file's class count is its largest label + 1; a model needs one count for both.
    out.train.classes = out.test.classes = std::max(out.train.classes, out.test.classes);
    if (out.train.shape != out.test.shape) {
      throw config_error(spec.dir + "/test_images.npy", 0, 0,
                         "images are " + shape_text(out.test.shape) + ", train_images.npy's are " +
                             shape_text(out.train.shape));
    }
    break;
  case dataset_kind::synthetic: {
    synthetic_options o;
    const auto train = static_cast<std::size_t>(spec.synthetic_train);
    o.size = train + static_cast<std::size_t>(spec.synthetic_test);
    o.dim = static_cast<std::size_t>(spec.synthetic_dim);
    o.classes = static_cast<std::size_t>(spec.synthetic_classes);
    o.noise = spec.synthetic_noise;
    o.seed = seed;
    const dataset all = make_synthetic(o);
    out.train = all.subset(range(0, train));
    out.test = all.subset(range(train, o.size - train));
    break;
  }
  }
  return {std::move(out.train), std::move(out.test)};
}

// rank's shard of v's training set and the whole test set, standardized with v's statistics when
// spec.standardize: the same numbers whether v lies in memory or in a mapped cache file.
data_split shard_of(const whole_view& v, const data_spec& spec, int n, int rank, std::uint64_t seed) {
  dataset labels_only;  // all shard_indices reads: size, classes, labels
  labels_only.size = v.train_size;
  labels_only.classes = v.classes;
  labels_only.labels.assign(v.train_labels.begin(), v.train_labels.end());
  const std::vector<std::size_t> shard = shard_indices(spec, labels_only, n, rank, seed);
  data_split d;
  d.total_train = v.train_size;
  d.train = rows_of(v, v.train_features, v.train_labels, v.train_row_crc, shard, "training");
  d.test = rows_of(v, v.test_features, v.test_labels, v.test_row_crc, range(0, v.test_size), "test");
  if (spec.standardize) {
    QG_ENFORCE(!v.stats.empty(), "standardization without statistics");
    d.standardization = v.stats;
    standardize(d.train, d.standardization);
    standardize(d.test, d.standardization);
  }
  return d;
}

}  // namespace

void check_data_files(const data_spec& spec) {
  std::vector<std::string> files;  // the loaders' own lists, train then test
  for (const split which : {split::train, split::test}) {
    switch (spec.dataset) {
    case dataset_kind::fashion_mnist:
      for (const std::string& f : fashion_mnist_files(which)) files.push_back(f);
      break;
    case dataset_kind::cifar10:
      for (const std::string& f : cifar10_files(which)) files.push_back(f);
      break;
    case dataset_kind::npy:
      for (const std::string& f : npy_image_files(which)) files.push_back(f);
      break;
    case dataset_kind::synthetic:
      return;
    }
  }
  const std::filesystem::path dir(spec.dir);
  for (const std::string& f : files) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / f, ec)) continue;
    const bool packaged = spec.dataset == dataset_kind::fashion_mnist && is_packaged_fashion_mnist(spec.dir);
    throw config_error("data.dir " + spec.dir + " has no " + f +
                       (packaged ? ": install the Debian package dataset-fashion-mnist (scripts/setup.sh does)"
                                 : std::string(" (a relative data.dir is read from the folder qgossip runs in, ") +
                                       std::filesystem::current_path().string() + ")"));
  }
}

std::vector<std::size_t> shard_indices(const data_spec& spec, const dataset& train, int n, int rank,
                                       std::uint64_t seed) {
  switch (spec.partition) {
    case partition_kind::label:
      return partition_by_label(train.labels, train.classes, n, rank, seed, spec.skew);
    case partition_kind::dirichlet: {
      // At least 10 examples per node (or an equal share, when that is less), drawn again otherwise.
      const std::size_t least =
          std::min<std::size_t>(10, train.size / static_cast<std::size_t>(std::max(n, 1)));
      return partition_dirichlet(train.labels, train.classes, n, rank, seed, spec.alpha,
                                 std::max<std::size_t>(least, 1));
    }
    case partition_kind::iid:
      break;
  }
  return partition_iid(train.size, n, rank, seed);
}

data_split load_shard(const data_spec& spec, int n, int rank, std::uint64_t seed, const data_log& log) {
  auto decode = [&] { return load_whole(spec, seed); };
  const data_log to_stderr = [](const std::string& line) {
    std::fprintf(stderr, "qgossip: %s\n", line.c_str());
    std::fflush(stderr);
  };
  // The statistics come from the whole training set (the same on every node); only the shard this
  // node keeps and the test set are then standardized.
  if (!spec.cache || spec.dataset == dataset_kind::synthetic) {
    auto [train, test] = decode();
    channel_stats stats = spec.standardize ? measure_channels(train) : channel_stats{};
    return shard_of(view_of(train, test, std::move(stats)), spec, n, rank, seed);
  }
  const data_log& to = log ? log : to_stderr;
  const whole_source whole = load_whole_cached(spec, decode, to);
  try {
    return shard_of(whole.view(), spec, n, rank, seed);
  } catch (const data_cache_corrupt& e) {
    // A row this node needs is damaged: rebuild the file (unless another node already has).
    const whole_source rebuilt = load_whole_cached(spec, decode, to, cache_distrust{whole.file(), e.message()});
    return shard_of(rebuilt.view(), spec, n, rank, seed);
  }
}

}  // namespace qgossip
