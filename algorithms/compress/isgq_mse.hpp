#pragma once
// MSE-ISGQ (the paper's Alg. 1; algorithms/compress/isgq.hpp, variant mse): the reconstruction
// points of one layer's two factors, fitted in turn by least squares on the layer's gradient. Part
// of isgq.cpp, apart so that the codec reads as what it sends.
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/compress/isgq.hpp"
#include "core/fc_factors.hpp"

namespace qgossip::isgq_parts {

// The uniform quantizer's 2·levels + 1 points: (k - levels)·kappa.
[[nodiscard]] std::vector<float> uniform_points(std::uint32_t levels, float kappa);
// Alg. 1 for one layer: alpha, beta start as the uniform quantizer's points (of cx's and cd's bins);
// each of o.mse_iterations rounds fits beta with alpha fixed, then alpha with beta fixed.
void fit_mse(const fc_factors& f, std::span<const std::uint16_t> cx, std::span<const std::uint16_t> cd,
             const isgq_options& o, std::vector<float>& alpha, std::vector<float>& beta);

}  // namespace qgossip::isgq_parts
