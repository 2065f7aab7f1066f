#pragma once
// The Metropolis–Hastings mixing row of one node, from its neighbours and their degrees alone: what a
// node computes for remix (algorithm.hpp) when a neighbour leaves and the graph shrinks. Over the
// whole graph these rows form the same W as make_weights(g, metropolis_hastings) (topology/weights.hpp),
// bit for bit: symmetric (W_ij depends on the pair's degrees only) and doubly stochastic.
#include <vector>

#include "algorithms/algorithm.hpp"

namespace qgossip {

// Metropolis–Hastings row for `rank` with the given surviving neighbours and degrees:
// W_ij = 1/(1 + max(d_i, d_j)), W_ii = 1 − Σ_j W_ij (summed in ascending neighbour order).
// degrees[k] is neighbours[k]'s current degree (in the surviving graph), own degree d_i =
// neighbours.size(). Neighbours may come in any order; the row lists them ascending. Throws
// invariant_error for sizes that differ, a neighbour equal to rank, a duplicate, a negative rank or a
// degree < 1. No neighbours: the row {rank, self_weight 1}.
mixing_row metropolis_row(int rank, std::vector<int> neighbours, std::vector<int> degrees);

}  // namespace qgossip
