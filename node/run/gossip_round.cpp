#include "node/run/gossip_round.hpp"

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"
#include "node/run/message_codec.hpp"
#include "node/run/message_inbox.hpp"

namespace qgossip {

gossip_round::gossip_round(const round_pattern_parts& p)
    : alg_(p.alg), codec_(p.codec), ex_(p.ex), inbox_(*p.inbox), rank_(p.rank), seed_(p.seed),
      peers_(p.train_peers), values_(p.alg.model().size()), own_decoded_(values_) {
  encoded_.reserve(codec_.max_encoded_bytes());
}

void gossip_round::encode(std::span<const float> outgoing, std::uint64_t t) {
  const codec_context ctx{.seed = seed_, .rank = static_cast<std::uint32_t>(rank_), .iteration = t, .stream = 0};
  encoded_.clear();
  codec_.encode(outgoing, ctx, encoded_);
  const status own = codec_.decode(encoded_, ctx, own_decoded_);
  QG_ENFORCE(own.is_ok(), "the compressor cannot decode its own message: " << own.to_string());
  alg_.absorb_own(own_decoded_, t);
}

status gossip_round::exchange(std::uint64_t t) {
  const outgoing_message msg{.codec = codec_.id(), .codec_tag = codec_.tag(),
                             .count = static_cast<std::uint32_t>(values_), .payload = encoded_};
  return ex_.round(message_kind::train, t, msg, inbound_, round_peers{peers_, peers_});
}

void gossip_round::absorb(std::uint64_t t) {
  // The exchange delivered only messages that decoded: each one's decoded vector is in the inbox.
  for (const inbound_message& m : inbound_) {
    const int from = static_cast<int>(m.header.sender);
    alg_.absorb(from, inbox_.from(from), t);
  }
}

std::string gossip_round::describe() const {
  std::string out = "sends to";
  for (int j : peers_) out += " " + std::to_string(j);
  return out;
}

}  // namespace qgossip
