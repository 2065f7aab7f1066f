// The compressor interface's non-pure members: the default entropy report, and the default fused
// receive (decode into a vector of its own, then check or add).
#include "algorithms/compress/compressor.hpp"

#include <cstring>

#include "algorithms/compress/entropy.hpp"
#include "core/errors.hpp"

namespace qgossip {

status compressor::validate(std::span<const std::byte> in, const codec_context& ctx, std::size_t n) const {
  std::vector<float> values(n);
  return decode(in, ctx, values);
}

void compressor::decode_add(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const {
  std::vector<float> values(out.size());
  const status st = decode(in, ctx, values);
  QG_ENFORCE(st.is_ok(), name() << ": decode_add of a payload that does not decode: " << st.message());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] += values[i];
}

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
