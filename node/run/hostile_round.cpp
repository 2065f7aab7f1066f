#include "node/run/hostile_round.hpp"

#include <array>

#include "node/attack/label_flip.hpp"
#include "node/run/pattern_factory.hpp"
#include "node/run/run_control.hpp"  // say()

namespace qgossip {

hostile_round::hostile_round(std::unique_ptr<round_pattern> honest, const attack_spec& spec,
                             const robust_options& defence, algorithm& alg, message_codec& codec, int rank,
                             std::uint64_t seed, dataset& shard, std::uint64_t first_round)
    : honest_(std::move(honest)),
      forger_(spec, defence, message_form_for(alg, spec.attack), seed),
      alg_(alg),
      codec_(codec),
      rank_(rank),
      seed_(seed),
      shard_(shard),
      own_(own_message_of(*honest_)),
      decoded_(alg.model().size()) {
  encoded_.reserve(codec_.max_encoded_bytes());
  poison_from(first_round);
}

// A hostile node with the label_flip attack trains on flipped labels from the attack's round on
// (after a resume past that round too: before the first round it computes).
void hostile_round::poison_from(std::uint64_t t) {
  if (labels_flipped_ || forger_.spec().attack != attack_kind::label_flip || t < forger_.spec().from_round) return;
  flip_labels(shard_);
  labels_flipped_ = true;
  say(rank_, "hostile (scenario): from round " + std::to_string(t) + " this node trains on flipped labels");
}

void hostile_round::encode(std::span<const float> outgoing, std::uint64_t t) {
  const bool attack = own_ != nullptr && forger_.active(t);
  if (attack) forger_.before_round(alg_);  // what the neighbours hold of this node, before its message
  honest_->encode(outgoing, t);
  if (attack) forge(t, *own_);
  poison_from(t + 1);  // the next round's computation
}

// The nan attack: the honest message's length of NaN bit patterns, which every decoder refuses (a
// NaN scale, value or index).
void hostile_round::forge(std::uint64_t t, own_message& own) {
  if (forger_.spec().attack == attack_kind::nan) {
    constexpr std::array<std::byte, 4> kNan{std::byte{0x00}, std::byte{0x00}, std::byte{0xc0}, std::byte{0x7f}};
    encoded_.resize(own.wire().payload.size());
    for (std::size_t i = 0; i < encoded_.size(); ++i) encoded_[i] = kNan[i % kNan.size()];
    own.send_instead(encoded_, {});
    return;
  }
  const std::vector<int>& peers = alg_.row().neighbours;
  if (peers.empty()) return;
  // One message for all: every neighbour holds the same copy of this node (one admitted since the
  // attack began holds another, gets the same message, and its copy misses the target).
  if (!per_neighbour(forger_.spec().attack)) {
    encode_own_message(codec_, forger_.message_for(alg_, 0, peers[0], t), seed_, rank_, t, encoded_, decoded_);
    for (int p : peers) forger_.sent(p, decoded_);
    own.send_instead(encoded_, {});
    return;
  }
  forged_.resize(peers.size());
  per_link_.clear();
  for (std::size_t k = 0; k < peers.size(); ++k) {
    encode_own_message(codec_, forger_.message_for(alg_, k, peers[k], t), seed_, rank_, t, forged_[k], decoded_);
    forger_.sent(peers[k], decoded_);
    per_link_.push_back({peers[k], forged_[k]});
  }
  own.send_instead(own.wire().payload, per_link_);
}

}  // namespace qgossip
