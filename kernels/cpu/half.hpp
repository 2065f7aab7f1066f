#pragma once
// 16-bit float casts: IEEE binary16 ("fp16", 1 sign, 5 exponent, 10 fraction bits) and bfloat16
// ("bf16", the top half of a float32: 1 sign, 8 exponent, 7 fraction bits). Bit-exact and portable:
// integer operations plus one correctly rounded float addition, no F16C or compiler flag involved, so
// every machine produces the same bits (loops auto-vectorize at -O3).
//
// float -> 16 bits rounds to nearest, ties to even, and SATURATES instead of overflowing:
//   fp16: |x| >= 65520 (where round-to-nearest would give infinity) becomes +-65504 (0x7BFF / 0xFBFF);
//         |x| < 2^-25 becomes +-0 (2^-25 itself is a tie and goes to even, i.e. 0); the fp16
//         subnormals (multiples of 2^-24 below 2^-14) are produced exactly.
//   bf16: |x| >= (2 - 2^-8) * 2^127 becomes +-bf16 max (0x7F7F / 0xFF7F); float subnormals round to the
//         bf16 subnormal grid (2^-133).
// The sign is kept (-0 stays -0). REQUIRES: finite input (NaN/Inf give unspecified bits; the codecs
// refuse them before converting). 16 bits -> float is exact for every finite pattern.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>

namespace qgossip::kernels {

inline constexpr std::uint16_t kHalfMaxBits = 0x7BFF;  // 65504
inline constexpr std::uint16_t kBf16MaxBits = 0x7F7F;  // (2 - 2^-7) * 2^127

std::uint16_t float_to_half(float x);
float half_to_float(std::uint16_t h);
std::uint16_t float_to_bf16(float x);
float bf16_to_float(std::uint16_t h);

// True iff the pattern is a NaN or an infinity (all exponent bits set).
constexpr bool half_is_non_finite(std::uint16_t h) { return (h & 0x7C00u) == 0x7C00u; }
constexpr bool bf16_is_non_finite(std::uint16_t h) { return (h & 0x7F80u) == 0x7F80u; }

// Bulk forms, element by element identical to the scalar ones. The 16-bit values travel as
// little-endian byte pairs. REQUIRES: out.size() == 2 * in.size(), resp. in.size() == 2 * out.size().
void floats_to_half(std::span<const float> in, std::span<std::byte> out);
void floats_to_bf16(std::span<const float> in, std::span<std::byte> out);
// Decode: returns the index of the first NaN/Inf pattern (out is then unspecified up to and past it),
// or out.size() when every value is finite.
[[nodiscard]] std::size_t half_to_floats(std::span<const std::byte> in, std::span<float> out);
[[nodiscard]] std::size_t bf16_to_floats(std::span<const std::byte> in, std::span<float> out);

}  // namespace qgossip::kernels
