#include "kernels/cpu/mcgq.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/errors.hpp"

namespace qgossip::kernels {

std::uint64_t mcgq_samples(std::size_t len, double k) {
  QG_ENFORCE(k > 0.0 && std::isfinite(k), "K=" << k);
  const double n = std::ceil(static_cast<double>(len) * k);
  return n >= 0x1p63 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(n);
}

double mcgq_offset(const philox_stream& rng, std::uint64_t layer) {
  const philox_block b = rng.block(layer);
  const std::uint64_t bits = (std::uint64_t{b.w[0] >> 5} << 26) | (b.w[1] >> 6);
  return static_cast<double>(bits) * 0x1p-53;
}

double mcgq_quantize(std::span<const float> g, std::uint64_t samples, double xi,
                     std::span<std::int32_t> g_int) {
  QG_ENFORCE(g_int.size() == g.size(), "g=" << g.size() << " g_int=" << g_int.size());
  QG_ENFORCE(samples <= kMcgqMaxSamples, "samples=" << samples);
  QG_ENFORCE(xi >= 0.0 && xi < 1.0, "xi=" << xi);
  double total = 0.0;
  for (const float x : g) total += std::fabs(static_cast<double>(x));
  if (!(total > 0.0) || !std::isfinite(total)) {  // all zero, or non-finite input (caller checks)
    std::fill(g_int.begin(), g_int.end(), 0);
    return total;
  }
  const double n = static_cast<double>(samples);
  const double ratio = n / total;
  const auto all = static_cast<std::int64_t>(samples);
  double s = 0.0;
  std::int64_t before = 0;  // samples below the start of the current interval
  for (std::size_t k = 0; k < g.size(); ++k) {
    s += std::fabs(static_cast<double>(g[k]));
    std::int64_t upto = all;
    if (s != total) {
      const double t = std::ceil(s * ratio - xi);
      upto = t <= 0.0 ? 0 : (t >= n ? all : static_cast<std::int64_t>(t));
    }
    const auto count = static_cast<std::int32_t>(upto - before);
    before = upto;
    g_int[k] = std::signbit(g[k]) ? -count : count;
  }
  return total;
}

double mcgq_wasserstein(std::span<const float> g, std::span<const std::int32_t> g_int) {
  QG_ENFORCE(g_int.size() == g.size(), "g=" << g.size() << " g_int=" << g_int.size());
  double total = 0.0;
  std::uint64_t hits = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    total += std::fabs(static_cast<double>(g[k]));
    hits += static_cast<std::uint64_t>(std::abs(static_cast<std::int64_t>(g_int[k])));
  }
  if (!(total > 0.0) || hits == 0) return 0.0;
  const double h = static_cast<double>(hits);
  double s = 0.0, distance = 0.0;
  std::uint64_t c = 0;
  for (std::size_t k = 0; k < g.size(); ++k) {
    s += std::fabs(static_cast<double>(g[k]));
    c += static_cast<std::uint64_t>(std::abs(static_cast<std::int64_t>(g_int[k])));
    distance += std::fabs(s / total - static_cast<double>(c) / h);
  }
  return distance;
}

void mcgq_dequantize(std::span<const std::int32_t> g_int, double step, std::span<float> out) {
  QG_ENFORCE(g_int.size() == out.size(), "g_int=" << g_int.size() << " out=" << out.size());
  constexpr double kMax = FLT_MAX;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const double x = step * static_cast<double>(g_int[k]);
    out[k] = static_cast<float>(std::clamp(x, -kMax, kMax));
  }
}

void mcgq_accumulate(std::span<float> acc, std::span<const float> g) {
  QG_ENFORCE(acc.size() == g.size(), "acc=" << acc.size() << " g=" << g.size());
  for (std::size_t k = 0; k < acc.size(); ++k) acc[k] += g[k];
}

void mcgq_reset_sampled(std::span<float> acc, std::span<const std::int32_t> g_int) {
  QG_ENFORCE(acc.size() == g_int.size(), "acc=" << acc.size() << " g_int=" << g_int.size());
  for (std::size_t k = 0; k < acc.size(); ++k) acc[k] = g_int[k] != 0 ? 0.0f : acc[k];
}

}  // namespace qgossip::kernels
