#pragma once
// Scaled sign compression on the CPU (the `sign` codec, algorithms/compress/sign.hpp): per bucket of
// d consecutive values (the last may be shorter; d = 0 or d > n: one bucket of n), one float32 scale
// m = ||v_b||_1 / d_b and one sign bit per value; decoding gives (-1)^bit * m.
//
// Payload for n values, little-endian:
//   [u32 n][B = ceil(n/d') float32 scales][n sign bits][zero padding to a byte]
// with d' = min(d, n) (d' = n for d = 0): 4 + 4B + ceil(n/8) bytes exactly. Bit i (the IEEE sign bit
// of v_i, so -0 counts as negative) is bit i % 8 of byte i / 8 of the bit field. The count n lets a
// decoder refuse a payload made for another size (one bit per value would otherwise often fit).
// The scale is computed in a canonical order, so every machine gets the same bits: 16 double lanes,
// lane j sums |v_k| for k = j, j+16, ... of the bucket in increasing k; then for off = 8, 4, 2, 1:
// lane[j] += lane[j+off] for j < off; m = float(lane[0] / d_b) rounded to nearest (never above
// FLT_MAX: the mean of finite floats is at most their largest magnitude).
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>

namespace qgossip::kernels {

inline constexpr int kSignScaleLanes = 16;

struct sign_layout {
  std::size_t bucket = 0;  // d; 0 = the whole vector is one bucket

  constexpr std::size_t bucket_size(std::size_t n) const { return (bucket == 0 || bucket > n) ? n : bucket; }
  constexpr std::size_t bucket_count(std::size_t n) const {
    return n == 0 ? 0 : (n + bucket_size(n) - 1) / bucket_size(n);
  }
  constexpr std::size_t encoded_bytes(std::size_t n) const { return 4 + 4 * bucket_count(n) + (n + 7) / 8; }
};

// The scale of one bucket, in the canonical order above. REQUIRES: finite values, non-empty bucket.
float sign_bucket_scale(std::span<const float> bucket);

// Encodes v. REQUIRES: v finite, v.size() < 2^32, out.size() == layout.encoded_bytes(v.size())
// (QG_ENFORCE on the sizes).
void sign_encode(std::span<const float> v, const sign_layout& layout, std::span<std::byte> out);

enum class sign_fault : std::uint8_t {
  none = 0,
  size,     // in.size() != layout.encoded_bytes(out.size())
  count,    // the payload's n is not out.size()
  scale,    // a scale that is NaN, infinite or negative (its sign bit set, -0 included); index = bucket
  padding,  // nonzero bits after the last sign bit
};

struct sign_decode_result {
  sign_fault fault = sign_fault::none;
  std::size_t index = 0;
  bool ok() const { return fault == sign_fault::none; }
};

// Decodes out.size() values; validates everything and never reads outside in. On a fault out is
// unspecified.
[[nodiscard]] sign_decode_result sign_decode(std::span<const std::byte> in, const sign_layout& layout,
                                             std::span<float> out);

}  // namespace qgossip::kernels
