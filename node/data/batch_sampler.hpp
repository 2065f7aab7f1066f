#pragma once
// Mini-batches over a node's shard. Each epoch is a fresh seeded permutation of the shard cut into
// floor(|shard| / batch_size) batches of exactly batch_size indices; the |shard| mod batch_size
// left-over examples differ from epoch to epoch, so none is skipped for good.
// Epoch e's permutation depends only on (seed, e), never on the batches drawn before, so seek()
// resumes a checkpointed run exactly. Pass a seed that already mixes in the rank if nodes must
// draw different orders.
// Thread-safety: none; one sampler per training loop.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/state_io.hpp"

namespace qgossip {

class batch_sampler {
 public:
  // REQUIRES (config_error otherwise): batch_size >= 1 and batch_size <= shard.size().
  batch_sampler(std::span<const std::size_t> shard, std::size_t batch_size, std::uint64_t seed);

  // The next batch: batch_size indices into the data set. The span stays valid until the next
  // call to next() or seek().
  [[nodiscard]] std::span<const std::size_t> next();

  // Batches drawn so far, and the same in epochs: 2.5 after two and a half epochs' batches.
  [[nodiscard]] std::uint64_t batches_drawn() const { return drawn_; }
  [[nodiscard]] double epoch() const {
    return static_cast<double>(drawn_) / static_cast<double>(batches_per_epoch_);
  }
  [[nodiscard]] std::size_t batches_per_epoch() const { return batches_per_epoch_; }
  [[nodiscard]] std::size_t batch_size() const { return batch_size_; }
  [[nodiscard]] std::size_t shard_size() const { return shard_.size(); }

  // Continue as if `batches_drawn` batches had been drawn already (resume from a checkpoint).
  void seek(std::uint64_t batches_drawn);

  // Checkpoints: the position (batches drawn) plus the shard size, batch size and seed, which
  // load_state checks against this sampler's (state_error when they differ: another shard or
  // config); then it seeks. The permutation is not saved: it is a function of (seed, epoch).
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);

 private:
  void shuffle_for_epoch(std::uint64_t epoch);

  std::vector<std::size_t> shard_;  // as given: every epoch permutes this, not the last order
  std::vector<std::size_t> order_;  // the current epoch's permutation
  std::size_t batch_size_;
  std::size_t batches_per_epoch_;
  std::uint64_t seed_;
  std::uint64_t drawn_ = 0;
  std::uint64_t order_epoch_ = ~std::uint64_t{0};  // which epoch order_ holds; none yet
};

// The seed of node `rank`'s batch order in a run seeded `run_seed`: the node's sampler permutes the
// positions 0..|shard|-1 of its shard with it, and `qgossip shards` writes the same order for
// other trainers (bench/peers/).
[[nodiscard]] std::uint64_t batch_order_seed(std::uint64_t run_seed, int rank);

}  // namespace qgossip
