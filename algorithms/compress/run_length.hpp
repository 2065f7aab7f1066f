#pragma once
// The run-length coding of MCGQ (Mordido 2020, §3.4) for a vector of signed integers, on the
// variable-length bit streams of bit_stream.hpp (every field most significant bit first):
//
//   B_q   : 32 bits, the width of one value code, 1 + floor(log2 max|q|) + 1 = 1 + bit_width(max|q|)
//           (1 when every q is 0);
//   B_RLE : 32 bits, the width of one run length, floor(log2 c0) + 1 = bit_width(c0) for the longest
//           run of zeros c0 (0 when there is no zero);
//   then, in order, each nonzero value as a B_q-bit sign-magnitude code (sign bit first, then
//   B_q - 1 magnitude bits), and each maximal run of zeros as the code of its first zero (B_q zero
//   bits) followed by the run's length in B_RLE bits.
//
// The paper's example [2, -1, 0, 0, 0, 3, 0, 1] gives B_q = 3, B_RLE = 2 and 64 + 6*3 + 2*2 = 86 bits:
//   B_q=3 | B_RLE=2 | 010 | 101 | 000 11 | 011 | 000 01 | 001
// The format is sign-magnitude, not two's complement: B_q is symmetric in the sign (the paper's
// formula; two's complement would need one bit less for -2^j), and the 86 bits fix one code per value.
//
// Decoding accepts exactly one encoding per vector (canonical): it rejects "-0" codes, runs of length
// 0, runs past the end, two runs in a row (runs are maximal), and B_q / B_RLE other than the widths
// the decoded values need. Values are limited to |q| <= 2^31 - 1 (B_q <= 32).
// Thread safety: pure functions; one stream per thread.
#include <cstddef>
#include <cstdint>
#include <span>

#include "algorithms/compress/bit_stream.hpp"
#include "core/status.hpp"

namespace qgossip {

struct run_length_widths {
  std::uint32_t value_bits = 1;  // B_q
  std::uint32_t run_bits = 0;    // B_RLE
};

inline constexpr std::uint32_t kRunLengthMaxValueBits = 32;
inline constexpr std::int32_t kRunLengthMaxMagnitude = 0x7fffffff;

// B_q and B_RLE for q. REQUIRES: every |q[k]| <= kRunLengthMaxMagnitude (no INT32_MIN; QG_ENFORCE).
run_length_widths run_length_widths_of(std::span<const std::int32_t> q);

// Exact length of run_length_encode(q) in bits, the two 32-bit widths included.
std::uint64_t run_length_bits(std::span<const std::int32_t> q);

// The most bits any vector of n values with sum |q| <= max_sum can take (so every |q| <= max_sum and at
// most z = min(n, max_sum) values are nonzero): at most r = min(z + 1, ceil(n/2)) runs, at most
// min(n, z + r) codes of at most 1 + bit_width(min(max_sum, 2^31 - 1)) bits, and B_RLE <= bit_width(n).
std::uint64_t run_length_max_bits(std::size_t n, std::uint64_t max_sum);

// Appends the coding of q. REQUIRES: as run_length_widths_of.
void run_length_encode(std::span<const std::int32_t> q, bit_stream_writer& out);

// Reads exactly out.size() values. errc::corrupt (with what was wrong and where) if the stream ends
// early or is not the canonical encoding of some vector; the reader is then left anywhere and out is
// unspecified. Never reads outside the stream or writes outside out.
status run_length_decode(bit_stream_reader& in, std::span<std::int32_t> out);

}  // namespace qgossip
