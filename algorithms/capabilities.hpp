#pragma once
// What some algorithms can do besides the round of algorithm.hpp, each a small interface of its own
// that an algorithm implements beside `algorithm` (as factored_model beside model: a capability, not a
// wider base). The node looks each one up once, where it builds the part that needs it: the
// asynchronous round pattern (node/run/pattern_factory.cpp), its messages per edge
// (node/run/edge_messages.hpp) and rejoining (node/run/returns.cpp). Which algorithm has which:
//
//                      dpsgd, naive   dcd, ecd   choco                       allreduce, allgather
//   async_mixing       yes            yes        yes                         no
//   per_edge_messages  no             no         built with per_edge_copies  no
//   rejoinable         yes            yes        yes                         no
//   additive_messages  no             dcd        yes (own: one public copy)  no
//   difference_message no             no         built so, one public copy   no
//   clip_rule_of       robust on      robust on  robust on                   no
//
// The decentralized ones implement async_mixing (neighbour_finished) through the base they share
// (algorithms/decentralized.hpp), which also holds robust mixing's rule. That rule is no interface
// here: clip_rule_of and clip_stats_of, declared in algorithm.hpp beside the options that turn it on,
// find it for departures (node/run/departures.cpp), the loss screen (node/run/learner.cpp) and
// the CSV (node/run/round_steps.cpp). Not thread-safe, as algorithm.
#include <cstdint>
#include <span>

#include "algorithms/algorithm.hpp"

namespace qgossip {

// Asynchronous gossip (algorithm_options::asynchronous; docs/algorithms.md, "Asynchronous gossip").
class async_mixing {
 public:
  virtual ~async_mixing() = default;
  // Neighbour `from` has finished and all its messages were absorbed. Its copy is final and counts
  // in every later mix, as if it had just sent (it mixes with this node no more, so there is no pull
  // of its to balance). REQUIRES: from is a neighbour, between absorbs and finish.
  virtual void neighbour_finished(int from) = 0;
  // On a busy uplink (docs/algorithms.md, "A busy uplink"): true when a round may send nothing to a
  // neighbour whose link is busy, as if its message there were zero (CHOCO-SGD: the public copy of
  // that edge stays where it is) or the last one again (D-PSGD and naive: the neighbour keeps the
  // newest x it holds). False where the node's own state moves only with its message (DCD-PSGD's x,
  // ECD-PSGD's estimate).
  [[nodiscard]] virtual bool may_skip_message() const = 0;
};

// A message that differs per neighbour (CHOCO-SGD built with per_edge_copies): after outgoing(t),
// which then returns the model, the round calls outgoing_to(j) for each neighbour j it sends to,
// encodes it, and hands back what j will decode (absorb_own_to(j)), in place of absorb_own.
class per_edge_messages {
 public:
  virtual ~per_edge_messages() = default;
  // Whether this object was built to send per edge; per_edge_messages_of looks no further when not.
  [[nodiscard]] virtual bool sends_per_edge() const = 0;
  // Valid until the next call on this object. REQUIRES: sends_per_edge(), peer a neighbour.
  virtual std::span<const float> outgoing_to(int peer) = 0;
  virtual void absorb_own_to(int peer, std::span<const float> decoded) = 0;
};

// Rejoining (docs/failures.md, "Rejoining"): a node that was dropped comes back, and its neighbours
// admit it, so that the copies on each of its edges are exact again.
class rejoinable {
 public:
  virtual ~rejoinable() = default;
  // What this node's neighbours hold an exact copy of (CHOCO-SGD's own public copy x^_i, or with a
  // copy per edge x, which a neighbour that (re)joins gets and admit() copies; DCD-PSGD's x, ECD-PSGD's
  // own estimate); empty when they hold none (D-PSGD and naive receive x afresh every round). A
  // neighbour that (re)joins receives it.
  [[nodiscard]] virtual std::span<const float> public_state() const = 0;
  // This node (re)joins a running graph: it starts over from model (a neighbour's x), its own public
  // state equal to it, holding no copies, its row itself alone (self weight 1) until admit() adds its
  // neighbours back. REQUIRES: between rounds. Throws invariant_error for a model of another size.
  virtual void restart(std::span<const float> model) = 0;
  // A neighbour (re)joins the run at this node: next is the current row plus peer, with weights for
  // all, and this node's copy of peer becomes `state`, peer's public_state() (ignored where
  // public_state() is empty). Both ends call it before the same round, between rounds, so the copies
  // on their edge are exact again. Throws invariant_error for a row that is not the current one plus
  // peer (remix.hpp admit_problem) and a state of the wrong size.
  virtual void admit(const mixing_row& next, int peer, std::span<const float> state) = 0;
};

// Messages that add into a vector of the algorithm's (docs/design.md, "Memory and size"): the own
// message's absorb_own(decoded) is own_sum() += decoded and a neighbour's absorb(from, decoded) is
// sum_of(from) += decoded, each then marked (absorbed_own, absorbed) as absorb_own and absorb mark it.
// The round decodes such a message straight into that vector (compressor::decode_add), keeping no
// model-sized vector of decoded values: the same additions, so the same bits. CHOCO-SGD's public
// copies (the own one only with one public copy: own_adds()), DCD-PSGD's x and replicas.
class additive_messages {
 public:
  virtual ~additive_messages() = default;
  // Whether the own message adds into own_sum() (absorb_own) rather than going per edge.
  [[nodiscard]] virtual bool own_adds() const = 0;
  // REQUIRES: own_adds().
  [[nodiscard]] virtual std::span<float> own_sum() = 0;
  virtual void absorbed_own(std::uint64_t t) = 0;
  // REQUIRES: from is a neighbour.
  [[nodiscard]] virtual std::span<float> sum_of(int from) = 0;
  virtual void absorbed(int from, std::uint64_t t) = 0;
};

// A message that is the difference of two vectors the algorithm keeps (CHOCO-SGD with one public
// copy: q = x_{t+1/2} - x^_i), built with algorithm_options::difference_messages: outgoing() then
// computes no q and returns an empty span, and the round encodes minuend() - subtrahend() as it
// reads them (compressor::encode_difference), keeping no vector of q; its divergence check reads
// the minuend. Valid from outgoing(t) until absorb_own (or its additive form).
class difference_message {
 public:
  virtual ~difference_message() = default;
  // Whether this object was built so; difference_message_of looks no further when not.
  [[nodiscard]] virtual bool sends_difference() const = 0;
  [[nodiscard]] virtual std::span<const float> minuend() const = 0;
  [[nodiscard]] virtual std::span<const float> subtrahend() const = 0;
};

// The capability, or nullptr where the algorithm has none (per_edge_messages_of: also where it was
// built without per_edge_copies, so that it sends one message to every neighbour; difference_
// message_of: also where it was built to return its message from outgoing()).
[[nodiscard]] async_mixing* async_mixing_of(algorithm& alg);
[[nodiscard]] per_edge_messages* per_edge_messages_of(algorithm& alg);
[[nodiscard]] rejoinable* rejoinable_of(algorithm& alg);
[[nodiscard]] additive_messages* additive_messages_of(algorithm& alg);
[[nodiscard]] difference_message* difference_message_of(algorithm& alg);

}  // namespace qgossip
