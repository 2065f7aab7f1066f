#pragma once
// Mixing weights: the matrix W that D-PSGD, DCD-PSGD and ECD-PSGD average with
// (x_i <- sum_j W_ij x_j over j in N(i) and i itself).
//   uniform:             W_ij = 1/(max_degree + 1) on every edge, W_ii = 1 - sum of row i's edge weights.
//                        Symmetric and doubly stochastic; on a ring every entry is 1/3.
//   metropolis_hastings: W_ij = 1/(1 + max(d_i, d_j)) on every edge, W_ii takes the rest. Symmetric and
//                        doubly stochastic on any graph, and mixes faster than uniform on irregular ones.
//   explicit_matrix:     a given dense n x n matrix ("explicit" in configs), used as is;
//                        topology::validate() checks it.
#include <optional>
#include <string_view>

#include <Eigen/Core>

#include "topology/graph.hpp"

namespace qgossip {

enum class weight_kind { uniform, metropolis_hastings, explicit_matrix };
inline constexpr named<weight_kind> kWeightNames[] = {
    {weight_kind::uniform, "uniform"},
    {weight_kind::metropolis_hastings, "metropolis_hastings"},
    {weight_kind::explicit_matrix, "explicit"},
};
constexpr std::span<const named<weight_kind>> names_of(weight_kind) { return kWeightNames; }

// Throws config_error when kind is explicit_matrix and `explicit_matrix` is not n x n, or when a
// non-empty matrix is given with another kind (it would be silently ignored).
Eigen::MatrixXd make_weights(const graph& g, weight_kind kind,
                             const Eigen::MatrixXd& explicit_matrix = Eigen::MatrixXd());

}  // namespace qgossip
