#pragma once
// The attacks a hostile key holder can be given (docs/security.md, "Attacks as experiment input"),
// and their parameters. x is the hostile node's own model (it trains honestly), c_k what it holds of
// neighbour k (CHOCO-SGD's public copy, DCD-PSGD's replica), μ and s their mean and coordinate-wise
// standard deviation. Each attack names the model the hostile node makes its neighbours hold of it
// (their copy of it, or the model they receive):
//   flip        −x
//   scale       λ·x                                  lambda (default 10)
//   noise       x + σ·ξ, ξ ~ N(0, I) each round       sigma (default 1)
//   nan         a message of NaN bit patterns: every decoder refuses it, and the neighbours drop
//               the sender (network.on_peer_failure)
//   label_flip  honest messages; the node trains on label (classes − 1 − y)
//   alie        μ − z·s (A Little Is Enough: Baruch, Baruch and Goldberg, 2019)   z (default 1)
//   ipm         −ε·μ (Inner Product Manipulation: Xie, Koyejo and Gupta, 2020)  epsilon (default 0.5)
//   dissensus   to neighbour k: c_k − ε·(m − c_k), m = the mean of x and every c (He, Karimireddy and
//               Jaggi, 2022: cancels the pull of k's consensus, estimated from what this node sees)
//                                                   epsilon (default 1)
//   equivocate  to neighbour k (its index among the neighbours, ascending): x when k is even, −λ·x
//               when odd: a different message to each        lambda (default 1)
//   adaptive    to neighbour k: c_k + β·d_k·u_k, u_k the unit vector from c_k towards −x, d_k =
//               ‖x − c_k‖, β line-searched each round over {1/4, 1/2, 1, ..., 1024} for the largest
//               pull along u_k that the run's robust mixing (clip radius, tolerate) lets through,
//               simulated with d_k standing for the distances of k's other neighbours
// from_round (default 1): the first round that sends the attack; before it the node is honest.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip {

enum class attack_kind { flip, scale, noise, nan, label_flip, alie, ipm, dissensus, equivocate, adaptive };

struct attack_spec {
  int rank = 0;
  attack_kind attack = attack_kind::flip;
  std::uint64_t from_round = 1;
  double lambda = 10;    // scale (equivocate: 1)
  double sigma = 1;      // noise
  double z = 1;          // alie
  double epsilon = 0.5;  // ipm (dissensus: 1)
  // The scenario's other hostile ranks (hostile_entry): dissensus and adaptive, which aim at each
  // neighbour's own copy, send these their honest model (attacking a colluder only extrapolates
  // its forged copy of this node, and two adjacent dissensus ranks overflowed each other's).
  std::vector<int> colluders{};
};

[[nodiscard]] std::string_view to_text(attack_kind a);
[[nodiscard]] std::optional<attack_kind> parse_attack(std::string_view word);
// "flip", "scale (lambda 10)", "alie (z 1.5) from round 200": for logs and summaries.
[[nodiscard]] std::string describe(const attack_spec& a);
// True for the attacks that need the neighbours' copies (alie, ipm, dissensus, adaptive).
[[nodiscard]] bool needs_copies(attack_kind a);
// True for the attacks that send each neighbour its own message (dissensus, equivocate, adaptive).
[[nodiscard]] bool per_neighbour(attack_kind a);

}  // namespace qgossip
