#pragma once
// NUQSGD (Ramezani-Kebrya et al.) quantization on the CPU: the exact arithmetic of one value, shared
// by the codec (algorithms/compress/nuqsgd.cpp) and any future GPU twin. Frozen: a change here
// changes the bytes on the wire.
//
// Levels for s >= 1: 0 and 2^-s, 2^-s+1, ..., 1/2, 1, named by the index t: t = 0 is 0, t >= 1 is
// 2^(t-1-s) (t = 1 .. s+1, the paper's log2(2^(s+1) h)). For a value v of a bucket with L2 norm S
// (kernels/cpu/qsgd.hpp's canonical qsgd_bucket_scale) and u uniform in [0,1) from the element's
// Philox word (kernels/cpu/philox.hpp):
//   r = fl(|v| / S)                  in [0, 1], since |v| <= S exactly
//   r >= 2^-s, r = (1 + f) 2^E, f in [0,1) the mantissa fraction, -s <= E <= 0:
//        t = E + s + 1 + [u < f]     (between 2^E and 2^(E+1); f = (r - 2^E) / 2^E exactly)
//   r < 2^-s (subnormal r included):
//        t = [u < fl(r 2^s)]         (between 0 and 2^-s; r 2^s is exact)
//   t = 0 when S = 0. The sign is kept only for t > 0 (so -0 and values rounded to 0 carry none).
// P(round up) = ceil(p 2^24) / 2^24 for the exact p of the paper: unbiased up to 2^-24 of a step.
// Decoding: value = (-1)^sign fl(S 2^(t-1-s)) (exact unless it lands in the subnormal range).
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/philox.hpp"
#include "kernels/cpu/qsgd_format.hpp"

namespace qgossip::kernels {

// s up to 126 keeps every level 2^(t-1-s) a normal float.
inline constexpr std::uint32_t kNuqsgdMaxS = 126;

// The signed level index (-(s+1) .. s+1) of one value; S > 0 finite, |v| <= S, 1 <= s <= kNuqsgdMaxS.
QG_HOST_DEVICE inline std::int32_t nuqsgd_quantize_value(float v, float scale, std::int32_t s, float u) {
  if (!(scale > 0.0f)) return 0;
  const std::uint32_t v_bits = qg_float_bits(v);
  const float r = qg_fdiv(qg_bits_float(v_bits & 0x7fffffffu), scale);
  const std::uint32_t r_bits = qg_float_bits(r);
  const std::int32_t e = static_cast<std::int32_t>(r_bits >> 23) - 127;  // r normal: r in [2^e, 2^(e+1))
  std::int32_t t;
  if (e >= -s) {
    const float f = static_cast<float>(r_bits & 0x7fffffu) * 0x1p-23f;  // exact
    t = e + s + 1 + (u < f ? 1 : 0);
  } else {
    // r * 2^s, an exact power-of-two scaling (2^s for s <= 126 is a normal float).
    const float p = qg_fmul(r, qg_bits_float(static_cast<std::uint32_t>(127 + s) << 23));
    t = u < p ? 1 : 0;
  }
  const std::int32_t negative = static_cast<std::int32_t>(v_bits >> 31) & (t > 0 ? 1 : 0);
  return negative ? -t : t;
}

// 2^(t-1-s), the level of index t >= 1. REQUIRES: 1 <= t <= s + 1 <= kNuqsgdMaxS + 1.
QG_HOST_DEVICE inline float nuqsgd_level(std::int32_t t, std::int32_t s) {
  return qg_bits_float(static_cast<std::uint32_t>(127 + t - 1 - s) << 23);
}

// The signed level indices of one tile of a bucket with L2 norm `scale`, v[k] being element first + k
// of the stream. REQUIRES: out.size() == v.size(), 1 <= s <= kNuqsgdMaxS (QG_ENFORCE); finite v with
// |v| <= scale.
void nuqsgd_quantize(std::span<const float> v, std::uint64_t first, float scale, std::uint32_t s,
                     const philox_stream& rng, std::span<std::int32_t> out);

}  // namespace qgossip::kernels
