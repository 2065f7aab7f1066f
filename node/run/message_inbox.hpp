#pragma once
// Each train peer's message of the round, decoded by the learner's codec as the exchange delivers it:
// the exchange is given accept() when it is built (exchange_options::validate), so a message is
// decoded once, while the node still waits for the others, and one that does not decode is its
// sender's failure (docs/failures.md). Not thread-safe: the node's one thread.
#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned.hpp"
#include "core/status.hpp"
#include "gossip/wire.hpp"
#include "node/run/message_codec.hpp"

namespace qgossip {

class message_inbox {
 public:
  // peers: the train peers, ascending; values: the decoded length (the model's parameters).
  message_inbox(const message_codec& codec, std::uint64_t seed, std::vector<int> peers, std::size_t values);

  // exchange_options::validate: decodes a train message into its sender's slot. errc::corrupt when
  // it does not decode; errc::invalid for a sender that is not a train peer.
  [[nodiscard]] status accept(const wire_header& h, std::span<const std::byte> payload);
  // The last message accepted from peer, decoded. REQUIRES: peer is a train peer.
  [[nodiscard]] std::span<const float> from(int peer) const;

 private:
  [[nodiscard]] std::size_t slot(int peer) const;

  const message_codec& codec_;
  std::uint64_t seed_;
  std::vector<int> peers_;
  std::vector<float_vector> decoded_;  // by slot
};

}  // namespace qgossip
