// Partitioning: every example in exactly one shard, nearly equal shards, and the skew knob doing
// what partition.hpp says. Everything here is seeded, so results are exact, not statistical.
#include "node/data/partition.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "core/errors.hpp"
#include "node/data/dataset.hpp"
#include "node/data/synthetic.hpp"

using namespace qgossip;

namespace {

// All n shards; checks the contract shared by both partitioners along the way.
template <typename F>
std::vector<std::vector<std::size_t>> all_shards(std::size_t n_examples, int n_nodes, F shard_of) {
  std::vector<std::vector<std::size_t>> shards;
  std::vector<int> owner(n_examples, -1);
  for (int r = 0; r < n_nodes; ++r) {
    shards.push_back(shard_of(r));
    const auto& s = shards.back();
    CHECK(std::is_sorted(s.begin(), s.end()));
    // Sizes as documented: floor((r+1)N/n) - floor(rN/n), so they differ by at most one.
    CHECK(s.size() == (r + 1) * n_examples / n_nodes - r * n_examples / n_nodes);
    for (std::size_t i : s) {
      REQUIRE(i < n_examples);
      CHECK_MESSAGE(owner[i] == -1, "example " << i << " in shards " << owner[i] << " and " << r);
      owner[i] = r;
    }
  }
  CHECK(std::count(owner.begin(), owner.end(), -1) == 0);
  return shards;
}

std::vector<std::uint8_t> balanced_labels(std::size_t n, std::size_t classes) {
  std::vector<std::uint8_t> labels(n);
  for (std::size_t i = 0; i < n; ++i) labels[i] = static_cast<std::uint8_t>((i * 7) % classes);
  return labels;
}

std::set<int> labels_in(const std::vector<std::size_t>& shard, const std::vector<std::uint8_t>& labels) {
  std::set<int> out;
  for (std::size_t i : shard) out.insert(labels[i]);
  return out;
}

}  // namespace

TEST_CASE("iid partition covers every example exactly once in nearly equal shards") {
  for (std::size_t n_examples : {1u, 7u, 100u, 1001u}) {
    for (int n_nodes : {1, 3, 7, 8}) {
      if (n_examples < static_cast<std::size_t>(n_nodes)) continue;
      CAPTURE(n_examples);
      CAPTURE(n_nodes);
      all_shards(n_examples, n_nodes, [&](int r) { return partition_iid(n_examples, n_nodes, r, 42); });
    }
  }
}

TEST_CASE("iid partition is a function of the seed") {
  CHECK(partition_iid(1000, 4, 2, 5) == partition_iid(1000, 4, 2, 5));
  CHECK(partition_iid(1000, 4, 2, 5) != partition_iid(1000, 4, 2, 6));
  // Shuffled, not contiguous blocks of the original order.
  const auto s = partition_iid(1000, 4, 0, 5);
  CHECK(s.back() - s.front() > 500);
}

TEST_CASE("label partition covers every example exactly once for every skew") {
  for (std::size_t n_examples : {10u, 999u, 2000u}) {
    const auto labels = balanced_labels(n_examples, 10);
    for (int n_nodes : {1, 3, 8}) {
      for (double skew : {0.0, 0.3, 0.5, 0.99, 1.0}) {
        CAPTURE(n_examples);
        CAPTURE(n_nodes);
        CAPTURE(skew);
        all_shards(n_examples, n_nodes,
                   [&](int r) { return partition_by_label(labels, 10, n_nodes, r, 9, skew); });
      }
    }
  }
}

TEST_CASE("skew 0 is exactly the iid partition") {
  const auto labels = balanced_labels(1003, 10);
  for (int r = 0; r < 6; ++r)
    CHECK(partition_by_label(labels, 10, 6, r, 77, 0.0) == partition_iid(1003, 6, r, 77));
}

TEST_CASE("skew 1 gives each node only its own few labels") {
  const auto labels = balanced_labels(6000, 10);
  SUBCASE("5 nodes, 10 classes: exactly 2 labels each, all different") {
    std::set<int> seen;
    for (int r = 0; r < 5; ++r) {
      const auto own = labels_in(partition_by_label(labels, 10, 5, r, 3, 1.0), labels);
      CHECK(own.size() == 2);
      seen.insert(own.begin(), own.end());
    }
    CHECK(seen.size() == 10);
  }
  SUBCASE("8 nodes, 10 classes: 1.25 classes' worth each, so at most 3 labels") {
    for (int r = 0; r < 8; ++r) {
      const auto own = labels_in(partition_by_label(labels, 10, 8, r, 3, 1.0), labels);
      CHECK(own.size() >= 1);
      CHECK(own.size() <= 3);
    }
  }
}

TEST_CASE("skew 0.5: half of each shard comes from the node's own labels, the rest from all") {
  const auto labels = balanced_labels(10000, 10);
  for (int r = 0; r < 5; ++r) {
    const auto shard = partition_by_label(labels, 10, 5, r, 11, 0.5);
    std::vector<std::size_t> counts(10, 0);
    for (std::size_t i : shard) ++counts[labels[i]];
    std::sort(counts.rbegin(), counts.rend());
    // 1000 label-sorted examples cover 2 labels, the 1000 iid ones ~100 per label: the top two
    // labels hold ~1200 of 2000. Every label appears (each iid label count is ~Binomial(1000, 0.1)).
    CAPTURE(r);
    CHECK(counts[0] + counts[1] >= 1100);
    CHECK(counts[0] + counts[1] <= 1300);
    CHECK(counts[9] >= 50);
  }
}

TEST_CASE("bad partition arguments are configuration errors") {
  const auto labels = balanced_labels(10, 3);
  CHECK_THROWS_AS((void)partition_iid(10, 0, 0, 1), config_error);
  CHECK_THROWS_AS((void)partition_iid(10, 4, 4, 1), config_error);
  CHECK_THROWS_AS((void)partition_iid(10, 4, -1, 1), config_error);
  CHECK_THROWS_AS((void)partition_iid(3, 4, 0, 1), config_error);
  CHECK_THROWS_AS((void)partition_by_label(labels, 3, 2, 0, 1, 1.5), config_error);
  CHECK_THROWS_AS((void)partition_by_label(labels, 3, 2, 0, 1, -0.1), config_error);
  CHECK_THROWS_AS((void)partition_by_label(labels, 2, 2, 0, 1, 0.5), config_error);  // label 2 >= 2
}
