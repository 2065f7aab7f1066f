#include "kernels/cpu/sign.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/errors.hpp"

static_assert(std::endian::native == std::endian::little, "the sign payload is little-endian");

namespace qgossip::kernels {
namespace {

inline std::uint32_t bits_of(float x) { return std::bit_cast<std::uint32_t>(x); }

// Sign bits of v[0..count) into the low `count` bits of a byte, bit t = sign of v[t]. count <= 8.
inline std::uint8_t sign_byte(const float* v, std::size_t count) {
  std::uint32_t byte = 0;
  for (std::size_t t = 0; t < count; ++t) byte |= (bits_of(v[t]) >> 31) << t;
  return static_cast<std::uint8_t>(byte);
}

}  // namespace

float sign_bucket_scale(std::span<const float> bucket) {
  constexpr int L = kSignScaleLanes;
  double acc[L] = {};
  const std::size_t d = bucket.size();
  std::size_t i = 0;
  for (; i + L <= d; i += L)
    for (int j = 0; j < L; ++j) acc[j] += std::fabs(static_cast<double>(bucket[i + j]));
  for (int j = 0; i + j < d; ++j) acc[j] += std::fabs(static_cast<double>(bucket[i + j]));
  for (int off = L / 2; off > 0; off /= 2)
    for (int j = 0; j < off; ++j) acc[j] += acc[j + off];
  const double mean = acc[0] / static_cast<double>(d);
  return mean >= double{FLT_MAX} ? FLT_MAX : static_cast<float>(mean);
}

void sign_encode(std::span<const float> v, const sign_layout& layout, std::span<std::byte> out) {
  const std::size_t n = v.size();
  QG_ENFORCE(out.size() == layout.encoded_bytes(n) && n <= 0xffffffffu, "out.size()=" << out.size() << " n=" << n);
  const auto count = static_cast<std::uint32_t>(n);
  std::memcpy(out.data(), &count, 4);
  const std::size_t d = layout.bucket_size(n);
  const std::size_t buckets = layout.bucket_count(n);
  for (std::size_t b = 0; b < buckets; ++b) {
    const float scale = sign_bucket_scale(v.subspan(b * d, std::min(d, n - b * d)));
    std::memcpy(out.data() + 4 + 4 * b, &scale, 4);
  }
  std::byte* signs = out.data() + 4 + 4 * buckets;
  for (std::size_t j = 0; j < n / 8; ++j) signs[j] = static_cast<std::byte>(sign_byte(v.data() + 8 * j, 8));
  if (n % 8 != 0) signs[n / 8] = static_cast<std::byte>(sign_byte(v.data() + 8 * (n / 8), n % 8));
}

sign_decode_result sign_decode(std::span<const std::byte> in, const sign_layout& layout, std::span<float> out) {
  const std::size_t n = out.size();
  if (in.size() != layout.encoded_bytes(n)) return {sign_fault::size, 0};
  std::uint32_t count = 0;
  std::memcpy(&count, in.data(), 4);
  if (count != n) return {sign_fault::count, count};
  const std::size_t d = layout.bucket_size(n);
  const std::size_t buckets = layout.bucket_count(n);
  const auto* signs = reinterpret_cast<const std::uint8_t*>(in.data() + 4 + 4 * buckets);
  for (std::size_t b = 0; b < buckets; ++b) {
    std::uint32_t scale = 0;
    std::memcpy(&scale, in.data() + 4 + 4 * b, 4);
    // Sign bit set (negative, -0) or exponent all ones (Inf, NaN): both compare >= 0x7f800000.
    if (scale >= 0x7f800000u) return {sign_fault::scale, b};
    const std::size_t end = std::min(n, (b + 1) * d);
    for (std::size_t i = b * d; i < end; ++i) {
      const std::uint32_t bit = (signs[i / 8] >> (i % 8)) & 1u;
      out[i] = std::bit_cast<float>(scale | (bit << 31));
    }
  }
  if (n % 8 != 0 && (signs[n / 8] >> (n % 8)) != 0) return {sign_fault::padding, 0};
  return {};
}

}  // namespace qgossip::kernels
