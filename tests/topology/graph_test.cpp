#include "topology/graph.hpp"

#include <algorithm>
#include <vector>

#include <doctest/doctest.h>

#include "tests/topology/test_util.hpp"

namespace qgossip {
namespace {

using test::config_error_of;
using test::contains;

std::vector<int> neighbours_of(const graph& g, int i) {
  auto list = g.neighbours(i);
  return {list.begin(), list.end()};
}

// The graph contract: sorted, duplicate-free lists, no self loops, j in N(i) iff i in N(j),
// and num_edges consistent with the degrees.
void check_contract(const graph& g) {
  int degree_sum = 0;
  for (int i = 0; i < g.n(); ++i) {
    auto list = neighbours_of(g, i);
    CHECK(std::adjacent_find(list.begin(), list.end(), std::greater_equal<>()) == list.end());
    for (int j : list) {
      CHECK(j != i);
      CHECK(g.has_edge(j, i));
    }
    degree_sum += g.degree(i);
  }
  CHECK(degree_sum == 2 * g.num_edges());
  CHECK(static_cast<int>(g.edges().size()) == g.num_edges());
}

TEST_CASE("ring: each node joins its two cyclic neighbours; n == 2 is one edge") {
  graph g = ring(5);
  check_contract(g);
  CHECK(g.num_edges() == 5);
  CHECK(neighbours_of(g, 0) == std::vector{1, 4});
  CHECK(neighbours_of(g, 3) == std::vector{2, 4});

  graph pair = ring(2);
  check_contract(pair);
  CHECK(pair.num_edges() == 1);
  CHECK(neighbours_of(pair, 0) == std::vector{1});
  CHECK(contains(config_error_of([] { (void)ring(1); }), "ring needs n in [2, 4096] (got 1)"));
}

TEST_CASE("torus: four neighbours, no duplicate edges when a side is 2 or 1") {
  graph g = torus(3, 4);
  check_contract(g);
  CHECK(g.n() == 12);
  CHECK(g.num_edges() == 24);
  CHECK(g.min_degree() == 4);
  CHECK(g.max_degree() == 4);
  CHECK(neighbours_of(g, 0) == std::vector{1, 3, 4, 8});  // right, left (wrap), down, up (wrap)

  graph two_rows = torus(2, 3);  // up and down are the same node
  check_contract(two_rows);
  CHECK(two_rows.num_edges() == 6 + 3);
  CHECK(neighbours_of(two_rows, 0) == std::vector{1, 2, 3});

  graph square = torus(2, 2);  // a 4-cycle
  check_contract(square);
  CHECK(square.num_edges() == 4);

  graph one_row = torus(1, 5);
  CHECK(one_row.edges() == ring(5).edges());
  CHECK(torus(5, 1).edges() == ring(5).edges());

  CHECK(contains(config_error_of([] { (void)torus(1, 1); }), "rows*cols"));
  CHECK(contains(config_error_of([] { (void)torus(0, 4); }), "torus needs rows"));
  CHECK(contains(config_error_of([] { (void)torus(100, 100); }), "got 10000"));
}

TEST_CASE("complete, star, hypercube, exponential") {
  graph k5 = complete(5);
  check_contract(k5);
  CHECK(k5.num_edges() == 10);
  CHECK(complete(1).num_edges() == 0);

  graph s = star(5);
  check_contract(s);
  CHECK(neighbours_of(s, 0) == std::vector{1, 2, 3, 4});
  for (int leaf = 1; leaf < 5; ++leaf) CHECK(neighbours_of(s, leaf) == std::vector{0});

  graph cube = hypercube(3);
  check_contract(cube);
  CHECK(cube.n() == 8);
  CHECK(cube.num_edges() == 12);
  CHECK(neighbours_of(cube, 5) == std::vector{1, 4, 7});  // 101 -> 001, 100, 111
  CHECK(hypercube(0).n() == 1);
  CHECK(contains(config_error_of([] { (void)hypercube(13); }), "hypercube needs dim in [0, 12]"));

  graph e8 = exponential(8);
  check_contract(e8);
  CHECK(neighbours_of(e8, 0) == std::vector{1, 2, 4, 6, 7});  // +1 +2 +4, -1 -2 (-4 == +4)
  graph e6 = exponential(6);
  CHECK(neighbours_of(e6, 0) == std::vector{1, 2, 4, 5});  // +1 +2 +4, -1 -2 (-4 == +2)
}

TEST_CASE("edge_list: valid lists build; bad ranks, self loops and duplicates are named") {
  std::vector<edge> edges{{0, 1}, {1, 2}, {3, 1}};
  graph g = edge_list(4, edges);
  check_contract(g);
  CHECK(neighbours_of(g, 1) == std::vector{0, 2, 3});

  auto out_of_range = config_error_of([] { (void)edge_list(3, std::vector<edge>{{0, 1}, {1, 3}}); });
  CHECK(contains(out_of_range, "edge 1 (1, 3) names rank 3, outside [0, 2]"));
  auto negative = config_error_of([] { (void)edge_list(3, std::vector<edge>{{-1, 1}}); });
  CHECK(contains(negative, "edge 0 (-1, 1) names rank -1"));
  auto loop = config_error_of([] { (void)edge_list(3, std::vector<edge>{{0, 1}, {2, 2}}); });
  CHECK(contains(loop, "edge 1 (2, 2) is a self loop"));
  auto duplicate = config_error_of([] { (void)edge_list(3, std::vector<edge>{{0, 1}, {1, 2}, {1, 0}}); });
  CHECK(contains(duplicate, "edge 2 (1, 0) duplicates edge 0 (0, 1)"));
}

TEST_CASE("first_unreachable names the smallest node cut off from node 0") {
  CHECK_FALSE(ring(6).first_unreachable().has_value());
  graph split = edge_list(5, std::vector<edge>{{0, 1}, {2, 3}, {3, 4}});
  CHECK(split.first_unreachable() == 2);
  CHECK_FALSE(split.connected());
  CHECK(edge_list(1, {}).connected());
}

TEST_CASE("make_graph reads the fields of its kind and rejects the rest") {
  CHECK(make_graph({.kind = graph_kind::ring, .n = 6}).edges() == ring(6).edges());
  CHECK(make_graph({.kind = graph_kind::torus, .rows = 3, .cols = 4}).edges() == torus(3, 4).edges());
  CHECK(make_graph({.kind = graph_kind::torus, .n = 12, .rows = 3, .cols = 4}).n() == 12);
  CHECK(make_graph({.kind = graph_kind::hypercube, .dim = 4}).n() == 16);
  CHECK(make_graph({.kind = graph_kind::edge_list, .n = 3, .edges = {{0, 2}}}).num_edges() == 1);
  for (auto kind : {graph_kind::ring, graph_kind::torus, graph_kind::complete, graph_kind::star,
                    graph_kind::hypercube, graph_kind::exponential, graph_kind::edge_list})
    CHECK(parse_name<graph_kind>(name_of(kind)) == kind);

  CHECK_FALSE(parse_name<graph_kind>("rnig").has_value());  // the config names the kinds (name_list)
  CHECK(name_list<graph_kind>() == "ring, torus, complete, star, hypercube, exponential, edge_list");
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::ring}); }), "ring needs n in [2, 4096] (got 0)"));
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::ring, .n = 4, .rows = 2}); }),
                 "graph kind 'ring' does not take 'rows'"));
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::star, .n = 3, .edges = {{0, 1}}}); }),
                 "does not take 'edges'"));
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::torus, .n = 10, .rows = 4, .cols = 4}); }),
                 "graph kind 'torus' gives 16 nodes but n = 10"));
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::hypercube, .n = 4, .dim = 3}); }),
                 "gives 8 nodes but n = 4: a hypercube's size is 2^dim (dim: 3); for n = 4 set dim: 2"));
  // Issue 31, item 7: `{graph: hypercube, n: 6}` said only "gives 1 nodes but n = 6".
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::hypercube, .n = 6}); }),
                 "gives 1 nodes but n = 6: a hypercube's size is 2^dim (dim: 0); n must be a power of 2"));
  CHECK(contains(config_error_of([] { (void)make_graph({.kind = graph_kind::torus, .n = 10, .rows = 4, .cols = 4}); }),
                 "a torus's size is rows x cols (4 x 4)"));
}

}  // namespace
}  // namespace qgossip
