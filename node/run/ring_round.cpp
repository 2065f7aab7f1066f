#include "node/run/ring_round.hpp"

#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace qgossip {

ring_round::ring_round(const round_pattern_parts& p)
    : alg_(p.alg), peers_(p.train_peers), steps_(ring_allreduce_steps(p.n)), sum_(p.alg.model().size()) {
  if (p.n > 1) reducer_ = std::make_unique<ring_allreduce>(p.ex, p.rank, p.n);
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
  return out;
}

}  // namespace qgossip
