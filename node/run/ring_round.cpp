#include "node/run/ring_round.hpp"

#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace qgossip {

namespace {

// A compressor (algorithms/compress/) on the ring's chunks: the chunk's index is the codec's stream.
class compressor_ring_codec final : public ring_codec {
 public:
  compressor_ring_codec(const codec_spec& spec, std::uint64_t seed) : c_(make_compressor(spec)), seed_(seed) {}
  std::uint16_t id() const override { return static_cast<std::uint16_t>(c_->id()); }
  std::uint32_t tag() const override { return c_->params_tag(); }
  void encode(std::span<const float> v, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
              std::vector<std::byte>& out) const override {
    c_->encode(v, {.seed = seed_, .rank = rank, .iteration = iteration, .stream = chunk}, out);
  }
  status decode(std::span<const std::byte> in, std::uint32_t rank, std::uint64_t iteration, std::uint32_t chunk,
                std::span<float> out) const override {
    return c_->decode(in, {.seed = seed_, .rank = rank, .iteration = iteration, .stream = chunk}, out);
  }
  std::string describe() const { return c_->describe(); }

 private:
  std::unique_ptr<compressor> c_;
  std::uint64_t seed_;
};

}  // namespace

ring_round::ring_round(const round_pattern_parts& p)
    : alg_(p.alg), ex_(p.ex), peers_(p.train_peers), steps_(ring_allreduce_steps(p.n)), sum_(p.alg.model().size()) {
  if (p.ring_codec && p.ring_codec->name != "identity") {
    auto c = std::make_unique<compressor_ring_codec>(*p.ring_codec, p.seed);
    coding_ = " (each hop " + c->describe() + ")";
    codec_ = std::move(c);
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
