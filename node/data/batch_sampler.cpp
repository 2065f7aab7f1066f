#include "node/data/batch_sampler.hpp"

#include <random>
#include <string>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/portable_random.hpp"

namespace qgossip {

batch_sampler::batch_sampler(std::span<const std::size_t> shard, std::size_t batch_size, std::uint64_t seed)
    : shard_(shard.begin(), shard.end()), batch_size_(batch_size), seed_(seed) {
  if (batch_size == 0) throw config_error("batch size must be >= 1");
  if (batch_size > shard.size()) {
    throw config_error("batch size " + std::to_string(batch_size) + " exceeds the shard's " +
                       std::to_string(shard.size()) + " examples");
  }
  batches_per_epoch_ = shard_.size() / batch_size_;
}

void batch_sampler::shuffle_for_epoch(std::uint64_t epoch) {
  order_ = shard_;
  std::mt19937_64 rng(derive_seed(seed_, epoch));
  portable_shuffle(std::span<std::size_t>(order_), rng);
  order_epoch_ = epoch;
}

std::span<const std::size_t> batch_sampler::next() {
  const std::uint64_t epoch = drawn_ / batches_per_epoch_;
  const std::size_t within = static_cast<std::size_t>(drawn_ % batches_per_epoch_);
  if (epoch != order_epoch_) shuffle_for_epoch(epoch);
  ++drawn_;
  return std::span<const std::size_t>(order_).subspan(within * batch_size_, batch_size_);
}

void batch_sampler::seek(std::uint64_t batches_drawn) { drawn_ = batches_drawn; }

void batch_sampler::save_state(state_writer& out) const {
  out.put_u64("shard_size", shard_.size());
  out.put_u64("batch_size", batch_size_);
  out.put_u64("seed", seed_);
  out.put_u64("batches_drawn", drawn_);
}

void batch_sampler::load_state(state_reader& in) {
  in.expect_u64("shard_size", shard_.size());
  in.expect_u64("batch_size", batch_size_);
  in.expect_u64("seed", seed_);
  seek(in.get_u64("batches_drawn"));
}

std::uint64_t batch_order_seed(std::uint64_t run_seed, int rank) {
  return hash64(std::string_view("batches"), run_seed * 1000003u + static_cast<std::uint64_t>(rank));
}

}  // namespace qgossip
