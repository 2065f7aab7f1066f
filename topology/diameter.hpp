#pragma once
// The graph distance that bounds how far apart two nodes' rounds can be: the checkpoints a node
// keeps (node/run/resume.hpp), the margin of a halt proposal, and how old news of a departure
// may be and still be new (node/membership/membership.hpp).

namespace qgossip {

class topology;

// The greatest graph distance between two nodes (0 for one node). REQUIRES: a connected topology
// (of a split one: the widest of its parts).
[[nodiscard]] int graph_diameter(const topology& t);

}  // namespace qgossip
