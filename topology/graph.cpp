#include "topology/graph.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <sstream>

#include "core/errors.hpp"

namespace qgossip {

graph::graph(int n, std::span<const edge> edges) {
  QG_ENFORCE(n >= 1, "n=" << n);
  std::vector<std::vector<int>> adjacency(n);
  for (auto [i, j] : edges) {
    QG_ENFORCE(0 <= i && i < n && 0 <= j && j < n && i != j, "edge (" << i << ", " << j << ") n=" << n);
    adjacency[i].push_back(j);
    adjacency[j].push_back(i);
  }
  offsets_.reserve(n + 1);
  for (auto& list : adjacency) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    targets_.insert(targets_.end(), list.begin(), list.end());
    offsets_.push_back(static_cast<int>(targets_.size()));
  }
}

std::span<const int> graph::neighbours(int i) const {
  QG_ENFORCE(0 <= i && i < n(), "i=" << i << " n=" << n());
  return std::span<const int>(targets_).subspan(offsets_[i], offsets_[i + 1] - offsets_[i]);
}

int graph::min_degree() const {
  int d = n() > 0 ? degree(0) : 0;
  for (int i = 1; i < n(); ++i) d = std::min(d, degree(i));
  return d;
}

int graph::max_degree() const {
  int d = 0;
  for (int i = 0; i < n(); ++i) d = std::max(d, degree(i));
  return d;
}

bool graph::has_edge(int i, int j) const {
  auto list = neighbours(i);
  return std::binary_search(list.begin(), list.end(), j);
}

std::vector<edge> graph::edges() const {
  std::vector<edge> out;
  out.reserve(num_edges());
  for (int i = 0; i < n(); ++i)
    for (int j : neighbours(i))
      if (i < j) out.emplace_back(i, j);
  return out;
}

std::optional<int> graph::first_unreachable() const {
  if (n() <= 0) return std::nullopt;
  std::vector<char> seen(n(), 0);
  std::vector<int> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    for (int j : neighbours(i))
      if (!seen[j]) seen[j] = 1, stack.push_back(j);
  }
  auto it = std::find(seen.begin(), seen.end(), 0);
  if (it == seen.end()) return std::nullopt;
  return static_cast<int>(it - seen.begin());
}

namespace {

// Throws "<what> needs <name> in [lo, hi] (got v)".
void require_range(const char* what, const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi) {
    std::ostringstream os;
    os << what << " needs " << name << " in [" << lo << ", " << hi << "] (got " << value << ")";
    throw config_error(os.str());
  }
}

}  // namespace

graph ring(int n) {
  require_range("ring", "n", n, 2, kMaxNodes);
  std::vector<edge> edges;
  for (int i = 0; i < n; ++i) edges.emplace_back(i, (i + 1) % n);
  return graph(n, edges);
}

graph torus(int rows, int cols) {
  require_range("torus", "rows", rows, 1, kMaxNodes);
  require_range("torus", "cols", cols, 1, kMaxNodes);
  require_range("torus", "rows*cols", std::int64_t{rows} * cols, 2, kMaxNodes);
  // With rows == 2 the up and down neighbours coincide (merged by graph); with rows == 1 there are none.
  std::vector<edge> edges;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      int i = r * cols + c;
      if (rows > 1) edges.emplace_back(i, ((r + 1) % rows) * cols + c);
      if (cols > 1) edges.emplace_back(i, r * cols + (c + 1) % cols);
    }
  }
  return graph(rows * cols, edges);
}

graph complete(int n) {
  require_range("complete", "n", n, 1, kMaxNodes);
  std::vector<edge> edges;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) edges.emplace_back(i, j);
  return graph(n, edges);
}

graph star(int n) {
  require_range("star", "n", n, 2, kMaxNodes);
  std::vector<edge> edges;
  for (int i = 1; i < n; ++i) edges.emplace_back(0, i);
  return graph(n, edges);
}

graph hypercube(int dim) {
  require_range("hypercube", "dim", dim, 0, 12);  // 2^12 == kMaxNodes
  int n = 1 << dim;
  std::vector<edge> edges;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < dim; ++k)
      if (int j = i ^ (1 << k); i < j) edges.emplace_back(i, j);
  return graph(n, edges);
}

graph exponential(int n) {
  require_range("exponential", "n", n, 2, kMaxNodes);
  std::vector<edge> edges;  // i - 2^k is covered by (i - 2^k) + 2^k
  for (int i = 0; i < n; ++i)
    for (int step = 1; step < n; step *= 2) edges.emplace_back(i, (i + step) % n);
  return graph(n, edges);
}

graph edge_list(int n, std::span<const edge> edges) {
  require_range("edge_list", "n", n, 1, kMaxNodes);
  std::map<edge, std::size_t> first_index;  // (min, max) -> index of its first occurrence
  for (std::size_t k = 0; k < edges.size(); ++k) {
    auto [i, j] = edges[k];
    std::ostringstream os;
    os << "edge_list: edge " << k << " (" << i << ", " << j << ") ";
    for (int rank : {i, j}) {
      if (rank < 0 || rank >= n) {
        os << "names rank " << rank << ", outside [0, " << n - 1 << "]";
        throw config_error(os.str());
      }
    }
    if (i == j) throw config_error(os.str() + "is a self loop");
    auto [it, inserted] = first_index.try_emplace(edge{std::min(i, j), std::max(i, j)}, k);
    if (!inserted) {
      os << "duplicates edge " << it->second << " (" << edges[it->second].first << ", "
         << edges[it->second].second << ")";
      throw config_error(os.str());
    }
  }
  return graph(n, edges);
}

graph make_graph(const graph_spec& spec) {
  const graph_kind kind = spec.kind;
  const std::string name(name_of(kind));
  // Which fields this kind reads; any other that is set is a mistake worth reporting.
  bool reads_n = kind != graph_kind::torus && kind != graph_kind::hypercube;
  bool reads_grid = kind == graph_kind::torus;
  bool reads_dim = kind == graph_kind::hypercube;
  bool reads_edges = kind == graph_kind::edge_list;
  auto stray = [&](const char* field) {
    throw config_error("graph kind '" + name + "' does not take '" + field + "'");
  };
  if (!reads_grid && spec.rows != 0) stray("rows");
  if (!reads_grid && spec.cols != 0) stray("cols");
  if (!reads_dim && spec.dim != 0) stray("dim");
  if (!reads_edges && !spec.edges.empty()) stray("edges");

  graph g;
  switch (kind) {
    case graph_kind::ring: g = ring(spec.n); break;
    case graph_kind::torus: g = torus(spec.rows, spec.cols); break;
    case graph_kind::complete: g = complete(spec.n); break;
    case graph_kind::star: g = star(spec.n); break;
    case graph_kind::hypercube: g = hypercube(spec.dim); break;
    case graph_kind::exponential: g = exponential(spec.n); break;
    case graph_kind::edge_list: g = edge_list(spec.n, spec.edges); break;
  }
  if (!reads_n && spec.n != 0 && spec.n != g.n()) {
    std::ostringstream os;
    os << "graph kind '" << name << "' gives " << g.n() << " nodes but n = " << spec.n;
    // The size of a torus and a hypercube is set by their own keys: name them, and what n needs.
    if (kind == graph_kind::hypercube) {
      os << ": a hypercube's size is 2^dim (dim: " << spec.dim << ")";
      if ((spec.n & (spec.n - 1)) == 0) os << "; for n = " << spec.n << " set dim: " << std::countr_zero(unsigned(spec.n));
      else os << "; n must be a power of 2";
    } else if (kind == graph_kind::torus) {
      os << ": a torus's size is rows x cols (" << spec.rows << " x " << spec.cols << ")";
    }
    throw config_error(os.str());
  }
  return g;
}

}  // namespace qgossip
