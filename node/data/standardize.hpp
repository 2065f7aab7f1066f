#pragma once
// Per-channel standardization: x -> (x - mean[c]) / stddev[c], with the mean and the (population)
// standard deviation of channel c measured once on the whole training set, so that every node
// applies the same numbers to its shard and to the test set.
// An image data set has one channel per image channel (all its pixels in all examples); any other
// data set counts as a single channel over all its features.
#include <cstddef>
#include <vector>

#include "node/data/dataset.hpp"

namespace qgossip {

struct channel_stats {
  std::vector<double> mean;    // one per channel; empty: no standardization
  std::vector<double> stddev;  // the same length; sqrt of the mean squared deviation
  [[nodiscard]] bool empty() const { return mean.empty(); }
};

// The channels of d: d.shape.channels for images, 1 otherwise.
[[nodiscard]] std::size_t channel_count(const dataset& d);

// Measures each channel over all examples of d, in double (two passes: the mean, then the spread).
// REQUIRES (invariant_error otherwise): d.size > 0, d.dim > 0, d.features.size() == d.size·d.dim.
[[nodiscard]] channel_stats measure_channels(const dataset& d);

// Applies (x - mean) / stddev per channel in place; a stddev of 0 (a constant channel) is taken as 1.
// REQUIRES (invariant_error otherwise): s has channel_count(d) entries in both vectors,
// d.features.size() == d.size·d.dim.
void standardize(dataset& d, const channel_stats& s);

}  // namespace qgossip
