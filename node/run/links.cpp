#include "node/run/links.hpp"

#include <algorithm>

#include "algorithms/capabilities.hpp"
#include "gossip/exchange/state_chunks.hpp"
#include "node/run/pattern_factory.hpp"
#include "node/run/plan.hpp"
#include "node/run/run_control.hpp"
#include "node/run/start_up.hpp"

namespace qgossip {

namespace {

// A program's node with τ unbounded: the rounds of messages a link's queues hold (messages_in_flight).
constexpr std::uint64_t kProgramUnboundedInFlight = 8;

std::vector<int> sorted_union(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

// Who this node talks to, and how far ahead their messages may come: a peer may run ahead by one
// round in gossip, by up to n−1 exchange iterations in a ring all-reduce, and a probe may come from a
// node up to n−1 hops (rounds) away.
void plan_peers(const run_config& c, int rank, const node_learner& learner, node_links& l) {
  const int n = c.topology.n;
  l.shape = shape_of(learner.alg->pattern(), rank, n, learner.alg->row().neighbours, c.train.max_staleness);
  l.probing = c.train.consensus_every > 0 && n > 1;
  l.all_others = complete_mixing_row(rank, n).neighbours;
  l.peers = l.probing ? sorted_union(l.shape.train_peers, rank == 0 ? l.all_others : std::vector<int>{0})
                      : l.shape.train_peers;
  if (l.probing) l.shape.lookahead = std::max<std::uint64_t>(l.shape.lookahead, static_cast<std::uint64_t>(std::max(n, 2)));
}

// A rejoining state: a model and a public state, float32.
std::size_t state_bytes(std::size_t params) { return 2 * params * sizeof(float); }

// network.max_message_mib in bytes: a rejoining state's chunks.
std::size_t chunk_bytes(const run_config& c) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(c.network.max_message_mib * double(1u << 20)));
}

exchange_options exchange_options_for(const run_config& c, int rank, const node_links& l, std::size_t params) {
  exchange_options eo;
  eo.rank = rank;
  eo.neighbours = l.peers;
  eo.lookahead = l.shape.lookahead;
  eo.run_id = c.run_id;
  eo.first_deadline = to_ms(c.network.start_timeout_s);
  eo.round_deadline = to_ms(c.network.round_timeout_s);
  // A live neighbour is waited for (network.stall_timeout_s: none = as long as it is alive, 0 = not).
  if (!c.network.stall_timeout_s)
    eo.live_wait = std::chrono::milliseconds{0};
  else if (*c.network.stall_timeout_s > 0)
    eo.live_wait = to_ms(*c.network.stall_timeout_s);
  eo.max_payload_bytes = l.network->max_payload_bytes();
  eo.max_rejected = static_cast<std::uint32_t>(c.network.max_rejected);
  eo.max_chunk_bytes = chunk_bytes(c);
  eo.max_state_bytes = state_bytes(params);
  eo.asynchronous = l.shape.gossip && l.shape.max_staleness > 0;
  // A neighbour that never starts, or hangs, is dropped where it may come back.
  eo.drop_silent = l.membership->back != nullptr;
  return eo;
}

// Nodes come back (node/run/returns.hpp) where they may leave (continue) and rounds are
// synchronous gossip without probes.
bool rejoins(const run_config& c, const node_links& l) {
  return c.network.on_peer_failure == peer_failure_policy::train_on && l.shape.gossip && l.shape.max_staleness == 0 &&
         !l.probing;
}

// How many of a peer's messages may be in flight to or from this node at once (the transport's
// queues): a couple per round of lookahead; asynchronous gossip, every round a neighbour may run ahead
// (all of the run's when unbounded). A program's node, whose run has no length, with τ unbounded: its
// rounds skip a busy link (check_external refuses the algorithms whose rounds do not), so a link holds
// a message or so of its and a full queue is a busy link; kProgramUnboundedInFlight bounds the queues.
std::uint64_t messages_in_flight(const node_links& l, std::uint64_t rounds) {
  if (l.shape.max_staleness == 0) return l.shape.lookahead;
  if (rounds == kProgramRounds && l.shape.max_staleness == kUnboundedStaleness) return kProgramUnboundedInFlight;
  return std::min(l.shape.max_staleness, rounds) + 1;
}

}  // namespace

node_links open_links(const run_config& c, int rank, const topology& topo, node_learner& learner,
                      run_log& log, std::uint64_t rounds) {
  node_links l;
  plan_peers(c, rank, learner, l);
  const std::size_t params = learner.model->num_params();
  // A probe carries a model; a rejoining state a model and a public state, in chunks.
  const std::size_t state_chunk = std::min(state_bytes(params), chunk_bytes(c)) + kChunkHeaderBytes;
  const std::size_t largest = std::max({learner.codec->max_encoded_bytes(), l.probing ? params * sizeof(float) : std::size_t{0},
                                        rejoins(c, l) ? state_chunk : std::size_t{0}});
  start_up_step("opening the network");
  // Host names that do not resolve, or that are not this machine's, are said now rather than after
  // the start time-out.
  check_hosts(c, rank, l.peers, [rank](const std::string& line) { say(rank, line); });
  const std::uint64_t in_flight = messages_in_flight(l, rounds);
  const std::string sizes = "messages of up to " + std::to_string(largest) + " bytes, " +
                            std::to_string(in_flight) + " rounds ahead";
  l.network = allocating([&] { return "opening the network (" + sizes + ")"; },
                         [&] { return std::make_unique<node_network>(c, rank, l.peers, largest, in_flight); });
  // Messages that add into the algorithm's copies stay encoded until they are added (message_inbox.hpp).
  const bool adding = additive_messages_of(*learner.alg) != nullptr && learner.codec->adds_decoded();
  if (l.shape.gossip)
    l.inbox = std::make_unique<message_inbox>(*learner.codec, c.seed, l.shape.train_peers, params, adding);
  l.membership = std::make_unique<node_membership>(c, topo, rank, l.peers, l.shape.train_peers, rejoins(c, l), rounds,
                                                   params, learner.codec->max_encoded_bytes(), *learner.alg, log);
  allocating(
      [&] { return "allocating the exchange's buffers (" + std::to_string(l.peers.size()) + " peers, " + sizes + ")"; },
      [&] {
        l.events = std::make_unique<link_events>(rank, *l.membership, l.inbox.get());
        l.ex = std::make_unique<exchange>(l.network->link(), exchange_options_for(c, rank, l, params), l.events.get());
        l.pattern = make_round_pattern(l.shape, {.alg = *learner.alg,
                                                 .codec = *learner.codec,
                                                 .ex = *l.ex,
                                                 .inbox = l.inbox.get(),
                                                 .rank = rank,
                                                 .n = c.topology.n,
                                                 .seed = c.seed,
                                                 .train_peers = l.shape.train_peers,
                                                 .rounds = rounds});
        l.async = async_progress_of(*l.pattern);
      });
  return l;
}

}  // namespace qgossip
