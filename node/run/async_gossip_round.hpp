#pragma once
// Asynchronous gossip on the graph (train.max_staleness τ > 0; docs/algorithms.md, "Asynchronous
// gossip"). Round t encodes and sends as synchronous gossip does, then takes every message that has
// arrived from each neighbour, in that neighbour's order, and waits only while a live neighbour that
// has not finished is more than τ rounds behind: its newest message is older than round t − τ
// (rounds 1 to τ wait for nobody, a neighbour slow to start included: it is a straggler like any
// other; with τ unbounded no round waits). The algorithm absorbs each message with its sender's
// round, so replicas, estimates and public copies are updated in order and stay equal to their
// owners; it mixes with the newest copy it holds, and with a finished neighbour's final copy in every
// round. When every neighbour has finished, the node runs kCatchUpRounds rounds that only mix (no
// training step: mixing_only) and stops: a slow node stops with the others, its model pulled to
// theirs. At the end, the messages still on their way from slower neighbours are absorbed too
// (leave), so every copy equals its owner once every node has left. The inbox holds at most
// kHeldPerPeer messages per neighbour: a round delivered more (a node behind its neighbours) hands
// them to the algorithm as they come, so that it neither allocates a model-sized vector per message
// nor falls further behind while it does (message_inbox::hold_at_most).
// The algorithm's async_mixing (algorithms/capabilities.hpp) is told of finished neighbours, and says
// whether a round may skip its message.
// A busy uplink (docs/algorithms.md, "A busy uplink"): with τ unbounded and an algorithm that may
// skip its message (CHOCO-SGD, D-PSGD, naive), a round sends nothing on a link that still holds
// more than a quarter of its last message on this host (exchange::link_busy), and goes on training
// and mixing rather than wait for it: a node keeps its neighbours' pace, and sends on each link as
// often as that link carries. CHOCO-SGD keeps a public copy per edge (edge_messages, over its
// per_edge_messages), which moves
// only with what the edge carries, so every copy stays exact and a slow link holds back no other.
// Not thread-safe: the node's one thread.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/capabilities.hpp"
#include "gossip/exchange.hpp"
#include "node/run/edge_messages.hpp"
#include "node/run/gossip_round.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class async_gossip_round final : public round_pattern, public async_progress {
 public:
  // Rounds of mixing alone after every neighbour has finished: each moves the node a fraction
  // γ(1 − W_ii) of the way to its neighbours' final copies (CHOCO γ_c = 0.8 on a ring: 0.53, on the
  // hypercube 0.6), so four leave 3–5 % of the distance (docs/algorithms.md, "Asynchronous gossip").
  static constexpr std::uint64_t kCatchUpRounds = 4;
  // Messages per neighbour the inbox holds before it hands them to the algorithm: two rounds'.
  static constexpr std::size_t kHeldPerPeer = 2;

  // mixing: parts.alg's; per_edge: its per_edge_messages where it sends per edge, else nullptr.
  async_gossip_round(const round_pattern_parts& parts, async_mixing& mixing, per_edge_messages* per_edge,
                     std::uint64_t max_staleness);
  ~async_gossip_round() override;  // takes its flush back from the inbox
  async_gossip_round(const async_gossip_round&) = delete;
  async_gossip_round& operator=(const async_gossip_round&) = delete;

  [[nodiscard]] own_message& message() { return own_; }
  void encode(std::span<const float> outgoing, std::uint64_t t) override;
  [[nodiscard]] status exchange(std::uint64_t t) override;
  void absorb(std::uint64_t t) override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] bool peers_done() const override;
  [[nodiscard]] bool mixing_only() const override { return caught_up_from_ > 0; }
  [[nodiscard]] std::uint64_t staleness() const override { return staleness_; }
  [[nodiscard]] std::uint64_t rounds_unsent() const override { return unsent_; }
  [[nodiscard]] std::uint64_t messages_unsent() const override { return messages_unsent_; }
  [[nodiscard]] status leave(std::uint64_t t, transport_clock::time_point deadline) override;

 private:
  // The oldest round a neighbour's newest message may be from when round t mixes (0: any, none).
  [[nodiscard]] std::uint64_t need(std::uint64_t t) const;

  own_message own_;
  std::optional<edge_messages> edges_;  // an algorithm that sends per edge
  algorithm& alg_;
  async_mixing& mixing_;
  class exchange& ex_;
  message_inbox& inbox_;
  std::vector<int> peers_;
  std::uint64_t max_staleness_;
  std::uint64_t last_round_;   // the plan's last round, which sends on every link
  bool may_skip_;              // τ unbounded, and the algorithm may skip its message (else: every link)
  std::vector<int> open_;      // the neighbours the latest round sends to (their links not busy)
  std::vector<link_message> sends_;  // and what it sends each
  std::uint64_t unsent_ = 0;   // rounds that sent nothing
  std::uint64_t messages_unsent_ = 0;  // messages not sent: one per round and busy link
  std::uint64_t staleness_ = 0;  // of the latest round: t − the oldest newest message mixed with
  std::uint64_t round_ = 0;      // the latest round
  // The round after which every neighbour had finished (0: not yet), and the finished neighbours
  // the algorithm was told of (neighbour_finished; empty: none finished, so nothing to catch up with).
  std::uint64_t caught_up_from_ = 0;
  std::vector<int> told_finished_;
};

}  // namespace qgossip
