// The compressor interface's non-pure members: the default entropy report, and the default fused
// send and receive (the difference built, or the message decoded, into a vector of its own).
#include "algorithms/compress/compressor.hpp"

#include <cstring>

#include "algorithms/compress/entropy.hpp"
#include "core/errors.hpp"

namespace qgossip {

void compressor::encode_difference(std::span<const float> a, std::span<const float> b, const codec_context& ctx,
                                   std::vector<std::byte>& out) const {
  QG_ENFORCE(a.size() == b.size(), a.size() << " vs " << b.size());
  std::vector<float> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = a[i] - b[i];
  encode(v, ctx, out);
}

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
