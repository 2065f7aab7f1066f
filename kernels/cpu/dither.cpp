#include "kernels/cpu/dither.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/errors.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/uniforms.hpp"

static_assert(std::endian::native == std::endian::little, "the dither payload is little-endian");

namespace qgossip::kernels {
namespace {

// Values per inner step: the uniforms and codes of one tile stay in L1 between the passes.
constexpr std::size_t kTile = 1024;

void check_args(std::span<const std::size_t> bounds, std::size_t n, std::uint32_t levels) {
  QG_ENFORCE(levels >= 1 && levels <= kDitherMaxLevels, "levels=" << levels);
  QG_ENFORCE(!bounds.empty() && bounds.front() == 0 && bounds.back() == n,
             "bounds must run from 0 to " << n << " (" << bounds.size() << " entries)");
}

template <typename Code>
void quantize_tile(const float* x, std::size_t m, float kappa, std::uint32_t levels, const float* u,
                   Code* codes) {
  const float k = static_cast<float>(levels);
  if (!(kappa > 0.0f)) {
    std::fill_n(codes, m, static_cast<Code>(levels));
    return;
  }
  for (std::size_t i = 0; i < m; ++i) {
    const float q = std::clamp(std::floor(x[i] / kappa + u[i]), -k, k);
    codes[i] = static_cast<Code>(static_cast<std::int32_t>(q) + static_cast<std::int32_t>(levels));
  }
}

// Returns nonzero iff a code is invalid.
template <typename Code>
std::uint32_t dequantize_tile(const Code* codes, std::size_t m, float kappa, std::uint32_t levels,
                              const float* u, float* out) {
  std::uint32_t bad = 0;
  if (!(kappa > 0.0f)) {
    for (std::size_t i = 0; i < m; ++i) bad |= static_cast<std::uint32_t>(codes[i] != levels);
    std::fill_n(out, m, 0.0f);
    return bad;
  }
  const double kd = kappa, k = static_cast<double>(levels);
  for (std::size_t i = 0; i < m; ++i) {
    bad |= static_cast<std::uint32_t>(codes[i] > 2 * levels);
    // q - U = (code - K) - (u - 1/2), exact in double; one rounding to float at the end.
    const double x = kd * ((static_cast<double>(codes[i]) - k) - (static_cast<double>(u[i]) - 0.5));
    out[i] = static_cast<float>(std::clamp(x, -double{FLT_MAX}, double{FLT_MAX}));
  }
  return bad;
}

template <typename Code>
bool encode_body(std::span<const float> v, std::span<const std::size_t> bounds, std::uint32_t levels,
                 const philox_stream& rng, std::span<std::byte> out) {
  const std::size_t buckets = bounds.size() - 1;
  const unsigned bits = dither_code_bits(levels);
  bit_writer writer(out.subspan(4 * buckets));
  alignas(64) float u[kTile];
  alignas(64) Code codes[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t start = bounds[b], len = bounds[b + 1] - bounds[b];
    bool finite = true;
    const float kappa = dither_scale(v.subspan(start, len), levels, finite);
    if (!finite) return false;
    std::memcpy(out.data() + 4 * b, &kappa, 4);
    for (std::size_t t = 0; t < len; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      philox_uniforms(rng, start + t, std::span<float>(u, m));
      quantize_tile(v.data() + start + t, m, kappa, levels, u, codes);
      writer.put(std::span<const Code>(codes, m), bits);
    }
  }
  writer.finish();
  return true;
}

template <typename Code>
dither_decode_result decode_body(std::span<const std::byte> in, std::span<const std::size_t> bounds,
                                 std::uint32_t levels, const philox_stream& rng, std::span<float> out) {
  const std::size_t buckets = bounds.size() - 1;
  const unsigned bits = dither_code_bits(levels);
  bit_reader reader(in.subspan(4 * buckets));
  alignas(64) float u[kTile];
  alignas(64) Code codes[kTile];
  for (std::size_t b = 0; b < buckets; ++b) {
    std::uint32_t kappa_bits;
    std::memcpy(&kappa_bits, in.data() + 4 * b, 4);
    if (kappa_bits >= 0x7f800000u) return {dither_fault::scale, b};  // NaN, Inf, or the sign bit set
    const float kappa = std::bit_cast<float>(kappa_bits);
    const std::size_t start = bounds[b], len = bounds[b + 1] - bounds[b];
    for (std::size_t t = 0; t < len; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      reader.get(std::span<Code>(codes, m), bits);
      philox_uniforms(rng, start + t, std::span<float>(u, m));
      if (dequantize_tile(codes, m, kappa, levels, u, out.data() + start + t) != 0) {
        std::size_t i = 0;
        while (i < m && (kappa > 0.0f ? codes[i] <= 2 * levels : codes[i] == levels)) ++i;
        return {dither_fault::code, start + t + i};
      }
    }
  }
  if (!reader.rest_is_zero()) return {dither_fault::padding, out.size()};
  return {};
}

}  // namespace

float dither_scale(std::span<const float> bucket, std::uint32_t levels, bool& finite) {
  // On |x| as bit patterns the integer order is the float order (Inf above every finite value, NaN
  // above Inf), and an integer max reduction vectorizes.
  std::uint32_t m = 0;
  for (const float x : bucket) m = std::max(m, std::bit_cast<std::uint32_t>(x) & 0x7fffffffu);
  finite = m < 0x7f800000u;
  return std::bit_cast<float>(m) / static_cast<float>(levels);
}

bool dither_encode(std::span<const float> v, std::span<const std::size_t> bounds, std::uint32_t levels,
                   const philox_stream& rng, std::span<std::byte> out) {
  check_args(bounds, v.size(), levels);
  QG_ENFORCE(
      out.size() == dither_encoded_bytes(v.size(), bounds.size() - 1, levels),
      "out=" << out.size() << " expected=" << dither_encoded_bytes(v.size(), bounds.size() - 1, levels));
  return dither_code_bits(levels) <= 8 ? encode_body<std::uint8_t>(v, bounds, levels, rng, out)
                                       : encode_body<std::uint16_t>(v, bounds, levels, rng, out);
}

dither_decode_result dither_decode(std::span<const std::byte> in, std::span<const std::size_t> bounds,
                                   std::uint32_t levels, const philox_stream& rng, std::span<float> out) {
  check_args(bounds, out.size(), levels);
  if (in.size() != dither_encoded_bytes(out.size(), bounds.size() - 1, levels))
    return {dither_fault::size, in.size()};
  return dither_code_bits(levels) <= 8 ? decode_body<std::uint8_t>(in, bounds, levels, rng, out)
                                       : decode_body<std::uint16_t>(in, bounds, levels, rng, out);
}

}  // namespace qgossip::kernels
