#include "node/data/load.hpp"

#include <numeric>
#include <vector>

#include "node/data/idx_reader.hpp"
#include "node/data/partition.hpp"
#include "node/data/synthetic.hpp"

namespace qgossip {

namespace {

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
  } else {
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
  }
  return out;
}

}  // namespace

data_split load_shard(const data_spec& spec, int n, int rank, std::uint64_t seed) {
  data_split d = load_whole(spec, seed);
  d.total_train = d.train.size;
  const std::vector<std::size_t> shard =
      spec.partition == "iid" ? partition_iid(d.train.size, n, rank, seed)
                              : partition_by_label(d.train.labels, d.train.classes, n, rank, seed, spec.skew);
  d.train = d.train.subset(shard);
  return d;
}

}  // namespace qgossip
