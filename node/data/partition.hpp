#pragma once
// Splitting a data set among n nodes. Every function returns node `rank`'s shard: the indices of
// its examples, sorted ascending. Over all ranks 0..n-1 (same arguments otherwise) the shards are
// disjoint and cover every example exactly once; for iid and label, shard sizes differ by at most
// one (rank r holds floor((r+1)·N/n) − floor(r·N/n) examples). Deterministic in the seed on every
// platform, so every node computes its own shard without talking to the others.
// Errors: n_nodes < 1, rank outside [0, n_nodes), fewer examples than nodes, skew outside [0, 1]
// or a label >= classes throw config_error.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qgossip {

// I.i.d. split: a seeded shuffle of 0..N-1, then contiguous, nearly equal pieces of it.
[[nodiscard]] std::vector<std::size_t> partition_iid(std::size_t n_examples, int n_nodes, int rank,
                                                     std::uint64_t seed);

// Label-skewed (non-i.i.d.) split with a knob `skew` in [0, 1]:
//  - shuffle 0..N-1 with the seed (the same permutation partition_iid uses);
//  - node r's shard of size s_r is made of k_r = floor(skew·s_r) "skewed" examples and s_r − k_r
//    i.i.d. ones. The first Σk_r examples of the permutation are stably sorted by label and cut
//    into contiguous pieces of sizes k_0, k_1, …; the rest of the permutation is cut into
//    contiguous pieces of sizes s_r − k_r.
// So skew = 0 gives exactly partition_iid's shards; skew = 1 gives sorted-by-label shards, each
// node seeing only its own ~classes/n labels (about ceil(classes/n)+1 at most with balanced
// labels); in between, a fraction `skew` of each shard comes from the node's label range and the
// rest follows the global label distribution.
[[nodiscard]] std::vector<std::size_t> partition_by_label(std::span<const std::uint8_t> labels,
                                                          std::size_t classes, int n_nodes, int rank,
                                                          std::uint64_t seed, double skew);

// Dirichlet (non-i.i.d.) split, as in Hsu, Qi and Brown (2019) and the benchmarks that follow them:
// for each class c, proportions p_c ~ Dir(alpha, ..., alpha) over the n nodes, and the class's
// examples (in the seeded shuffle's order) cut among the nodes at the cumulative proportions. Small
// alpha: each node holds a few classes, in shards of unequal size; large alpha: close to iid (each
// class about 1/n per node). Every node draws every class's proportions from the seed, so all agree.
// A draw that leaves some node with fewer than min_examples is drawn again (the usual practice),
// at most 1000 times; then config_error says alpha is too small for n nodes. Unlike the two above,
// shard sizes are not balanced. Errors also: alpha not > 0, min_examples·n_nodes > N, labels as above.
[[nodiscard]] std::vector<std::size_t> partition_dirichlet(std::span<const std::uint8_t> labels,
                                                           std::size_t classes, int n_nodes, int rank,
                                                           std::uint64_t seed, double alpha,
                                                           std::size_t min_examples = 1);

}  // namespace qgossip
