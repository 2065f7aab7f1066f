#pragma once
// The mix of D-PSGD (and naive), DCD-PSGD and ECD-PSGD, with or without robust mixing
// (algorithms/robust_mixing.hpp):
//   out = own · base + Σ_{fresh k} W_k · copies[k],   own = W_ii + Σ_{not fresh k} W_k
// (D-PSGD: base x, copies the neighbours' models; DCD-PSGD: base x, copies the replicas; ECD-PSGD:
// base the node's own estimate, copies the neighbours' estimates). With clipping it is
//   out = base + Σ_{fresh k} W_k · CLIP(copies[k] − base, τ)
// in the same form: each W_k scaled by min(1, τ/‖copies[k] − base‖), the rest kept on base.
#include <span>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/robust_mixing.hpp"

namespace qgossip {

// A clip rule and the scratch of its mixes (CHOCO-SGD's too: choco_sgd::clip_terms).
struct clipped_mixing {
  explicit clipped_mixing(const robust_options& o) : rule(o) {}
  clip_rule rule;
  std::vector<float> weights, scales;
  std::vector<double> distances;
};

// Writes the mix into out (base's size: base itself mixes in place, as D-PSGD does; never a copy).
// clip: nullptr mixes as without robust mixing, bit for bit. REQUIRES: copies and fresh have one entry per neighbour of row.
void mix_neighbours(std::span<float> out, std::span<const float> base, std::span<const float_vector> copies,
                    const mixing_row& row, const std::vector<bool>& fresh, clipped_mixing* clip);

}  // namespace qgossip
