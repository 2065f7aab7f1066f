#include "node/data/load.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "node/data/cifar10.hpp"
#include "node/data/idx_reader.hpp"
#include "node/data/npy_images.hpp"
#include "node/data/partition.hpp"
#include "node/data/synthetic.hpp"

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

// The whole training and test sets, before standardization and sharding.
data_split load_whole(const data_spec& spec, std::uint64_t seed) {
  data_split out;
  if (spec.dataset == "fashion-mnist") {
    out.train = load_fashion_mnist(spec.dir, split::train);
    out.test = load_fashion_mnist(spec.dir, split::test);
  } else if (spec.dataset == "cifar10") {
    out.train = load_cifar10(spec.dir, split::train);
    out.test = load_cifar10(spec.dir, split::test);
  } else if (spec.dataset == "npy") {
    out.train = load_npy_images(spec.dir, split::train);
    out.test = load_npy_images(spec.dir, split::test);
    // Each file's class count is its largest label + 1; a model needs one count for both.
    out.train.classes = out.test.classes = std::max(out.train.classes, out.test.classes);
    if (out.train.shape != out.test.shape) {
      throw config_error(spec.dir + "/test_images.npy", 0, 0,
                         "images are " + shape_text(out.test.shape) + ", train_images.npy's are " +
                             shape_text(out.train.shape));
    }
  } else if (spec.dataset == "synthetic") {
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
  } else {
    throw config_error("data.dataset: unknown data set '" + spec.dataset +
                       "' (expected fashion-mnist, cifar10, npy or synthetic)");
  }
  return out;
}

}  // namespace

std::vector<std::size_t> shard_indices(const data_spec& spec, const dataset& train, int n, int rank,
                                       std::uint64_t seed) {
  return spec.partition == "iid" ? partition_iid(train.size, n, rank, seed)
                                 : partition_by_label(train.labels, train.classes, n, rank, seed, spec.skew);
}

data_split load_shard(const data_spec& spec, int n, int rank, std::uint64_t seed) {
  data_split d = load_whole(spec, seed);
  d.total_train = d.train.size;
  // The statistics come from the whole training set (the same on every node); only the shard this
  // node keeps and the test set are then standardized.
  if (spec.standardize) d.standardization = measure_channels(d.train);
  const std::vector<std::size_t> shard = shard_indices(spec, d.train, n, rank, seed);
  d.train = d.train.subset(shard);
  if (spec.standardize) {
    standardize(d.train, d.standardization);
    standardize(d.test, d.standardization);
  }
  return d;
}

}  // namespace qgossip
