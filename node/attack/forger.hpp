#pragma once
// The hostile side of a node (docs/security.md, "Attacks as experiment input"): what a node listed
// in a scenario's `hostile:` list sends in place of its honest message. The node still trains and
// mixes honestly (its own model is the x of node/attack/attack_kind.hpp); the forger only decides
// the vector each neighbour receives from it.
//
// Each attack names the model the neighbours should hold of this node. Where neighbours add each
// message to their copy of the sender (CHOCO-SGD's public copy, DCD-PSGD's replica: the additive
// form), the forger keeps, per neighbour, what that neighbour holds (starting from the honest copy
// at the attack's first round, then adding what it decodes of each forged message), and sends the
// difference; where they take the message as the model (D-PSGD, naive: the replacing form), it
// sends the model itself. So the attack lands exactly, whatever the codec, round after round.
// Not thread-safe: the node's one thread.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/robust_mixing.hpp"
#include "core/aligned.hpp"
#include "node/attack/attack_kind.hpp"

namespace qgossip {

enum class message_form { additive, replacing };

// Why attack a cannot be sent with the algorithm named `algorithm`, or "" when it can: ecd (the forger
// does not model its extrapolated estimates), allreduce and allgather (no neighbours' models are
// mixed), and an attack that needs the neighbours' copies (needs_copies) with one that holds none
// (dpsgd, naive). label_flip goes with any.
[[nodiscard]] std::string attack_refusal(std::string_view algorithm, attack_kind a);
// How `alg`'s neighbours take its messages, for attack a. Throws config_error (attack_refusal) when
// the attack cannot be sent with it.
[[nodiscard]] message_form message_form_for(const algorithm& alg, attack_kind a);

class forger {
 public:
  // defence: the run's robust mixing (the adaptive attack searches against it); seed: the run's
  // (noise is drawn from seed, rank and round).
  forger(const attack_spec& spec, const robust_options& defence, message_form form, std::uint64_t seed);

  [[nodiscard]] const attack_spec& spec() const { return spec_; }
  // Whether round t sends the attack (label_flip never does: it poisons the data, not the message).
  [[nodiscard]] bool active(std::uint64_t t) const {
    return t >= spec_.from_round && spec_.attack != attack_kind::label_flip;
  }
  // Round t, before the node applies its own honest message: the additive form records what the
  // neighbours hold of this node (once, at the attack's first round, and for a neighbour new since).
  void before_round(const algorithm& alg);
  // The vector to encode for neighbour `peer`, the k-th of the node's neighbours (ascending), in
  // round t; valid until the next call. REQUIRES: active(t), not the nan attack, before_round(t).
  [[nodiscard]] std::span<const float> message_for(const algorithm& alg, std::size_t k, int peer,
                                                   std::uint64_t t);
  // What `peer` decodes of the message message_for gave it (the additive form adds it to its copy).
  void sent(int peer, std::span<const float> decoded);
  // The model `peer` holds of this node (additive form; the attack's target once it has landed).
  [[nodiscard]] std::span<const float> held_by(int peer) const;

 private:
  void prepare_round(const algorithm& alg, std::uint64_t t);  // μ, s, m, the noise: once per round
  void target_for(const algorithm& alg, std::size_t k, int peer, std::span<float> out) const;
  [[nodiscard]] std::span<const float> copy_of(const algorithm& alg, int peer) const;
  [[nodiscard]] bool colluder(int peer) const;  // spec_.colluders has it
  [[nodiscard]] double adaptive_step(double d) const;

  attack_spec spec_;
  robust_options defence_;
  message_form form_;
  std::uint64_t seed_;
  std::map<int, float_vector> held_;  // additive: per neighbour, its copy of this node
  float_vector published_;            // additive: this node's honest copy before the round
  std::uint64_t prepared_ = 0;        // the round μ, s, m and noise_ are of
  std::size_t degree_ = 0;            // this node's neighbours this round
  float_vector mean_, spread_, centre_, noise_, message_;
};

}  // namespace qgossip
