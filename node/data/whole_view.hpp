#pragma once
// The whole data set (training and test sets, before standardization and sharding) and the
// statistics of its whole training set, wherever they lie: in a node's memory after decoding, or in
// a data cache file mapped read-only (node/data/data_cache_file.hpp). A node copies its own shard
// and the test set out of it (load.hpp's load_shard).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/errors.hpp"

#include "node/data/dataset.hpp"
#include "node/data/standardize.hpp"

namespace qgossip {

struct whole_view {
  std::size_t train_size = 0, test_size = 0, dim = 0, classes = 0;
  image_shape shape;
  std::span<const float> train_features;  // train_size × dim, row-major, unstandardized
  std::span<const float> test_features;   // test_size × dim
  std::span<const std::uint8_t> train_labels, test_labels;
  // From a cache file: the CRC32C of each row's features, checked as the row is copied (a node reads
  // only its shard, so it checks only that); empty for data in memory.
  std::span<const std::uint32_t> train_row_crc, test_row_crc;
  channel_stats stats;  // measure_channels of the whole training set
};

// A row of a mapped cache file failed its checksum (load_shard rebuilds the file and tries again).
class data_cache_corrupt : public config_error {
 public:
  using config_error::config_error;
};

// A view of data sets held in memory (they must outlive it), with their statistics.
[[nodiscard]] inline whole_view view_of(const dataset& train, const dataset& test, channel_stats stats) {
  whole_view v;
  v.train_size = train.size;
  v.test_size = test.size;
  v.dim = train.dim;
  v.classes = train.classes;
  v.shape = train.shape;
  v.train_features = train.features;
  v.test_features = test.features;
  v.train_labels = train.labels;
  v.test_labels = test.labels;
  v.stats = std::move(stats);
  return v;
}

}  // namespace qgossip
