#pragma once
// Bulk uniforms from a Philox stream: the hot loop of stochastic rounding. Produces exactly what
// philox_stream::uniform(i) gives element by element (tested for every SIMD path), 8 (AVX2) or 16
// (AVX-512, picked at run time) counters at a time. Integer arithmetic only, so every path gives the
// same bits. Thread safety: pure functions.
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/simd.hpp"

namespace qgossip::kernels {

// out[k] = stream.uniform(first + k) for every k < out.size(), with the fastest path this CPU has.
void philox_uniforms(const philox_stream& stream, std::uint64_t first, std::span<float> out);

// Test and benchmark knob: one implementation by name (portable is the scalar reference loop).
// REQUIRES: simd_supported(simd) (QG_ENFORCE).
void philox_uniforms(simd_level simd, const philox_stream& stream, std::uint64_t first, std::span<float> out);

}  // namespace qgossip::kernels
