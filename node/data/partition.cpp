#include "node/data/partition.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>

#include "core/errors.hpp"
#include "core/portable_random.hpp"

namespace qgossip {
namespace {

void check_nodes(std::size_t n_examples, int n_nodes, int rank) {
  if (n_nodes < 1) throw config_error("partition: n_nodes must be >= 1, got " + std::to_string(n_nodes));
  if (rank < 0 || rank >= n_nodes) {
    throw config_error("partition: rank " + std::to_string(rank) + " outside 0.." +
                       std::to_string(n_nodes - 1));
  }
  if (n_examples < static_cast<std::size_t>(n_nodes)) {
    throw config_error("partition: " + std::to_string(n_examples) + " examples cannot give each of " +
                       std::to_string(n_nodes) + " nodes at least one");
  }
}

// Start of rank r's piece when `total` items are cut into n nearly equal contiguous pieces.
std::size_t piece_begin(std::size_t total, int n, int r) {
  return total * static_cast<std::size_t>(r) / static_cast<std::size_t>(n);
}

std::vector<std::size_t> shuffled_indices(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> perm(n);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::mt19937_64 rng(derive_seed(seed, 0x9a27));
  portable_shuffle(std::span<std::size_t>(perm), rng);
  return perm;
}

}  // namespace

std::vector<std::size_t> partition_iid(std::size_t n_examples, int n_nodes, int rank, std::uint64_t seed) {
  check_nodes(n_examples, n_nodes, rank);
  const std::vector<std::size_t> perm = shuffled_indices(n_examples, seed);
  std::vector<std::size_t> shard(perm.begin() + piece_begin(n_examples, n_nodes, rank),
                                 perm.begin() + piece_begin(n_examples, n_nodes, rank + 1));
  std::sort(shard.begin(), shard.end());
  return shard;
}

std::vector<std::size_t> partition_by_label(std::span<const std::uint8_t> labels, std::size_t classes,
                                            int n_nodes, int rank, std::uint64_t seed, double skew) {
  const std::size_t n = labels.size();
  check_nodes(n, n_nodes, rank);
  if (!(skew >= 0.0 && skew <= 1.0)) {
    throw config_error("partition: skew must be in [0, 1], got " + std::to_string(skew));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (labels[i] >= classes) {
      throw config_error("partition: label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " >= classes " + std::to_string(classes));
    }
  }

  // Shard sizes s_r and their skewed parts k_r; prefix sums give each piece's offset.
  std::size_t skewed_total = 0, skewed_before = 0, iid_before = 0;
  for (int r = 0; r < n_nodes; ++r) {
    const std::size_t s = piece_begin(n, n_nodes, r + 1) - piece_begin(n, n_nodes, r);
    const auto k = static_cast<std::size_t>(std::floor(skew * static_cast<double>(s)));
    if (r < rank) {
      skewed_before += k;
      iid_before += s - k;
    }
    skewed_total += k;
  }
  const std::size_t s_rank = piece_begin(n, n_nodes, rank + 1) - piece_begin(n, n_nodes, rank);
  const auto k_rank = static_cast<std::size_t>(std::floor(skew * static_cast<double>(s_rank)));

  std::vector<std::size_t> perm = shuffled_indices(n, seed);
  // Stable: within a label the shuffled order survives, so a node's examples of a label are random.
  std::stable_sort(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(skewed_total),
                   [&](std::size_t a, std::size_t b) { return labels[a] < labels[b]; });

  std::vector<std::size_t> shard;
  shard.reserve(s_rank);
  const auto skewed_begin = perm.begin() + static_cast<std::ptrdiff_t>(skewed_before);
  shard.insert(shard.end(), skewed_begin, skewed_begin + static_cast<std::ptrdiff_t>(k_rank));
  const auto iid_begin = perm.begin() + static_cast<std::ptrdiff_t>(skewed_total + iid_before);
  shard.insert(shard.end(), iid_begin, iid_begin + static_cast<std::ptrdiff_t>(s_rank - k_rank));
  std::sort(shard.begin(), shard.end());
  return shard;
}

}  // namespace qgossip
