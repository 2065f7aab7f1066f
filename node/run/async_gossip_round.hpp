#pragma once
// Asynchronous gossip on the graph (train.max_staleness τ > 0; docs/algorithms.md, "Asynchronous
// gossip"). Round t encodes and sends as synchronous gossip does, then takes every message that has
// arrived from each neighbour, in that neighbour's order, and waits only while a live neighbour that
// has not finished is more than τ rounds behind: its newest message is older than round t − τ
// (rounds 1 to τ wait for nobody, a neighbour slow to start included: it is a straggler like any
// other; with τ unbounded no round waits). The algorithm absorbs each message with its sender's
// round, so replicas, estimates and public copies are updated in order and stay equal to their
// owners; it mixes with the newest copy it holds. When every neighbour has finished, the node stops
// (a slow node stops with the others). At the end, the messages still on their way from slower
// neighbours are absorbed too (leave), so every copy equals its owner once every node has left.
// Not thread-safe: the node's one thread.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gossip/exchange.hpp"
#include "node/run/gossip_round.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class async_gossip_round final : public round_pattern {
 public:
  async_gossip_round(const round_pattern_parts& parts, std::uint64_t max_staleness);

  void encode(std::span<const float> outgoing, std::uint64_t t) override { own_.encode(outgoing, t); }
  [[nodiscard]] status exchange(std::uint64_t t) override;
  void absorb(std::uint64_t t) override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool peers_done() const override { return ex_.all_finished(); }
  [[nodiscard]] std::uint64_t staleness() const override { return staleness_; }
  [[nodiscard]] status leave(std::uint64_t t, transport_clock::time_point deadline) override;

 private:
  // The oldest round a neighbour's newest message may be from when round t mixes (0: any, none).
  [[nodiscard]] std::uint64_t need(std::uint64_t t) const;

  own_message own_;
  algorithm& alg_;
  class exchange& ex_;
  message_inbox& inbox_;
  std::vector<int> peers_;
  std::uint64_t max_staleness_;
  std::uint64_t staleness_ = 0;  // of the latest round: t − the oldest newest message mixed with
  std::vector<inbound_message> inbound_;
};

}  // namespace qgossip
