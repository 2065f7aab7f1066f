#pragma once
// Gossip on the graph (node/run/round_pattern.hpp), synchronous: round t encodes the algorithm's
// outgoing vector with the learner's codec (the sender applies its own decoded message, so its
// neighbours' copies of it stay exact), sends it to every train peer and gathers one message of
// round t from each, decoded on arrival by the inbox; absorb hands each to the algorithm. The
// decentralized algorithms gossip on the topology's graph; allgather on the complete graph.
// (Asynchronous gossip, train.max_staleness > 0: node/run/async_gossip_round.hpp.)
// Not thread-safe: the node's one thread.
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "gossip/exchange.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class additive_messages;

// What both gossip patterns share: this node's own message, and handing the inbox to the algorithm.
class own_message {
 public:
  explicit own_message(const round_pattern_parts& parts);
  // Encodes the outgoing vector of round t and applies what receivers will decode (absorb_own).
  void encode(std::span<const float> outgoing, std::uint64_t t);
  // What the round sends: the codec fields, the encoded payload, no payloads per link unless
  // send_instead() gave some.
  [[nodiscard]] outgoing_message wire() const;
  // After encode(): this round sends `payload` in place of the encoded one, and each peer listed in
  // `per_link` its own (a message per edge), with the same codec fields. A pattern that wraps a
  // gossip pattern sends its own messages so (node/run/hostile_round.hpp). The spans must stay
  // valid until the round's exchange; the next encode() forgets them.
  void send_instead(std::span<const std::byte> payload, std::span<const link_message> per_link);
  [[nodiscard]] std::string describe(const std::vector<int>& peers) const;

 private:
  algorithm& alg_;
  message_codec& codec_;
  int rank_;
  std::uint64_t seed_;
  std::size_t values_;

  // A buffer to encode into: one of encoded_ that the transport no longer sends from, else a new one
  // in the place of the longest used (the transport lets go of that one when it is done).
  std::vector<std::byte>& free_buffer();

  additive_messages* adding_;  // the own message decoded straight into the algorithm's own_sum, or null
  // The encoded messages, each shared with the transport while it sends it without a copy (wire()'s
  // payload_owner): one message fewer on the host than a copy into a buffer of the transport's.
  // A synchronous round uses one; rounds whose messages are still queued when the next is encoded
  // (asynchronous gossip, overlap) take turns over up to kBuffers, and allocate nothing more.
  static constexpr std::size_t kBuffers = 3;
  std::array<std::shared_ptr<std::vector<std::byte>>, kBuffers> buffers_;
  std::size_t current_ = 0;  // the buffer of the latest message
  float_vector own_decoded_;    // not adding: the own message decoded
  std::span<const std::byte> payload_;         // what the round sends: encoded_, or send_instead's
  std::span<const link_message> per_link_;     // send_instead's
};

// Every message in the inbox to the algorithm, each with its sender's round; then clears it.
void absorb_inbox(algorithm& alg, message_inbox& inbox);

class gossip_round final : public round_pattern {
 public:
  explicit gossip_round(const round_pattern_parts& parts);
  [[nodiscard]] own_message& message() { return own_; }

  void encode(std::span<const float> outgoing, std::uint64_t t) override { own_.encode(outgoing, t); }
  [[nodiscard]] status exchange(std::uint64_t t) override;
  void absorb(std::uint64_t t) override;
  [[nodiscard]] std::string describe() const override { return own_.describe(peers_); }
  [[nodiscard]] status leave(std::uint64_t t, transport_clock::time_point deadline) override {
    return ex_.finish(t, deadline);
  }

 private:
  [[nodiscard]] status finished_early(std::uint64_t t) const;  // a neighbour that ended before round t
  own_message own_;
  algorithm& alg_;
  class exchange& ex_;
  message_inbox& inbox_;
  std::vector<int> peers_;
};

}  // namespace qgossip
