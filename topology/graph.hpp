#pragma once
// An undirected communication graph over ranks 0..n-1 and the builders for the named families
// (ring, torus, complete, star, hypercube, exponential, explicit edge list).
// Contract of every `graph`: no self loops, no duplicate edges, each neighbour list sorted ascending.
// Builders throw config_error (no file position; the config loader adds it) saying what was expected.
// Thread-safety: immutable after construction, so const access from any thread is safe.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/names.hpp"

namespace qgossip {

// W is stored dense (n x n doubles) on every node, so n is capped: 4096 nodes is 128 MiB.
inline constexpr int kMaxNodes = 4096;

using edge = std::pair<int, int>;

class graph {
 public:
  graph() = default;
  // REQUIRES: 1 <= n, every edge (i, j) has 0 <= i, j < n and i != j (QG_ENFORCE).
  // Duplicates, in either orientation, merge into one edge: the builders rely on it (ring(2), torus 2xN).
  graph(int n, std::span<const edge> edges);

  int n() const { return static_cast<int>(offsets_.size()) - 1; }
  int num_edges() const { return static_cast<int>(targets_.size()) / 2; }
  // Sorted ascending.
  std::span<const int> neighbours(int i) const;
  int degree(int i) const { return static_cast<int>(neighbours(i).size()); }
  int min_degree() const;
  int max_degree() const;
  bool has_edge(int i, int j) const;
  // Every edge once as (i, j) with i < j, in lexicographic order.
  std::vector<edge> edges() const;
  // The smallest rank not reachable from rank 0, or nullopt when the graph is connected.
  std::optional<int> first_unreachable() const;
  bool connected() const { return !first_unreachable().has_value(); }

 private:
  // Compressed adjacency: the neighbours of i are targets_[offsets_[i] .. offsets_[i+1]).
  std::vector<int> offsets_{0};
  std::vector<int> targets_;
};

// The builders. Each states its domain; outside it they throw config_error.
graph ring(int n);                  // n >= 2; i ~ i±1 mod n (n == 2 is a single edge)
graph torus(int rows, int cols);    // rows, cols >= 1, rows*cols >= 2; 2-D wrap-around grid, node r*cols + c
graph complete(int n);              // n >= 1
graph star(int n);                  // n >= 2; node 0 is the hub
graph hypercube(int dim);           // 0 <= dim <= 12; n = 2^dim, i ~ i xor 2^k
graph exponential(int n);           // n >= 2; i ~ i±2^k mod n for every 2^k < n
// n >= 1; rejects an out-of-range rank, a self loop, or a duplicate (in either orientation),
// naming the edge by its index in `edges`.
graph edge_list(int n, std::span<const edge> edges);

enum class graph_kind { ring, torus, complete, star, hypercube, exponential, edge_list };
inline constexpr named<graph_kind> kGraphNames[] = {
    {graph_kind::ring, "ring"},           {graph_kind::torus, "torus"},
    {graph_kind::complete, "complete"},   {graph_kind::star, "star"},
    {graph_kind::hypercube, "hypercube"}, {graph_kind::exponential, "exponential"},
    {graph_kind::edge_list, "edge_list"},
};
constexpr std::span<const named<graph_kind>> names_of(graph_kind) { return kGraphNames; }

// The graph part of a topology config, as the config loader fills it. Which fields a kind reads:
//   ring, complete, star, exponential: n        torus: rows, cols        hypercube: dim
//   edge_list: n, edges
// For torus and hypercube, n may be left 0 or set to the node count (the loader sets it from the
// node list); a different value is an error. Fields a kind does not read must stay 0 / empty.
struct graph_spec {
  graph_kind kind = graph_kind::ring;
  int n = 0;
  int rows = 0;
  int cols = 0;
  int dim = 0;
  std::vector<std::pair<int, int>> edges = {};  // "= {}" keeps -Wextra quiet on designated initializers
};

// Throws config_error for a missing or stray field, or anything the builder rejects.
graph make_graph(const graph_spec& spec);

}  // namespace qgossip
