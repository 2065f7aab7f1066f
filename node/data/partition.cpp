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

void check_labels(std::span<const std::uint8_t> labels, std::size_t classes) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) {
      throw config_error("partition: label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " >= classes " + std::to_string(classes));
    }
  }
}

// Where each node's piece of `count` items starts when cut at the cumulative proportions p
// (starts[n] = count).
std::vector<std::size_t> cuts(std::size_t count, const std::vector<double>& p) {
  std::vector<std::size_t> starts(p.size() + 1, count);
  double cumulative = 0.0;
  for (std::size_t r = 0; r < p.size(); ++r) {
    starts[r] =
        std::min(count, static_cast<std::size_t>(std::floor(cumulative * static_cast<double>(count))));
    cumulative += p[r];
  }
  return starts;
}

// Dir(alpha, ..., alpha) over n nodes; empty when every Gamma draw underflowed to 0.
std::vector<double> dirichlet(int n, double alpha, std::mt19937_64& rng) {
  std::vector<double> p(static_cast<std::size_t>(n));
  double sum = 0.0;
  for (double& x : p) sum += (x = standard_gamma(rng, alpha));
  if (!(sum > 0.0)) return {};
  for (double& x : p) x /= sum;
  return p;
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
  check_labels(labels, classes);

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

std::vector<std::size_t> partition_dirichlet(std::span<const std::uint8_t> labels, std::size_t classes,
                                             int n_nodes, int rank, std::uint64_t seed, double alpha,
                                             std::size_t min_examples) {
  const std::size_t n = labels.size();
  check_nodes(n, n_nodes, rank);
  if (!(alpha > 0.0 && std::isfinite(alpha)))
    throw config_error("partition: alpha must be a positive number, got " + std::to_string(alpha));
  if (min_examples * static_cast<std::size_t>(n_nodes) > n)
    throw config_error("partition: " + std::to_string(n) + " examples cannot give each of " +
                       std::to_string(n_nodes) + " nodes " + std::to_string(min_examples));
  check_labels(labels, classes);
  // Each class's examples in the order of the seeded shuffle.
  std::vector<std::vector<std::size_t>> by_class(classes);
  for (std::size_t i : shuffled_indices(n, seed)) by_class[labels[i]].push_back(i);

  constexpr int kDraws = 1000;
  const auto nodes = static_cast<std::size_t>(n_nodes);
  for (int draw = 0; draw < kDraws; ++draw) {
    std::mt19937_64 rng(derive_seed(seed, 0xd1c7ULL + static_cast<std::uint64_t>(draw)));
    std::vector<std::vector<std::size_t>> starts(classes);
    std::vector<std::size_t> sizes(nodes, 0);
    bool drawn = true;
    for (std::size_t c = 0; c < classes && drawn; ++c) {
      const std::vector<double> p = dirichlet(n_nodes, alpha, rng);
      drawn = !p.empty();
      if (!drawn) break;
      starts[c] = cuts(by_class[c].size(), p);
      for (std::size_t r = 0; r < nodes; ++r) sizes[r] += starts[c][r + 1] - starts[c][r];
    }
    if (!drawn || *std::min_element(sizes.begin(), sizes.end()) < min_examples) continue;
    std::vector<std::size_t> shard;
    const auto r = static_cast<std::size_t>(rank);
    for (std::size_t c = 0; c < classes; ++c)
      shard.insert(shard.end(), by_class[c].begin() + static_cast<std::ptrdiff_t>(starts[c][r]),
                   by_class[c].begin() + static_cast<std::ptrdiff_t>(starts[c][r + 1]));
    std::sort(shard.begin(), shard.end());
    return shard;
  }
  throw config_error("partition: dirichlet with alpha " + std::to_string(alpha) +
                     " left some node with fewer than " + std::to_string(min_examples) +
                     " examples in each of " + std::to_string(kDraws) +
                     " draws; raise data.alpha or use fewer nodes");
}

}  // namespace qgossip
