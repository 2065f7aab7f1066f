#pragma once
// QSGD / QSGDinf quantize+pack and unpack+dequantize on the CPU: the reference implementation (the
// "oracle" the CUDA kernels are tested against) and the production path of CPU nodes. The format and
// the exact arithmetic are specified in kernels/cpu/qsgd_format.hpp.
// Thread safety: pure functions; concurrent calls on distinct outputs are fine.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd_format.hpp"
#include "kernels/cpu/simd.hpp"

namespace qgossip::kernels {

// The scale of one bucket in the canonical order of qsgd_format.hpp. Sets finite = false (and the
// returned value is meaningless) iff the bucket holds a NaN or an infinity.
float qsgd_bucket_scale(std::span<const float> bucket, qsgd_norm norm, bool& finite);

// Encodes v into out. REQUIRES: 1 <= layout.levels <= kQsgdMaxLevels and
// out.size() == layout.encoded_bytes(v.size()) (both QG_ENFORCEd). Returns false iff v holds a NaN or
// an infinity; out is then unspecified.
[[nodiscard]] bool qsgd_encode(std::span<const float> v, const qsgd_layout& layout, const philox_stream& rng,
                               std::span<std::byte> out);

// qsgd_encode of v = a - b (each a[i] - b[i] in float), computed bucket by bucket as it is read
// (a scratch of one bucket per thread): the same bytes, with no vector of v. REQUIRES: a.size() ==
// b.size(), buckets of at most kQsgdMaxDifferenceBucket values (both QG_ENFORCEd).
inline constexpr std::size_t kQsgdMaxDifferenceBucket = std::size_t{1} << 20;
[[nodiscard]] bool qsgd_encode_difference(std::span<const float> a, std::span<const float> b,
                                          const qsgd_layout& layout, const philox_stream& rng,
                                          std::span<std::byte> out);

// The signed levels (-s..s) that qsgd_encode codes for v, one tile of a bucket with scale `scale`
// (from qsgd_bucket_scale), v[k] being element first + k of the encode's stream: level = +-l with
// the sign only on l > 0. The same arithmetic and uniforms as qsgd_encode, so the sparse (Elias)
// coding of (v, ctx) decodes to the same floats as the dense one. REQUIRES: out.size() == v.size(),
// 1 <= levels <= kQsgdMaxLevels (QG_ENFORCE), finite v with |v| <= scale.
void qsgd_quantize_levels(std::span<const float> v, std::uint64_t first, float scale, std::uint32_t levels,
                          const philox_stream& rng, std::span<std::int32_t> out);

enum class qsgd_fault : std::uint8_t {
  none = 0,
  size,     // in.size() != layout.encoded_bytes(out.size())
  scale,    // a scale that is NaN, infinite or negative (index = bucket)
  code,     // a level above s, or the sign bit on level 0 (index = element)
  padding,  // nonzero bits after the last code
};

struct qsgd_decode_result {
  qsgd_fault fault = qsgd_fault::none;
  std::size_t index = 0;
  bool ok() const { return fault == qsgd_fault::none; }
};

// Decodes out.size() values. Validates everything and never reads outside in; on a fault out is
// unspecified. REQUIRES: 1 <= layout.levels <= kQsgdMaxLevels (QG_ENFORCEd).
[[nodiscard]] qsgd_decode_result qsgd_decode(std::span<const std::byte> in, const qsgd_layout& layout,
                                             std::span<float> out);

// The fused forms of a receiver that adds what it decodes into a sum (a public copy, a replica):
// qsgd_validate checks everything qsgd_decode would, writing nothing, and qsgd_decode_add then adds
// the values qsgd_decode would write into out (out[i] += value: the same bits as decoding into a
// vector and adding it). REQUIRES: qsgd_validate(in, layout, out.size()) ok (a payload that does not
// validate is an invariant_error, out then partly added).
[[nodiscard]] qsgd_decode_result qsgd_validate(std::span<const std::byte> in, const qsgd_layout& layout, std::size_t n);
void qsgd_decode_add(std::span<const std::byte> in, const qsgd_layout& layout, std::span<float> out);

// Test and benchmark knobs: the same at a given SIMD level (the defaults use best_simd()); every
// level gives identical results. REQUIRES: simd_supported(simd) (QG_ENFORCE).
[[nodiscard]] bool qsgd_encode(simd_level simd, std::span<const float> v, const qsgd_layout& layout,
                               const philox_stream& rng, std::span<std::byte> out);
[[nodiscard]] qsgd_decode_result qsgd_decode(simd_level simd, std::span<const std::byte> in,
                                             const qsgd_layout& layout, std::span<float> out);

}  // namespace qgossip::kernels
