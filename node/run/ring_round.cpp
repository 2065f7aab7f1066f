#include "node/run/ring_round.hpp"

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "node/run/message_codec.hpp"

namespace qgossip {

namespace {

// The learner's codec (node/run/message_codec.hpp) on the ring's chunks: the context of the run's
// seed, the encoder's rank, the iteration, and the chunk's index as the stream.
class chunk_codec final : public ring_codec {
 public:
  chunk_codec(message_codec& codec, std::uint64_t seed) : codec_(codec), seed_(seed) {}
  std::uint16_t id() const override { return codec_.id(); }
  std::uint32_t tag() const override { return codec_.tag(); }
  void encode(std::span<const float> v, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
              std::vector<std::byte>& out) const override {
    codec_.encode(v, {.seed = seed_, .rank = rank, .iteration = iteration, .stream = chunk}, out);
  }
  status decode(std::span<const std::byte> in, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
                std::span<float> out) const override {
    return codec_.decode(in, {.seed = seed_, .rank = rank, .iteration = iteration, .stream = chunk}, out);
  }

 private:
  message_codec& codec_;  // the learner's, which the ring's hops alone use (allreduce sends nothing else)
  std::uint64_t seed_;
};

}  // namespace

ring_round::ring_round(const round_pattern_parts& p)
    : alg_(p.alg), ex_(p.ex), peers_(p.train_peers), steps_(ring_allreduce_steps(p.n)), sum_(p.alg.model().size()) {
  if (p.codec.id() != static_cast<std::uint16_t>(codec_id::identity)) {
    codec_ = std::make_unique<chunk_codec>(p.codec, p.seed);
    coding_ = " (each hop " + p.codec.describe() + ")";
  }
  if (p.n > 1) reducer_ = std::make_unique<ring_allreduce>(p.ex, p.rank, p.n, codec_.get());
}

void ring_round::encode(std::span<const float> outgoing, std::uint64_t) {
  std::copy(outgoing.begin(), outgoing.end(), sum_.begin());
}

status ring_round::exchange(std::uint64_t t) {
  return reducer_ ? reducer_->sum(sum_, (t - 1) * steps_ + 1) : status::ok();
}

void ring_round::absorb(std::uint64_t t) { alg_.absorb_own(sum_, t); }

std::string ring_round::describe() const {
  std::string out = "ring all-reduce with";
  for (int j : peers_) out += " " + std::to_string(j);
  return out + coding_;
}

}  // namespace qgossip
