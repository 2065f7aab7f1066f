#pragma once
// The ring all-reduce (node/run/round_pattern.hpp): round t sums every node's outgoing vector with
// gossip/ring_allreduce.hpp over 2(n−1) exchange iterations (left and right neighbours on the ring
// of ranks), and hands the sum to the algorithm (absorb_own): allreduce, the centralized baseline.
// The hops carry raw float32 (the identity codec), or the code of each partial sum in the learner's
// codec, each chunk its own stream (a quantized ring all-reduce; with train.outer: DiLoCo with
// quantized pseudo-gradients). Not thread-safe.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "gossip/ring_allreduce.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class ring_round final : public round_pattern {
 public:
  explicit ring_round(const round_pattern_parts& parts);

  void encode(std::span<const float> outgoing, std::uint64_t t) override;
  [[nodiscard]] status exchange(std::uint64_t t) override;
  void absorb(std::uint64_t t) override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] status leave(std::uint64_t t, transport_clock::time_point deadline) override {
    return ex_.finish(t, deadline);
  }

 private:
  algorithm& alg_;
  class exchange& ex_;
  std::vector<int> peers_;
  std::uint64_t steps_;
  std::unique_ptr<ring_codec> codec_;        // the learner's codec on chunks; none: raw float32
  std::string coding_;                       // for describe()
  std::unique_ptr<ring_allreduce> reducer_;  // none for a single node
  float_vector sum_;
};

}  // namespace qgossip
