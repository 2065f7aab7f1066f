#pragma once
// The links (docs/design.md): this node's transport (node/run/node_network.hpp), the exchange over
// it, the node's membership (node/run/node_membership.hpp: who is in the run, and the parts that
// answer notices and join messages), and the round pattern its messages travel by
// (node/run/round_pattern.hpp). The exchange is given what it tells the node to
// (node/run/link_events.hpp: the inbox, for gossip, and the membership) when it is built, and hands
// itself to each answer. Built once, after the learner and the log.
#include <memory>
#include <vector>

#include "gossip/exchange.hpp"
#include "node/config/config.hpp"
#include "node/log/run_log.hpp"
#include "node/run/learner.hpp"
#include "node/run/link_events.hpp"
#include "node/run/message_inbox.hpp"
#include "node/run/node_membership.hpp"
#include "node/run/node_network.hpp"
#include "node/run/round_pattern.hpp"
#include "topology/topology.hpp"

namespace qgossip {

struct node_links {
  pattern_shape shape;          // train peers, exchange iterations per round, lookahead
  bool probing = false;         // train.consensus_every: probes to (or, on rank 0, from) everyone
  std::vector<int> all_others;  // every other rank
  std::vector<int> peers;       // every rank this node talks to at all (train peers, probe peers)
  std::unique_ptr<node_network> network;
  std::unique_ptr<message_inbox> inbox;  // gossip only
  std::unique_ptr<node_membership> membership;  // before the exchange, which tells it what it hears
  std::unique_ptr<link_events> events;  // what the exchange tells the node
  std::unique_ptr<class exchange> ex;
  std::unique_ptr<round_pattern> pattern;
  // How the pattern's asynchronous rounds went (async_gossip_round), looked up once when it is
  // built (it stays valid when a wrapper takes the pattern over); null for synchronous rounds.
  const async_progress* async = nullptr;
};

// Opens node `rank`'s links: binds, connects to its peers (throws config_error for a host that does
// not resolve or is not this machine's, a port in use, a missing key), and builds the membership,
// the exchange and the round pattern over the learner's algorithm and codec.
[[nodiscard]] node_links open_links(const run_config& c, int rank, const topology& topo,
                                    node_learner& learner, run_log& log, std::uint64_t rounds);

}  // namespace qgossip
