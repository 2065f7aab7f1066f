#include "topology/diameter.hpp"

#include <algorithm>
#include <deque>
#include <vector>

#include "topology/topology.hpp"

namespace qgossip {

int graph_diameter(const topology& t) {
  int diameter = 0;
  for (int from = 0; from < t.n(); ++from) {
    std::vector<int> distance(static_cast<std::size_t>(t.n()), -1);
    std::deque<int> next{from};
    distance[static_cast<std::size_t>(from)] = 0;
    while (!next.empty()) {
      const int i = next.front();
      next.pop_front();
      for (int j : t.neighbours(i))
        if (distance[static_cast<std::size_t>(j)] < 0) {
          distance[static_cast<std::size_t>(j)] = distance[static_cast<std::size_t>(i)] + 1;
          diameter = std::max(diameter, distance[static_cast<std::size_t>(j)]);
          next.push_back(j);
        }
    }
  }
  return diameter;
}

}  // namespace qgossip
