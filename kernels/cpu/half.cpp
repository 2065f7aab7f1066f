#include "kernels/cpu/half.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/errors.hpp"

static_assert(std::endian::native == std::endian::little, "16-bit payloads are little-endian");

namespace qgossip::kernels {
namespace {

// Values per step: a tile of 16-bit codes stays in L1 between the conversion and the copy.
constexpr std::size_t kTile = 1024;

inline std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }
inline float float_of(std::uint32_t u) { return std::bit_cast<float>(u); }

constexpr std::uint32_t kHalfMaxAsFloat = 0x477FE000u;   // 65504.0f
constexpr std::uint32_t kHalfMinNormalAsFloat = 0x38800000u;  // 2^-14
constexpr std::uint32_t kBf16MaxAsFloat = 0x7F7F0000u;

// Branch-free, so the bulk loops vectorize. For a below 2^-14 the result is a half subnormal (or 0, or
// the smallest normal when rounding carries): fl(|x| + 0.5) rounds |x| to the 2^-24 grid, ties to even
// (the ulp of 0.5 is 2^-24), and the low bits of the sum are that multiple of 2^-24. Above, the
// exponent is rebiased (127 -> 15: subtract 112 << 23) and the 13 dropped fraction bits rounded to
// nearest even by adding 0xFFF plus the lowest kept bit; a carry moves into the exponent as it should.
inline std::uint16_t to_half(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  a = a < kHalfMaxAsFloat ? a : kHalfMaxAsFloat;  // saturate: 65504 instead of infinity
  const std::uint32_t sub = bits_of(float_of(a) + 0.5f) - 0x3F000000u;
  const std::uint32_t normal = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;
  // An integer mask rather than ?: keeps GCC from moving the float add into a branch (which it then
  // cannot vectorize under -ftrapping-math).
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(a < kHalfMinNormalAsFloat);
  return static_cast<std::uint16_t>(sign | (sub & is_sub) | (normal & ~is_sub));
}

// Exact: normals by rebiasing the exponent, subnormals (m * 2^-24, m < 1024) by an exact int->float
// conversion and an exact scaling by a power of two.
inline float from_half(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t em = h & 0x7fffu;
  const std::uint32_t normal = (em << 13) + 0x38000000u;
  const std::uint32_t sub = bits_of(static_cast<float>(static_cast<std::int32_t>(em)) * 0x1p-24f);
  const std::uint32_t is_sub = 0u - static_cast<std::uint32_t>(em < 0x0400u);
  return float_of(sign | (sub & is_sub) | (normal & ~is_sub));
}

// Rounds the 16 dropped bits to nearest even; float subnormals need nothing special (bf16 shares the
// float exponent field). Saturating first keeps the top tie from rounding up to infinity.
inline std::uint16_t to_bf16(float x) {
  const std::uint32_t u = bits_of(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  std::uint32_t a = u & 0x7fffffffu;
  a = a < kBf16MaxAsFloat ? a : kBf16MaxAsFloat;
  return static_cast<std::uint16_t>(sign | ((a + 0x7FFFu + ((a >> 16) & 1u)) >> 16));
}

inline float from_bf16(std::uint16_t h) { return float_of(static_cast<std::uint32_t>(h) << 16); }

template <std::uint16_t (*Convert)(float)>
void encode_all(std::span<const float> in, std::span<std::byte> out) {
  QG_ENFORCE(out.size() == 2 * in.size(), "out.size()=" << out.size() << " in.size()=" << in.size());
  std::uint16_t codes[kTile];
  for (std::size_t start = 0; start < in.size(); start += kTile) {
    const std::size_t m = std::min(kTile, in.size() - start);
    const float* v = in.data() + start;
    for (std::size_t i = 0; i < m; ++i) codes[i] = Convert(v[i]);
    std::memcpy(out.data() + 2 * start, codes, 2 * m);
  }
}

template <float (*Convert)(std::uint16_t), std::uint16_t kExponentMask>
std::size_t decode_all(std::span<const std::byte> in, std::span<float> out) {
  QG_ENFORCE(in.size() == 2 * out.size(), "in.size()=" << in.size() << " out.size()=" << out.size());
  std::uint16_t codes[kTile];
  for (std::size_t start = 0; start < out.size(); start += kTile) {
    const std::size_t m = std::min(kTile, out.size() - start);
    std::memcpy(codes, in.data() + 2 * start, 2 * m);
    // A vectorizable test of the whole tile; the scalar search runs only in a bad one.
    std::uint16_t worst = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const auto e = static_cast<std::uint16_t>(codes[i] & kExponentMask);
      worst = e > worst ? e : worst;
    }
    if (worst == kExponentMask)
      for (std::size_t i = 0; i < m; ++i)
        if ((codes[i] & kExponentMask) == kExponentMask) return start + i;
    float* o = out.data() + start;
    for (std::size_t i = 0; i < m; ++i) o[i] = Convert(codes[i]);
  }
  return out.size();
}

}  // namespace

std::uint16_t float_to_half(float x) { return to_half(x); }
float half_to_float(std::uint16_t h) { return from_half(h); }
std::uint16_t float_to_bf16(float x) { return to_bf16(x); }
float bf16_to_float(std::uint16_t h) { return from_bf16(h); }

void floats_to_half(std::span<const float> in, std::span<std::byte> out) { encode_all<&to_half>(in, out); }
void floats_to_bf16(std::span<const float> in, std::span<std::byte> out) { encode_all<&to_bf16>(in, out); }

std::size_t half_to_floats(std::span<const std::byte> in, std::span<float> out) {
  return decode_all<&from_half, 0x7C00u>(in, out);
}
std::size_t bf16_to_floats(std::span<const std::byte> in, std::span<float> out) {
  return decode_all<&from_bf16, 0x7F80u>(in, out);
}

}  // namespace qgossip::kernels
