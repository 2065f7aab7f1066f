#include "node/run/gossip_round.hpp"

#include <algorithm>
#include <array>

#include "algorithms/algorithm.hpp"
#include "node/attack/forger.hpp"
#include "node/run/message_codec.hpp"
#include "node/run/message_inbox.hpp"

namespace qgossip {

own_message::own_message(const round_pattern_parts& p)
    : alg_(p.alg),
      codec_(p.codec),
      rank_(p.rank),
      seed_(p.seed),
      values_(p.alg.model().size()),
      own_decoded_(values_),
      hostile_(p.hostile) {
  encoded_.reserve(codec_.max_encoded_bytes());
}

void own_message::encode(std::span<const float> outgoing, std::uint64_t t) {
  const bool attack = hostile_ != nullptr && hostile_->active(t);
  if (attack) hostile_->before_round(alg_);
  encode_own_message(codec_, outgoing, seed_, rank_, t, encoded_, own_decoded_);
  alg_.absorb_own(own_decoded_, t);
  own_payloads_.clear();
  if (attack) forge(t);
}

// Encoded with the context receivers decode with, so that each neighbour decodes what the forger
// records it holds. The nan attack: the honest message's length of NaN bit patterns, which every
// decoder refuses (a NaN scale, value or index).
void own_message::forge(std::uint64_t t) {
  if (hostile_->spec().attack == attack_kind::nan) {
    constexpr std::array<std::byte, 4> kNan{std::byte{0x00}, std::byte{0x00}, std::byte{0xc0},
                                            std::byte{0x7f}};
    for (std::size_t i = 0; i < encoded_.size(); ++i) encoded_[i] = kNan[i % kNan.size()];
    return;
  }
  const std::vector<int>& peers = alg_.row().neighbours;
  if (peers.empty()) return;
  // One message for all: every neighbour holds the same copy of this node (one admitted since the
  // attack began holds another, gets the same message, and its copy misses the target).
  if (!per_neighbour(hostile_->spec().attack)) {
    encode_own_message(codec_, hostile_->message_for(alg_, 0, peers[0], t), seed_, rank_, t, encoded_,
                       own_decoded_);
    for (int p : peers) hostile_->sent(p, own_decoded_);
    return;
  }
  forged_.resize(peers.size());
  for (std::size_t k = 0; k < peers.size(); ++k) {
    encode_own_message(codec_, hostile_->message_for(alg_, k, peers[k], t), seed_, rank_, t, forged_[k],
                       own_decoded_);
    hostile_->sent(peers[k], own_decoded_);
    own_payloads_.push_back({peers[k], forged_[k]});
  }
}

outgoing_message own_message::wire() const {
  return {.codec = codec_.id(), .codec_tag = codec_.tag(), .count = static_cast<std::uint32_t>(values_),
          .payload = encoded_};
}

std::string own_message::describe(const std::vector<int>& peers) const {
  std::string out = "sends to";
  for (int j : peers) out += " " + std::to_string(j);
  return out;
}

void absorb_inbox(algorithm& alg, message_inbox& inbox) {
  // The exchange delivered only messages that decoded, each peer's in its order. A peer dropped
  // since (its departure learnt later in the round) is no longer in the row: the node mixes without
  // it from this round on, as the exchange's drop() says.
  const std::vector<int>& live = alg.row().neighbours;
  for (std::size_t i = 0; i < inbox.size(); ++i) {
    const message_inbox::message m = inbox.at(i);
    if (std::binary_search(live.begin(), live.end(), m.from)) alg.absorb(m.from, m.values, m.iteration);
  }
  inbox.clear();
}

gossip_round::gossip_round(const round_pattern_parts& p)
    : own_(p), alg_(p.alg), ex_(p.ex), inbox_(*p.inbox), peers_(p.train_peers) {}

status gossip_round::exchange(std::uint64_t t) {
  inbox_.clear();
  return ex_.round(message_kind::train, t, own_.wire(),
                   round_peers{peers_, peers_, own_.own_payloads()});  // into the inbox
}

void gossip_round::absorb(std::uint64_t) { absorb_inbox(alg_, inbox_); }

}  // namespace qgossip
