#include "node/data/batch_sampler.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;

namespace {
std::vector<std::size_t> shard_of(std::size_t n, std::size_t offset) {
  std::vector<std::size_t> s(n);
  std::iota(s.begin(), s.end(), offset);
  return s;
}
}  // namespace

TEST_CASE("an epoch is floor(shard / batch) disjoint full batches from the shard") {
  const auto shard = shard_of(103, 1000);
  batch_sampler sampler(shard, 10, 7);
  CHECK(sampler.batches_per_epoch() == 10);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::set<std::size_t> seen;
    for (int b = 0; b < 10; ++b) {
      const auto batch = sampler.next();
      REQUIRE(batch.size() == 10);
      for (std::size_t i : batch) {
        CHECK(i >= 1000);
        CHECK(i < 1103);
        CHECK(seen.insert(i).second);
      }
    }
    CHECK(seen.size() == 100);
    CHECK(sampler.epoch() == doctest::Approx(epoch + 1.0));
  }
}

TEST_CASE("the epoch is fractional and counts batches") {
  const auto shard = shard_of(64, 0);
  batch_sampler sampler(shard, 16, 1);
  CHECK(sampler.epoch() == 0.0);
  (void)sampler.next();
  CHECK(sampler.epoch() == 0.25);
  (void)sampler.next();
  (void)sampler.next();
  (void)sampler.next();
  (void)sampler.next();
  CHECK(sampler.epoch() == 1.25);
  CHECK(sampler.batches_drawn() == 5);
}

namespace {
std::vector<std::size_t> take(batch_sampler& s) {
  const auto batch = s.next();
  return {batch.begin(), batch.end()};
}
}  // namespace

TEST_CASE("each epoch is a different permutation, reproducible from the seed") {
  const auto shard = shard_of(64, 0);
  batch_sampler a(shard, 64, 5), b(shard, 64, 5), c(shard, 64, 6);
  const auto a0 = take(a), a1 = take(a);
  CHECK(a0 != a1);
  CHECK(std::is_permutation(a0.begin(), a0.end(), a1.begin()));
  CHECK(a0 != shard);  // shuffled
  CHECK(take(b) == a0);
  CHECK(take(b) == a1);
  CHECK(take(c) != a0);
}

TEST_CASE("seek resumes exactly where a checkpointed sampler was") {
  const auto shard = shard_of(50, 0);
  batch_sampler straight(shard, 8, 9);  // 6 batches per epoch
  std::vector<std::vector<std::size_t>> expected;
  for (int i = 0; i < 20; ++i) expected.push_back(take(straight));
  for (std::uint64_t at : {0u, 1u, 5u, 6u, 13u}) {
    batch_sampler resumed(shard, 8, 9);
    (void)take(resumed);  // state before seek must not matter
    resumed.seek(at);
    CHECK(resumed.epoch() == doctest::Approx(static_cast<double>(at) / 6.0));
    for (std::uint64_t i = at; i < 20; ++i) CHECK(take(resumed) == expected[i]);
  }
}

TEST_CASE("a batch larger than the shard, or empty, is a configuration error") {
  const auto shard = shard_of(10, 0);
  CHECK_THROWS_AS(batch_sampler(shard, 11, 1), config_error);
  CHECK_THROWS_AS(batch_sampler(shard, 0, 1), config_error);
  CHECK_NOTHROW(batch_sampler(shard, 10, 1));
}

// Checkpoints: a fresh sampler that loads the saved state draws the same batches, across an epoch
// boundary; without the state it would start at the first batch of epoch 0.
TEST_CASE("batch sampler: save_state then load_state into a fresh sampler continues the same batches") {
  const std::vector<std::size_t> shard = shard_of(23, 100);
  batch_sampler a(shard, 5, 99);  // 4 batches per epoch
  for (int i = 0; i < 6; ++i) (void)a.next();
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();
  std::vector<std::vector<std::size_t>> expected;
  for (int i = 0; i < 7; ++i) {
    const auto b = a.next();
    expected.emplace_back(b.begin(), b.end());
  }

  batch_sampler b(shard, 5, 99);
  state_reader r(saved, "sampler");
  b.load_state(r);
  r.expect_end();
  CHECK(b.batches_drawn() == 6);
  for (const auto& batch : expected) {
    const auto got = b.next();
    CHECK(std::vector<std::size_t>(got.begin(), got.end()) == batch);
  }
  batch_sampler control(shard, 5, 99);
  const auto first = control.next();
  CHECK(std::vector<std::size_t>(first.begin(), first.end()) != expected.front());
}

TEST_CASE("batch sampler: load_state refuses the state of another shard, batch size or seed") {
  batch_sampler a(shard_of(23, 0), 5, 99);
  state_writer w;
  a.save_state(w);
  const std::vector<std::byte> saved = w.take();
  batch_sampler other_seed(shard_of(23, 0), 5, 98);
  state_reader r1(saved, "sampler");
  CHECK_THROWS_WITH_AS(other_seed.load_state(r1), doctest::Contains("field 'seed' is 99, expected 98"), state_error);
  batch_sampler other_shard(shard_of(24, 0), 5, 99);
  state_reader r2(saved, "sampler");
  CHECK_THROWS_WITH_AS(other_shard.load_state(r2), doctest::Contains("field 'shard_size' is 23, expected 24"),
                       state_error);
}
