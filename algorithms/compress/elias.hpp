#pragma once
// Elias omega ("recursive") code of positive integers (Elias 1975; QSGD and NUQSGD, Appendix A):
// a universal prefix code whose length grows like log N + log log N + ... + 1, so small integers
// are short (1 -> "0", 2 -> "100", 3 -> "110", 4 -> "101000", 16 -> "10100100000").
//
//   encode N >= 1: write a final 0; while N > 1, prepend binary(N) and set N <- (bits just prepended) - 1.
//   decode: N = 1; while the next bit is 1, read that bit and N more bits as the new N; a 0 ends it.
//
// Every group after the first starts with a 1 bit, so any bit string parses as a code for some N
// until a group would need more than 64 bits: that (and running out of bits) is the only way a
// decode fails. Groups for N = 2^64 - 1: "10" "101" "111111" 64 bits "0", 76 bits in all (the maximum).
// Bits go through bit_stream (MSB of each group first). Thread safety: free functions.
#include <cstdint>

#include "algorithms/compress/bit_stream.hpp"

namespace qgossip {

// The longest code, for N = 2^64 - 1.
inline constexpr unsigned kEliasOmegaMaxBits = 76;

// Length in bits of the code of n. REQUIRES: n >= 1 (QG_ENFORCE).
[[nodiscard]] unsigned elias_omega_bits(std::uint64_t n);

// Appends the code of n. REQUIRES: n >= 1 (QG_ENFORCE).
void elias_omega_put(bit_stream_writer& out, std::uint64_t n);

// Reads one code into n. False (n unspecified, the reader somewhere inside the code) when the bits
// run out first or a group would exceed 64 bits; never reads past the reader's span.
[[nodiscard]] bool elias_omega_get(bit_stream_reader& in, std::uint64_t& n);

}  // namespace qgossip
