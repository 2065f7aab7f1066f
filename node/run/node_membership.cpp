#include "node/run/node_membership.hpp"

#include "node/config/config.hpp"

namespace qgossip {

namespace {

// Metropolis–Hastings re-weighting after a departure (node/membership/membership.hpp).
bool reweights(const run_config& c) {
  return c.topology.weights == weight_kind::uniform || c.topology.weights == weight_kind::metropolis_hastings;
}

}  // namespace

node_membership::node_membership(const run_config& c, const topology& topo, int rank, std::vector<int> peers,
                                 std::vector<int> train_peers, bool rejoins, std::uint64_t rounds,
                                 std::uint64_t model_size, std::uint64_t message_bytes, algorithm& alg,
                                 run_log& log)
    : members(topo, rank, reweights(c)),
      board(rank, topo.n(), members),
      left(c, rank, members, std::move(peers), rejoins, alg, log, board),
      start(left, board),
      halt(rank, members, left, board) {
  if (rejoins)
    back = std::make_unique<returns>(rank, rounds, model_size, message_bytes, topo, reweights(c), members,
                                     std::move(train_peers), left, alg, log, board);
}

}  // namespace qgossip
