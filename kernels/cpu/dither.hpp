#pragma once
// Dithered quantization with a shared-seed (subtractive) dither (ISGQ paper, Abdi & Fekri, §3) on
// the CPU. Per bucket with kappa = fl(max|x| / K) and the element's uniform u in [0, 1) from the
// Philox stream (kernels/cpu/philox.hpp; U = u - 1/2 is the dither in [-1/2, 1/2)):
//
//   q    = clamp(floor(fl(fl(x / kappa) + u)), -K, K)      (= round(x/kappa + U), ties up)
//   code = q + K in bit_width(2K) bits                     (K = 7: 4 bits, K = 127: 8 bits)
//   x~   = float(kappa * (q - U)), evaluated in double (exact up to the final rounding), clamped to
//          +-FLT_MAX; the receiver regenerates U from the same stream, so only q travels.
//
// The error x~ - x = kappa (floor(y + u) - (y + u) + 1/2), y = x / kappa, is uniform on (-kappa/2,
// kappa/2] and independent of x (up to the 2^-24 grid of u and float rounding of y + u). The clamp
// only acts when fl(x / kappa) rounds above K, moving the error by at most K kappa 2^-23. A bucket with
// kappa = 0 (all zero) has every code K and decodes to +0.
//
// Payload for buckets [bounds[b], bounds[b+1]): the float32 kappa of every bucket (little-endian),
// then the n codes packed LSB-first (kernels/cpu/bitpack.hpp), zero-padded to a byte.
// Thread safety: pure functions.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"

namespace qgossip::kernels {

inline constexpr std::uint32_t kDitherMaxLevels = 32767;  // 16-bit codes

constexpr unsigned dither_code_bits(std::uint32_t levels) { return std::bit_width(2 * levels); }

// Payload bytes for n values in `buckets` buckets.
constexpr std::size_t dither_encoded_bytes(std::size_t n, std::size_t buckets, std::uint32_t levels) {
  return 4 * buckets + (n * dither_code_bits(levels) + 7) / 8;
}

// fl(max|x| / levels); finite = false iff the bucket holds a NaN or an infinity.
float dither_scale(std::span<const float> bucket, std::uint32_t levels, bool& finite);

// Encodes v, whose buckets are [bounds[b], bounds[b+1]) (bounds = {0, ..., v.size()}, non-decreasing).
// REQUIRES: 1 <= levels <= kDitherMaxLevels, out.size() == dither_encoded_bytes(v.size(),
// bounds.size() - 1, levels) (QG_ENFORCEd). Returns false iff v holds a NaN or an infinity.
[[nodiscard]] bool dither_encode(std::span<const float> v, std::span<const std::size_t> bounds,
                                 std::uint32_t levels, const philox_stream& rng, std::span<std::byte> out);

enum class dither_fault : std::uint8_t {
  none = 0,
  size,     // in.size() != dither_encoded_bytes(...)
  scale,    // a kappa that is NaN, infinite or negative (index = bucket)
  code,     // a code above 2K, or a code other than K in a bucket with kappa = 0 (index = element)
  padding,  // nonzero bits after the last code
};

struct dither_decode_result {
  dither_fault fault = dither_fault::none;
  std::size_t index = 0;
  bool ok() const { return fault == dither_fault::none; }
};

// Decodes out.size() values with the same bounds and stream as the encoder. Validates everything
// and never reads outside in; on a fault out is unspecified. REQUIRES: as dither_encode.
[[nodiscard]] dither_decode_result dither_decode(std::span<const std::byte> in,
                                                 std::span<const std::size_t> bounds, std::uint32_t levels,
                                                 const philox_stream& rng, std::span<float> out);

}  // namespace qgossip::kernels
