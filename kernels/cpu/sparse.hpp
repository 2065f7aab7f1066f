#pragma once
// Sparse vectors on the CPU: choosing which positions to keep (Bernoulli, a uniform k-subset, the top
// k magnitudes), gathering and scattering their values, and coding the sorted positions compactly.
// The codecs randsparse, randk and topk (algorithms/compress/) are built from these; docs/codecs.md
// states the formats in prose. Positions are 32-bit: the wire's element count is 32-bit.
//
// Position coding of m ascending positions p_0 < ... < p_{m-1} < n, named by a one-byte tag:
//   tag 0 (bitmap): n bits, bit i set iff i is a position; ceil(n/8) bytes, the padding bits zero.
//   tag 1 + r, 0 <= r <= 31 (Rice): for each gap g_j = p_j - p_{j-1} - 1 (p_{-1} = -1), q = g_j >> r
//       one-bits, a zero-bit, then the low r bits of g_j, least significant first; zero-padded to a byte.
// Bits fill each byte from its least significant bit (bit j of the stream is bit j % 8 of byte j / 8),
// as in kernels/cpu/bitpack.hpp. Rice with r ~ log2(mean gap) is within a few percent of the entropy
// of Bernoulli positions; the encoder takes whichever of bitmap and Rice (three r values tried) is
// smallest, so a coding is never longer than the bitmap.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/philox.hpp"

namespace qgossip::kernels {

inline constexpr std::uint8_t kBitmapTag = 0;
inline constexpr std::uint8_t kMaxRiceTag = 32;  // r = 31

// --- choosing positions -------------------------------------------------------------------------

// Bernoulli selection: keeps every i with rng.uniform(i) < threshold * 2^-24, i.e. with probability
// exactly threshold / 2^24, and appends i to positions and fl(v[i] * scale) to values, in order.
// REQUIRES: 1 <= threshold <= 2^24, v.size() < 2^32 (QG_ENFORCE).
void bernoulli_select(std::span<const float> v, const philox_stream& rng, std::uint32_t threshold, float scale,
                      std::vector<std::uint32_t>& positions, std::vector<float>& values);

// A uniformly random k-subset of {0, ..., n-1}, ascending, by Floyd's algorithm: for j = n-k .. n-1,
// t = a uniform integer in [0, j] (Lemire's multiply-and-reject on 32-bit Philox words, word c % 4 of
// block c / 4 for the c-th draw); take t, or j when t is taken already. Exactly uniform, O(k) draws and
// n bits of scratch. Replaces positions. REQUIRES: k <= n < 2^32 (QG_ENFORCE).
void sample_positions(const philox_stream& rng, std::uint64_t n, std::uint64_t k,
                      std::vector<std::uint32_t>& positions);

// The k largest |v_i| (comparing |v| exactly; -0 = 0), ties broken towards the lower index, as
// ascending positions. Radix select (a histogram of the top 16 bits of |v|, then an exact select
// inside one bin): O(n), no n-sized scratch. Replaces positions. REQUIRES: k <= v.size() < 2^32
// (QG_ENFORCE); v finite.
void top_k_positions(std::span<const float> v, std::size_t k, std::vector<std::uint32_t>& positions);

// out[j] = fl(v[positions[j]] * scale). REQUIRES: sizes match, positions in range (unchecked).
void gather(std::span<const float> v, std::span<const std::uint32_t> positions, float scale, std::span<float> out);
// out = 0 except out[positions[j]] = values[j]. REQUIRES: sizes match, positions in range (unchecked).
void scatter(std::span<const std::uint32_t> positions, std::span<const float> values, std::span<float> out);

// --- coding positions ---------------------------------------------------------------------------

struct position_coding {
  std::uint8_t tag = kBitmapTag;
  std::size_t bytes = 0;  // exact size of the coded positions
};

constexpr std::size_t bitmap_bytes(std::size_t n) { return (n + 7) / 8; }

// Exact size of the Rice coding with parameter r (0 <= r <= 31) of ascending positions.
std::size_t rice_bytes(std::span<const std::uint32_t> positions, unsigned r);

// The smallest coding of ascending positions below n (bitmap on ties).
position_coding choose_position_coding(std::span<const std::uint32_t> positions, std::size_t n);

// Writes the coding tag of ascending positions below n into out.
// REQUIRES: tag <= kMaxRiceTag and out.size() == the size of that coding (QG_ENFORCE).
void encode_positions(std::span<const std::uint32_t> positions, std::size_t n, std::uint8_t tag,
                      std::span<std::byte> out);

enum class position_fault : std::uint8_t {
  none = 0,
  tag,       // tag > kMaxRiceTag
  size,      // bitmap: in.size() != ceil(n/8)
  count,     // not exactly positions.size() positions (too few bits, or set bits left over)
  range,     // a position at or beyond n
  padding,   // nonzero bits after the last code
};

// "a position beyond the vector", ... for error messages.
const char* to_string(position_fault fault);

// Decodes exactly positions.size() ascending positions below n from in, which must be exactly one
// coding with that tag. Never reads outside in; on a fault positions is unspecified.
[[nodiscard]] position_fault decode_positions(std::span<const std::byte> in, std::size_t n, std::uint8_t tag,
                                              std::span<std::uint32_t> positions);

}  // namespace qgossip::kernels
