#pragma once
// A node's data: the whole test set and its own shard of the training set, as the `data:` section
// says (node/data/data_spec.hpp). Throws config_error naming the file and what was expected for
// anything missing or malformed.
#include <cstddef>
#include <cstdint>

#include "node/data/data_spec.hpp"
#include "node/data/dataset.hpp"

namespace qgossip {

struct data_split {
  dataset train;                  // this node's shard only
  dataset test;                   // the whole test set
  std::size_t total_train = 0;    // examples in the whole training set (every node knows it)
};

// Loads the data set, standardizes it when spec.standardize (statistics of the whole training set),
// and keeps rank's shard of the training set (spec.partition over n nodes, seeded).
[[nodiscard]] data_split load_shard(const data_spec& spec, int n, int rank, std::uint64_t seed);

}  // namespace qgossip
