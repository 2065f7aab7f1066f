#include "algorithms/compress/elias.hpp"

#include <bit>

#include "core/errors.hpp"

namespace qgossip {

unsigned elias_omega_bits(std::uint64_t n) {
  QG_ENFORCE(n >= 1, "Elias omega codes integers >= 1, got " << n);
  unsigned bits = 1;  // the final 0
  while (n > 1) {
    const unsigned width = static_cast<unsigned>(std::bit_width(n));
    bits += width;
    n = width - 1;
  }
  return bits;
}

void elias_omega_put(bit_stream_writer& out, std::uint64_t n) {
  QG_ENFORCE(n >= 1, "Elias omega codes integers >= 1, got " << n);
  // The groups come out last-first; at most 5 of them for 64-bit n (64 -> 6 -> 3 -> 2 bits).
  std::uint64_t groups[6];
  unsigned widths[6];
  int count = 0;
  while (n > 1) {
    const unsigned width = static_cast<unsigned>(std::bit_width(n));
    groups[count] = n;
    widths[count] = width;
    ++count;
    n = width - 1;
  }
  while (count-- > 0) out.put_bits(groups[count], widths[count]);
  out.put_bit(false);
}

bool elias_omega_get(bit_stream_reader& in, std::uint64_t& n) {
  n = 1;
  for (;;) {
    bool more = false;
    if (!in.get_bit(more)) return false;
    if (!more) return true;
    // The group is this 1 bit and n more: n + 1 bits in all, which must fit in 64.
    if (n >= 64) return false;
    std::uint64_t rest = 0;
    if (!in.get_bits(static_cast<unsigned>(n), rest)) return false;
    n = (std::uint64_t{1} << n) | rest;
  }
}

}  // namespace qgossip
