#pragma once
// A message per edge (asynchronous gossip that skips busy links, with an algorithm whose message
// differs per neighbour: CHOCO-SGD's public copy per edge; per_edge_messages in
// algorithms/capabilities.hpp): for each
// neighbour a round sends to, the algorithm's vector for that edge (outgoing_to), encoded with the
// learner's codec, and what the neighbour will decode applied back (absorb_own_to), so that the
// edge's copies stay exact. Each message is encoded with the same context as the node's one
// message of the round would be (its rank, the round, stream 0), which is what receivers decode
// with. Not thread-safe: the node's one thread.
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/capabilities.hpp"
#include "core/aligned.hpp"
#include "gossip/exchange.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class edge_messages {
 public:
  // per_edge: parts.alg's per_edge_messages.
  edge_messages(const round_pattern_parts& parts, per_edge_messages& per_edge);
  // Round t's message to each of peers (neighbours in the algorithm's row), into `sends` (cleared
  // first), whose payloads stay valid until the next call.
  void encode(std::span<const int> peers, std::uint64_t t, std::vector<link_message>& sends);

 private:
  per_edge_messages& alg_;
  message_codec& codec_;
  int rank_;
  std::uint64_t seed_;
  std::vector<std::vector<std::byte>> encoded_;  // one per entry of peers
  float_vector decoded_;
};

}  // namespace qgossip
