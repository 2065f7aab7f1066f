#pragma once
// A hostile node's round (docs/security.md, "Attacks as experiment input"): a round pattern that
// owns the honest one (node/run/round_pattern.hpp) and the forger (node/attack/forger.hpp), built by
// node_setup for a rank a scenario's `hostile:` list names; the honest code knows nothing of it.
// The node trains and mixes honestly: each round the honest pattern encodes its message and applies
// it to the algorithm as ever; then, from the attack's round on, the wrapper sends the attack's
// message in its place (own_message::send_instead): one message for every neighbour, one of its own
// per neighbour (the per-neighbour attacks), or NaN (the nan attack). The label_flip attack sends
// honest messages about poisoned training: the node's shard trains on flipped labels from the
// attack's round on (node/attack/label_flip.hpp), whatever the pattern.
// Not thread-safe: the node's one thread.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "gossip/exchange.hpp"
#include "node/attack/forger.hpp"
#include "node/data/dataset.hpp"
#include "node/run/message_codec.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

class own_message;

class hostile_round final : public round_pattern {
 public:
  // honest: the pattern the node would run; shard: its training data (label_flip); first_round:
  // the first round it runs (after a resume: the checkpoint's round + 1), from which on the attack
  // holds already when it began earlier. Throws config_error when the attack cannot be sent with
  // the algorithm (node/attack/forger.hpp attack_refusal).
  hostile_round(std::unique_ptr<round_pattern> honest, const attack_spec& spec, const robust_options& defence,
                algorithm& alg, message_codec& codec, int rank, std::uint64_t seed, dataset& shard,
                std::uint64_t first_round);

  void encode(std::span<const float> outgoing, std::uint64_t t) override;
  [[nodiscard]] status exchange(std::uint64_t t) override { return honest_->exchange(t); }
  void absorb(std::uint64_t t) override { honest_->absorb(t); }
  [[nodiscard]] std::string describe() const override { return honest_->describe(); }
  [[nodiscard]] status leave(std::uint64_t t, transport_clock::time_point deadline) override {
    return honest_->leave(t, deadline);
  }

 private:
  // The attack's messages of round t, after the honest one (encoded with the context receivers
  // decode with, so that each neighbour decodes what the forger records it holds).
  void forge(std::uint64_t t, own_message& own);
  // label_flip: the shard's labels flipped once round t is the attack's or later.
  void poison_from(std::uint64_t t);

  std::unique_ptr<round_pattern> honest_;
  forger forger_;
  algorithm& alg_;
  message_codec& codec_;
  int rank_;
  std::uint64_t seed_;
  dataset& shard_;
  own_message* own_;  // the honest pattern's message; null for the ring all-reduce
  bool labels_flipped_ = false;
  std::vector<std::byte> encoded_;               // the message for every neighbour
  std::vector<std::vector<std::byte>> forged_;   // per neighbour, for a per-neighbour attack
  std::vector<link_message> per_link_;
  float_vector decoded_;
};

}  // namespace qgossip
