#pragma once
// Gossip on the graph (node/run/round_pattern.hpp): round t encodes the algorithm's outgoing vector
// with the learner's codec (the sender applies its own decoded message, so its neighbours' copies of
// it stay exact), sends it to every train peer and gathers one message from each, decoded on arrival
// by the inbox; absorb hands each to the algorithm. The decentralized algorithms gossip on the
// topology's graph; allgather on the complete graph. Not thread-safe: the node's one thread.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "gossip/exchange.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class gossip_round final : public round_pattern {
 public:
  explicit gossip_round(const round_pattern_parts& parts);

  void encode(std::span<const float> outgoing, std::uint64_t t) override;
  [[nodiscard]] status exchange(std::uint64_t t) override;
  void absorb(std::uint64_t t) override;
  [[nodiscard]] std::string describe() const override;

 private:
  algorithm& alg_;
  message_codec& codec_;
  class exchange& ex_;
  message_inbox& inbox_;
  int rank_;
  std::uint64_t seed_;
  std::vector<int> peers_;
  std::size_t values_;
  std::vector<std::byte> encoded_;
  float_vector own_decoded_;
  std::vector<inbound_message> inbound_;
};

}  // namespace qgossip
