#include "algorithms/compress/isgq_quantizers.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "kernels/cpu/dither.hpp"
#include "kernels/cpu/uniforms.hpp"

namespace qgossip::isgq_parts {

namespace {

// The tile loops take raw pointers: GCC 12 does not vectorize them through std::span.
// codes = clamp(floor(fl(x / kappa) + u), -K, K) + K, with u the dither's uniforms in [0, 1), or
// 1/2 for every value without one (u == nullptr: round to nearest).
void quantize_tile(const float* x, std::size_t m, float kappa, std::uint32_t levels, const float* u,
                   std::uint16_t* codes) {
  const float k = static_cast<float>(levels);
  const auto offset = static_cast<std::int32_t>(levels);
  const auto code = [&](float v, float shift) {
    const float q = std::clamp(std::floor(v / kappa + shift), -k, k);
    return static_cast<std::uint16_t>(static_cast<std::int32_t>(q) + offset);
  };
  if (u != nullptr) {
    for (std::size_t i = 0; i < m; ++i) codes[i] = code(x[i], u[i]);
  } else {
    for (std::size_t i = 0; i < m; ++i) codes[i] = code(x[i], 0.5f);
  }
}

void dequantize_tile(const std::uint16_t* codes, std::size_t m, float kappa, std::uint32_t levels, const float* u,
                     float* out) {
  const double kd = kappa, k = static_cast<double>(levels);
  for (std::size_t i = 0; i < m; ++i) {
    // q - U = (code - K) - (u - 1/2), exact in double; one rounding to float at the end.
    const double v = kd * ((static_cast<double>(codes[i]) - k) - (static_cast<double>(u[i]) - 0.5));
    out[i] = static_cast<float>(std::clamp(v, -double{FLT_MAX}, double{FLT_MAX}));
  }
}

// The bins of the mse variant: the uniform quantizer's step, chosen per matrix among
// kappa_max 2^(-j/4), j = 0..kStepCandidates-1, as the one with the least squared error
// ||M - kappa q||² (values beyond K kappa fall in the outer bins). The step never travels (the
// points do), so this choice costs nothing on the wire; with kappa_max = ||M||_inf / K alone, a
// gaussian matrix at K = 1 would put nearly every value in the zero bin.
constexpr int kStepCandidates = 17;

}  // namespace

void dither_codes(std::span<const float> x, float kappa, std::uint32_t levels, const kernels::philox_stream& rng,
                  std::uint64_t first, std::span<std::uint16_t> codes) {
  if (!(kappa > 0.0f)) {
    std::fill(codes.begin(), codes.end(), static_cast<std::uint16_t>(levels));
    return;
  }
  alignas(64) float u[kTile];
  for (std::size_t t = 0; t < x.size(); t += kTile) {
    const std::size_t m = std::min(kTile, x.size() - t);
    kernels::philox_uniforms(rng, first + t, std::span<float>(u, m));
    quantize_tile(x.data() + t, m, kappa, levels, u, codes.data() + t);
  }
}

// REQUIRES: kappa > 0 and every code <= 2K (or kappa == 0 and every code K).
void dither_values(std::span<const std::uint16_t> codes, float kappa, std::uint32_t levels,
                   const kernels::philox_stream& rng, std::uint64_t first, std::span<float> out) {
  if (!(kappa > 0.0f)) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  alignas(64) float u[kTile];
  for (std::size_t t = 0; t < codes.size(); t += kTile) {
    const std::size_t m = std::min(kTile, codes.size() - t);
    kernels::philox_uniforms(rng, first + t, std::span<float>(u, m));
    dequantize_tile(codes.data() + t, m, kappa, levels, u, out.data() + t);
  }
}

// The uniform quantizer's bins, no dither: q = clamp(floor(fl(x / kappa) + 1/2), -K, K).
void nearest_codes(std::span<const float> x, float kappa, std::uint32_t levels, std::span<std::uint16_t> codes) {
  if (!(kappa > 0.0f)) {
    std::fill(codes.begin(), codes.end(), static_cast<std::uint16_t>(levels));
    return;
  }
  quantize_tile(x.data(), x.size(), kappa, levels, nullptr, codes.data());
}


float mse_step(std::span<const float> m, std::uint32_t levels, float kappa_max) {
  if (!(kappa_max > 0.0f)) return kappa_max;
  const float k = static_cast<float>(levels);
  float best = kappa_max;
  double best_err = std::numeric_limits<double>::infinity();
  for (int j = 0; j < kStepCandidates; ++j) {
    const auto kappa = static_cast<float>(static_cast<double>(kappa_max) * std::exp2(-0.25 * j));
    if (!(kappa > 0.0f)) break;
    // Eight independent partial sums, so the loop vectorizes without reassociating anything.
    constexpr std::size_t kLanes = 8;
    double lane[kLanes] = {};
    const float* x = m.data();
    std::size_t i = 0;
    for (; i + kLanes <= m.size(); i += kLanes) {
      for (std::size_t t = 0; t < kLanes; ++t) {
        const float q = std::min(std::max(std::floor(x[i + t] / kappa + 0.5f), -k), k);
        const double d = static_cast<double>(x[i + t]) - static_cast<double>(q * kappa);
        lane[t] += d * d;
      }
    }
    double err = 0;
    for (; i < m.size(); ++i) {
      const float q = std::min(std::max(std::floor(x[i] / kappa + 0.5f), -k), k);
      const double d = static_cast<double>(x[i]) - static_cast<double>(q * kappa);
      err += d * d;
    }
    for (const double v : lane) err += v;
    if (err < best_err) {
      best_err = err;
      best = kappa;
    }
  }
  return best;
}

void point_values(std::span<const std::uint16_t> codes, std::span<const float> points, std::span<float> out) {
  for (std::size_t i = 0; i < codes.size(); ++i) out[i] = points[codes[i]];
}

// REQUIRES: m finite (checked by encode up front).
float scale_of(std::span<const float> m, std::uint32_t levels) {
  bool finite = true;
  return kernels::dither_scale(m, levels, finite);
}

}  // namespace qgossip::isgq_parts
