#pragma once
// ISGQ's quantizers (algorithms/compress/isgq.hpp): the dithered one, element for element the
// arithmetic of kernels/cpu/dither.hpp; the uniform one without dither; the mse variant's step and
// reconstruction points. Part of isgq.cpp, apart so that the codec reads as what it sends.
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"

namespace qgossip::isgq_parts {

// Values per inner step of the dither loops: one tile's uniforms stay in L1.
inline constexpr std::size_t kTile = 1024;

// codes = clamp(floor(fl(x / kappa) + u), -K, K) + K, u the stream's uniforms from draw `first` on;
// kappa 0 (or not > 0): every code K.
void dither_codes(std::span<const float> x, float kappa, std::uint32_t levels, const kernels::philox_stream& rng,
                  std::uint64_t first, std::span<std::uint16_t> codes);
// The values of dithered codes: kappa ((code - K) - (u - 1/2)), rounded once to float.
// REQUIRES: kappa > 0 and every code <= 2K (or kappa == 0 and every code K).
void dither_values(std::span<const std::uint16_t> codes, float kappa, std::uint32_t levels,
                   const kernels::philox_stream& rng, std::uint64_t first, std::span<float> out);
// The uniform quantizer's bins, no dither: q = clamp(floor(fl(x / kappa) + 1/2), -K, K).
void nearest_codes(std::span<const float> x, float kappa, std::uint32_t levels, std::span<std::uint16_t> codes);
// The mse variant's step for matrix m: the least squared error among kappa_max 2^(-j/4).
[[nodiscard]] float mse_step(std::span<const float> m, std::uint32_t levels, float kappa_max);
// out[i] = points[codes[i]].
void point_values(std::span<const std::uint16_t> codes, std::span<const float> points, std::span<float> out);
// The dither's scale of matrix m (kernels::dither_scale). REQUIRES: m finite.
[[nodiscard]] float scale_of(std::span<const float> m, std::uint32_t levels);

}  // namespace qgossip::isgq_parts
