#pragma once
// The QSGD dense format: what one value and one bucket become, shared verbatim by the CPU kernels
// (kernels/cpu/qsgd.cpp, the oracle) and the CUDA kernels (kernels/cuda/qsgd_cuda.cu). Everything a
// GPU must reproduce bit for bit lives here as QG_HOST_DEVICE functions; docs/codecs.md states it in
// prose. Frozen: any change here changes the bytes on the wire (and needs a new codec_id).
//
// Payload for n values, levels s, bucket d (d = 0: one bucket of n), code width b = 1 + bit_width(s):
//   [ceil(n/d) float32 scales, little-endian][n codes of b bits, LSB-first bit stream, zero-padded to a byte]
// Code of value i: bit b-1 = sign, bits 0..b-2 = level l in 0..s;
//   value = (-1)^sign * min(fl(l * fl(scale / s)), FLT_MAX).
// A code is valid iff l <= s and not (sign = 1 and l = 0): each decoded vector has exactly one encoding.
//
// Quantization of v in a bucket with scale S (the bucket's L2 norm or max-abs), with u uniform in [0,1)
// from the element's Philox word (kernels/cpu/philox.hpp):
//   x = fl(|v| * fl(s / S))       if 2^-100 <= S <= 2^100
//   x = fl(fl(|v| / S) * s)       otherwise (so that s/S neither overflows nor goes subnormal)
//   l = min(floor(fl(x + u)), s)  (l = 0 when S = 0)
// i.e. unbiased stochastic rounding of s|v|/S to the integers; every operation is one correctly rounded
// IEEE float op in this order (no FMA contraction), so CPU and GPU agree exactly. |v| <= S makes x at
// most s (1 + 2^-23); the min() only catches rounding up to s + 1.
//
// Scale (canonical order, so the GPU's warp reduction gives the same bits):
//   max: max |v| (order-free).
//   l2: 32 double lanes, lane j sums v[k]^2 (in double, exact squares) for k = j, j+32, j+64, ... in
//       increasing k; then for off = 16, 8, 4, 2, 1: lane[j] += lane[j + off] for j < off;
//       S = float(sqrt(lane[0])) rounded to nearest, clamped to FLT_MAX. Double accumulation cannot
//       overflow for finite floats, and sqrt(sum) >= |v_i| holds exactly, so |v| <= S always.
// Precision: the error of a value is at most S/s (plus float rounding), except that for a subnormal
// scale (S < 2^-126) the step S/s itself is rounded to the subnormal grid, adding up to s * 2^-150.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/philox.hpp"

#include <cstring>

namespace qgossip::kernels {

enum class qsgd_norm : std::uint8_t {
  l2 = 0,   // QSGD: scale = ||bucket||_2
  max = 1,  // QSGDinf: scale = ||bucket||_inf
};

inline constexpr std::uint32_t kQsgdMaxLevels = 32767;  // b = 16
inline constexpr int kQsgdScaleLanes = 32;              // the canonical L2 reduction width

// Code width in bits for s levels: one sign bit plus the bits of s (s=127 -> 8, s=7 -> 4, s=1 -> 2).
QG_HOST_DEVICE constexpr std::uint32_t qsgd_code_bits(std::uint32_t levels) {
  std::uint32_t width = 0;
  while (levels >> width) ++width;
  return 1 + width;
}

struct qsgd_layout {
  std::uint32_t levels = 127;  // s: nonzero magnitudes 1/s .. s/s of the scale. 1 <= s <= 32767
  std::size_t bucket = 512;    // d: values per scale; 0 = the whole vector is one bucket
  qsgd_norm norm = qsgd_norm::l2;

  QG_HOST_DEVICE constexpr std::uint32_t bits() const { return qsgd_code_bits(levels); }
  QG_HOST_DEVICE constexpr std::size_t bucket_size(std::size_t n) const {
    return (bucket == 0 || bucket > n) ? n : bucket;
  }
  QG_HOST_DEVICE constexpr std::size_t bucket_count(std::size_t n) const {
    return n == 0 ? 0 : (n + bucket_size(n) - 1) / bucket_size(n);
  }
  QG_HOST_DEVICE constexpr std::size_t scale_bytes(std::size_t n) const { return 4 * bucket_count(n); }
  QG_HOST_DEVICE constexpr std::size_t packed_bytes(std::size_t n) const { return (n * bits() + 7) / 8; }
  QG_HOST_DEVICE constexpr std::size_t encoded_bytes(std::size_t n) const {
    return scale_bytes(n) + packed_bytes(n);
  }
};

// IEEE single-precision primitives that nvcc may not fuse into an FMA (host code is built with
// -ffp-contract=off, which gives the same guarantee for plain operators).
#if defined(__CUDA_ARCH__)
__device__ inline float qg_fdiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline float qg_fmul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float qg_fadd(float a, float b) { return __fadd_rn(a, b); }
__device__ inline std::uint32_t qg_float_bits(float f) { return __float_as_uint(f); }
__device__ inline float qg_bits_float(std::uint32_t u) { return __uint_as_float(u); }
#else
inline float qg_fdiv(float a, float b) { return a / b; }
inline float qg_fmul(float a, float b) { return a * b; }
inline float qg_fadd(float a, float b) { return a + b; }
inline std::uint32_t qg_float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float qg_bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#endif

// Scales in [2^-100, 2^100] use x = |v| * fl(s/S), one multiply; others use x = fl(|v|/S) * s, so that
// s/S neither overflows nor loses precision as a subnormal (s <= 2^15: s/S in [2^-100, 2^115] here).
inline constexpr float kQsgdRatioScaleMin = 0x1p-100f;
inline constexpr float kQsgdRatioScaleMax = 0x1p100f;
QG_HOST_DEVICE inline bool qsgd_ratio_form(float scale) {
  return scale >= kQsgdRatioScaleMin && scale <= kQsgdRatioScaleMax;
}

// fl(s / S), the per-bucket factor of the one-multiply form.
QG_HOST_DEVICE inline float qsgd_ratio(float scale, float levels_f) { return qg_fdiv(levels_f, scale); }

// The code from x = s|v|/S (as computed by the format), the sign bits of v, and u.
QG_HOST_DEVICE inline std::int32_t qsgd_code_of(float x, std::uint32_t v_bits, float u, std::int32_t levels,
                                                std::int32_t sign_shift) {
  std::int32_t level = static_cast<std::int32_t>(qg_fadd(x, u));  // x + u >= 0: truncation is floor
  level = level < levels ? level : levels;
  // Sign bit only on nonzero levels (so -0.0 and tiny negatives that round to 0 encode as +0).
  const std::int32_t negative = static_cast<std::int32_t>(v_bits >> 31) & (level < 1 ? level : 1);
  return level | (negative << sign_shift);
}

// The code of one value v of a bucket with scale S (finite, >= |v|); ratio == qsgd_ratio(S, levels_f),
// levels_f == float(levels), sign_shift == bits - 1. A zero scale (an all-zero bucket) gives 0.
QG_HOST_DEVICE inline std::int32_t qsgd_quantize_value(float v, float scale, float ratio, float levels_f,
                                                       std::int32_t levels, std::int32_t sign_shift,
                                                       float u) {
  if (!(scale > 0.0f)) return 0;
  const std::uint32_t v_bits = qg_float_bits(v);
  const float a = qg_bits_float(v_bits & 0x7fffffffu);
  const float x = qsgd_ratio_form(scale) ? qg_fmul(a, ratio) : qg_fmul(qg_fdiv(a, scale), levels_f);
  return qsgd_code_of(x, v_bits, u, levels, sign_shift);
}

// Whether a code is not one an encoder makes: a level above `levels`, or a negative zero (the sign
// bit alone); sign_bit == 1 << (bits - 1). Every decoder refuses such a code.
QG_HOST_DEVICE inline bool qsgd_code_invalid(std::uint32_t code, std::uint32_t levels,
                                             std::uint32_t sign_bit) {
  return (code & (sign_bit - 1)) > levels || code == sign_bit;
}

// The value of one *valid* code; step == fl(scale / levels). The magnitude fl(l * step) is clamped to
// FLT_MAX: for scales near FLT_MAX the rounding of step could otherwise push s * step to infinity.
QG_HOST_DEVICE inline float qsgd_dequantize_code(std::uint32_t code, float step, std::uint32_t magnitude_mask,
                                                 std::uint32_t sign_shift) {
  constexpr float kMax = 0x1.fffffep127f;  // FLT_MAX
  float m = qg_fmul(static_cast<float>(static_cast<std::int32_t>(code & magnitude_mask)), step);
  m = m < kMax ? m : kMax;
  return qg_bits_float(qg_float_bits(m) | ((code >> sign_shift) << 31));
}

// A stored scale is acceptable iff it is a finite float >= +0 (sign bit clear, not NaN/Inf).
QG_HOST_DEVICE inline bool qsgd_scale_valid(std::uint32_t scale_bits) { return scale_bits < 0x7f800000u; }

}  // namespace qgossip::kernels
