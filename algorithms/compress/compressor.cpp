// The compressor interface's one non-pure member: the default entropy report.
#include "algorithms/compress/compressor.hpp"

#include <cstring>

#include "algorithms/compress/entropy.hpp"
#include "core/errors.hpp"

namespace qgossip {

double compressor::entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                          const codec_context& ctx) const {
  if (n == 0) return 0.0;
  std::vector<float> values(n);
  const status st = decode(encoded, ctx, values);
  QG_ENFORCE(st.is_ok(), name() << ": entropy of a payload that does not decode: " << st.message());
  symbol_histogram h;
  for (const float x : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    h.add(bits);
  }
  return h.entropy_bits_per_symbol();
}

}  // namespace qgossip
