#include "node/run/edge_messages.hpp"

#include "node/run/message_codec.hpp"

namespace qgossip {

edge_messages::edge_messages(const round_pattern_parts& p, per_edge_messages& per_edge)
    : alg_(per_edge), codec_(p.codec), rank_(p.rank), seed_(p.seed), decoded_(p.alg.model().size()) {}

void edge_messages::encode(std::span<const int> peers, std::uint64_t t, std::vector<link_message>& sends) {
  if (encoded_.size() < peers.size()) encoded_.resize(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    encode_own_message(codec_, alg_.outgoing_to(peers[i]), seed_, rank_, t, encoded_[i], decoded_);
    alg_.absorb_own_to(peers[i], decoded_);
  }
  sends.clear();
  for (std::size_t i = 0; i < peers.size(); ++i) sends.push_back({peers[i], encoded_[i]});
}

}  // namespace qgossip
