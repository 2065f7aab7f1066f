#pragma once
// A node's data: the whole test set and its own shard of the training set, as the `data:` section
// says (node/data/data_spec.hpp). Throws config_error naming the file and what was expected for
// anything missing or malformed.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "node/data/data_cache.hpp"
#include "node/data/data_spec.hpp"
#include "node/data/dataset.hpp"
#include "node/data/standardize.hpp"

namespace qgossip {

struct data_split {
  dataset train;                  // this node's shard only
  dataset test;                   // the whole test set
  std::size_t total_train = 0;    // examples in the whole training set (every node knows it)
  channel_stats standardization;  // what train and test were standardized with; empty when off
};

// Loads the data set (spec.dataset: fashion-mnist, cifar10 or npy from spec.dir; synthetic
// generated from seed), standardizes train and test when spec.standardize (per channel, statistics
// of the whole training set, before sharding: the same on every node), and keeps rank's shard of
// the training set (spec.partition over n nodes, seeded). For npy, train and test get the larger of
// their two class counts. An unknown spec.dataset is a config_error.
// With spec.cache (the default) the decoded whole data set comes from the data cache
// (node/data/data_cache.hpp), bit for bit the same as decoding it here; `log` receives its one-line
// notes (a rebuild and why, a warning when it cannot be used); null: stderr, "qgossip: " first.
[[nodiscard]] data_split load_shard(const data_spec& spec, int n, int rank, std::uint64_t seed,
                                    const data_log& log = nullptr);

// Before any node starts (`qgossip launch`): throws config_error naming the first file that
// spec.dataset needs and spec.dir lacks, with what provides it (the Debian package for its own
// folder; else the folder as given, relative to the current one). Reads no file; synthetic: nothing.
void check_data_files(const data_spec& spec);

// The indices (into the whole training set `train`, sorted ascending) of rank's shard, as
// load_shard keeps them: spec.partition (iid or label with spec.skew) over n nodes, seeded.
// `qgossip shards` writes these for other trainers (bench/peers/) to train on the same shards.
[[nodiscard]] std::vector<std::size_t> shard_indices(const data_spec& spec, const dataset& train, int n, int rank,
                                                     std::uint64_t seed);

}  // namespace qgossip
