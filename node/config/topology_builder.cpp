#include "node/config/topology_builder.hpp"

#include "core/errors.hpp"
#include "topology/graph.hpp"
#include "topology/weights.hpp"

namespace qgossip {

topology build_topology(const topology_config& c, bool validate) {
  try {
    graph_spec spec{.kind = c.graph, .n = c.n, .rows = c.rows, .cols = c.cols, .dim = c.dim, .edges = c.edges};
    graph g = make_graph(spec);  // also checks n against rows*cols (torus) or 2^dim (hypercube)
    const weight_kind kind = c.weights;
    Eigen::MatrixXd explicit_matrix;
    if (kind == weight_kind::explicit_matrix) {
      explicit_matrix.resize(static_cast<Eigen::Index>(c.matrix.size()),
                             c.matrix.empty() ? 0 : static_cast<Eigen::Index>(c.matrix[0].size()));
      for (std::size_t i = 0; i < c.matrix.size(); ++i) {
        if (c.matrix[i].size() != c.matrix[0].size())
          throw config_error("matrix row " + std::to_string(i) + " has " + std::to_string(c.matrix[i].size()) +
                             " entries, row 0 has " + std::to_string(c.matrix[0].size()));
        for (std::size_t j = 0; j < c.matrix[i].size(); ++j)
          explicit_matrix(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = c.matrix[i][j];
      }
    }
    if (validate) return make_topology(std::move(g), kind, explicit_matrix);
    Eigen::MatrixXd w = make_weights(g, kind, explicit_matrix);
    return topology(std::move(g), std::move(w));
  } catch (const config_error& e) {
    if (e.has_position()) throw;
    throw config_error(c.file, 0, 0, "topology: " + e.message());
  }
}

}  // namespace qgossip
