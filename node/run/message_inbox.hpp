#pragma once
// The train messages of a round, decoded by the learner's codec as the exchange delivers them: the
// exchange hands each to accept() (exchange_events::train_message, node/run/link_events.hpp), so a
// message is decoded once, while the node still waits for the others, and one that does not decode is its sender's
// failure (docs/failures.md). Synchronous gossip delivers one message per train peer per round;
// asynchronous gossip any number, each peer's in its order: the inbox keeps them in delivery order
// until the round pattern has handed them to the algorithm (clear()). Its vectors are reused.
// Asynchronous gossip bounds it (hold_at_most): a node behind its neighbours may be delivered
// dozens of messages in one round, and each would need a model-sized vector of its own.
// Adding (the algorithm's messages add into its copies and the codec decodes into a sum: algorithms/
// capabilities.hpp additive_messages): a message is checked on arrival (validate) and kept encoded,
// as the transport received it (its payload taken, not copied), and add_to() decodes it into the copy
// it adds to, with no model-sized vector of its own; clear() lets go of it.
// Not thread-safe: the node's one thread.
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "core/aligned.hpp"
#include "core/status.hpp"
#include "gossip/received_bytes.hpp"
#include "gossip/wire.hpp"
#include "node/run/message_codec.hpp"

namespace qgossip {

class message_inbox {
 public:
  // peers: the train peers, ascending; values: the decoded length (the model's parameters); adding:
  // keep messages encoded for add_to (REQUIRES codec.adds_decoded()).
  message_inbox(const message_codec& codec, std::uint64_t seed, std::vector<int> peers, std::size_t values,
                bool adding = false);

  // exchange_events::train_message: decodes a train message and keeps it (adding: takes the payload,
  // leaving it empty). errc::corrupt when it does not decode; errc::invalid for a sender that is not
  // a train peer.
  [[nodiscard]] status accept(const wire_header& h, received_bytes& payload);
  // exchange_events::early_train_message: a message of a later round checked as it arrives, as
  // accept() will (adding: what validate checks; not adding: nothing, accept() decodes it then).
  // accept() does not check a message that passed here again.
  [[nodiscard]] status check(const wire_header& h, std::span<const std::byte> payload);

  struct message {
    int from;
    std::uint64_t iteration;  // the sender's round
    std::span<const float> values;  // empty when adding: add_to decodes it
  };
  [[nodiscard]] bool adding() const { return adding_; }
  // Message i's values added into sum (sum[k] += value k). REQUIRES: adding(), i < size().
  void add_to(std::size_t i, std::span<float> sum) const;
  // The messages accepted since the last clear(), in delivery order.
  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] message at(std::size_t i) const;
  void clear();

  // At most `capacity` messages held (> 0): accept() first calls `flush`, which must hand the held
  // messages to the algorithm and clear() the inbox, when it holds that many. Asynchronous gossip
  // only, whose algorithm absorbs a neighbour's messages at any point of its round, in order.
  // Unset (the default; capacity 0): the inbox holds what a round delivers.
  void hold_at_most(std::size_t capacity, std::function<void()> flush);

 private:
  struct entry {
    int from = -1;
    std::uint64_t iteration = 0;
    float_vector values;            // decoded (not adding)
    received_bytes payload;  // encoded, checked (adding)
  };
  void grow(entry& e) const;  // sized for a message's values (not adding)
  [[nodiscard]] bool take_checked(int from, std::uint64_t iteration);
  [[nodiscard]] status train_peer(int from) const;  // errc::invalid for a sender that is not one
  // The codec's context of a message from `from` in its round `iteration` (stream 0).
  [[nodiscard]] codec_context context(std::uint32_t from, std::uint64_t iteration) const;

  const message_codec& codec_;
  std::uint64_t seed_;
  std::vector<int> peers_;
  std::size_t values_;
  bool adding_;
  std::vector<entry> entries_;  // the first count_ are in use
  std::vector<std::pair<int, std::uint64_t>> checked_;  // (from, iteration) that check() passed, not yet accepted
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;  // hold_at_most; 0: none
  std::function<void()> flush_;
};

}  // namespace qgossip
