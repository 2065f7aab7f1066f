#pragma once
// How a round's messages travel (docs/design.md), as an object the round is given:
//   gossip_round   the algorithm's message, encoded by the learner's codec, to the graph's neighbours
//                  and theirs back (every decentralized algorithm, and allgather, whose graph is
//                  complete): node/run/gossip_round.hpp
//   ring_round     the outgoing vectors summed by a ring all-reduce (allreduce), raw floats or coded
//                  by the learner's codec: node/run/ring_round.hpp
//   async_gossip_round  asynchronous gossip (train.max_staleness > 0), which also says how its
//                  rounds went (async_progress): node/run/async_gossip_round.hpp
// A pattern owns the buffers of its steps. Round t calls encode, exchange, absorb, in that order,
// between the algorithm's outgoing(t) and finish(t). Which one a node runs is chosen in
// node/run/pattern_factory.hpp. Not thread-safe: the node's one thread.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "core/status.hpp"
#include "gossip/transport.hpp"

namespace qgossip {

class exchange;
class message_codec;
class message_inbox;

class round_pattern {
 public:
  virtual ~round_pattern() = default;
  // The node's own message of round t: encoded, and what its receivers will decode applied to the
  // algorithm (absorb_own), or kept for the sum.
  virtual void encode(std::span<const float> outgoing, std::uint64_t t) = 0;
  // Sends it and gathers what round t needs from the peers. Errors: the exchange's.
  [[nodiscard]] virtual status exchange(std::uint64_t t) = 0;
  // Hands what arrived to the algorithm.
  virtual void absorb(std::uint64_t t) = 0;
  // Whom the node's messages go to, for its start-up line: "sends to 1 7".
  [[nodiscard]] virtual std::string describe() const = 0;
  // After the node's last round t: tell the peers and wait until they have finished too
  // (exchange::finish), absorbing what slower ones still send where the pattern needs it.
  [[nodiscard]] virtual status leave(std::uint64_t t, transport_clock::time_point deadline) = 0;
};

// How an asynchronous pattern's rounds went, beside round_pattern (async_gossip_round has it; a
// synchronous round waits for every peer, so none of this can happen there). The round steps look
// it up once (async_progress_of) and read it for the loop's end, the log and the summary.
class async_progress {
 public:
  virtual ~async_progress() = default;
  // True when no peer will send anything more (every one finished) and the node has caught up with
  // them: it stops.
  [[nodiscard]] virtual bool peers_done() const = 0;
  // True when the next round is to take no training step, only mix (every neighbour has finished,
  // and the node catches up with their final models before it stops).
  [[nodiscard]] virtual bool mixing_only() const = 0;
  // The staleness the latest round mixed with: its round minus the oldest newest message of a
  // neighbour.
  [[nodiscard]] virtual std::uint64_t staleness() const = 0;
  // Rounds that sent no message so far (on a busy uplink).
  [[nodiscard]] virtual std::uint64_t rounds_unsent() const = 0;
  // Messages not sent so far: one per round and neighbour whose link was busy.
  [[nodiscard]] virtual std::uint64_t messages_unsent() const = 0;
};
// The pattern's async_progress, or nullptr for a synchronous one.
[[nodiscard]] const async_progress* async_progress_of(const round_pattern& pattern);

// What a pattern needs of the links, known before they are built: whom train messages go to and
// come from, how many exchange iterations a round takes (probes are numbered after them), and how
// far ahead of this node a peer's messages may come (the exchange's lookahead).
struct pattern_shape {
  std::vector<int> train_peers;
  std::uint64_t iterations_per_round = 1;
  std::uint64_t lookahead = 1;
  bool gossip = true;  // train messages carry the learner's codec (an inbox decodes them)
  std::uint64_t max_staleness = 0;  // gossip: > 0 for asynchronous rounds (train.max_staleness)
};
// The shape of `pattern` for node rank of n whose algorithm mixes with row_neighbours, with gossip
// at most max_staleness rounds ahead of a neighbour (0: synchronous).
[[nodiscard]] pattern_shape shape_of(communication pattern, int rank, int n, const std::vector<int>& row_neighbours,
                                     std::uint64_t max_staleness = 0);

// What a pattern is built from: the learner's algorithm and codec, and the links' exchange and
// inbox (gossip), this node's rank among n, the run's seed, the peers its train messages go to.
struct round_pattern_parts {
  algorithm& alg;
  message_codec& codec;
  class exchange& ex;
  message_inbox* inbox = nullptr;  // gossip only
  int rank = 0, n = 1;
  std::uint64_t seed = 0;
  std::vector<int> train_peers;
  // The plan's rounds (0: not known): asynchronous gossip sends the last one on every link.
  std::uint64_t rounds = 0;
};

}  // namespace qgossip
