#pragma once
// A node's membership (docs/design.md, "Notices"): its view of who is in the run (membership), the
// board that dispatches the notices and join messages it hears (node/membership/notice_board.hpp),
// and the four parts that answer them, each registered with the board for its kinds:
//   left    departures: left, degree; failed peers, the stop cause, proven hostile (departures.hpp)
//   start   the start check: every node starts from the same model (start_check.hpp)
//   halt    the halt agreement: SIGUSR1's agreed last round (halt_agreement.hpp)
//   back    returns: joined, join, offer, accept, refuse; rejoining (returns.hpp), where nodes come
//           back (continue with synchronous gossip without probes), else null
// Built before the exchange, which then hands itself (link_control) to every answer. Not copyable
// or movable: the parts refer to each other.
#include <cstdint>
#include <memory>
#include <vector>

#include "node/membership/membership.hpp"
#include "node/membership/notice_board.hpp"
#include "node/run/departures.hpp"
#include "node/run/halt_agreement.hpp"
#include "node/run/returns.hpp"
#include "node/run/start_check.hpp"
#include "topology/topology.hpp"

namespace qgossip {

class algorithm;
class run_log;
struct run_config;

struct node_membership {
  // peers: every rank the node's exchange talks to; train_peers: its graph neighbours; rejoins:
  // nodes come back (then rounds, model_size and message_bytes are the run's last round, the model's
  // size and the largest train message: returns.hpp).
  node_membership(const run_config& c, const topology& topo, int rank, std::vector<int> peers,
                  std::vector<int> train_peers, bool rejoins, std::uint64_t rounds, std::uint64_t model_size,
                  std::uint64_t message_bytes, algorithm& alg, run_log& log);
  node_membership(const node_membership&) = delete;
  node_membership& operator=(const node_membership&) = delete;

  membership members;
  notice_board board;
  departures left;
  start_check start;
  halt_agreement halt;
  std::unique_ptr<returns> back;
};

}  // namespace qgossip
