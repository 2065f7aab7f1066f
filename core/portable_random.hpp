#pragma once
// Seeded randomness for data and model set-up that must agree across processes and platforms.
// std::mt19937_64's output sequence is fixed by the standard, but std::uniform_int_distribution,
// std::normal_distribution and std::shuffle are implementation-defined: two nodes built against
// different standard libraries would draw different shards or initial models from the same seed.
// These helpers use only the raw engine output, so a seed means the same thing everywhere.
// (The only platform dependence left is libm's log/cos in standard_normal, correctly rounded to
// float in practice.) Not for the hot loops: kernels use their own counter-based RNG.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>

namespace qgossip {

// A well-mixed 64-bit value from (seed, stream): independent seeds for epochs, layers, ranks.
[[nodiscard]] constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  // splitmix64 finalizer over a combination that differs for every (seed, stream) pair.
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform integer in [0, n), unbiased (rejection of the short tail). REQUIRES: n >= 1.
[[nodiscard]] inline std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n: values below it would bias the modulo
  std::uint64_t r = rng();
  while (r < threshold) r = rng();
  return r % n;
}

// Uniform double in [0, 1) from the top 53 bits.
[[nodiscard]] inline double uniform_01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// Standard normal by Box–Muller (one value per call; the sine half is dropped for statelessness).
[[nodiscard]] inline double standard_normal(std::mt19937_64& rng) {
  const double u1 = static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]: log is finite
  const double u2 = uniform_01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Gamma(shape, 1) by Marsaglia and Tsang's squeeze (2000); a shape below 1 draws Gamma(shape + 1)
// and scales it by U^(1/shape). REQUIRES: shape > 0. (libm's log, exp and pow as standard_normal.)
[[nodiscard]] inline double standard_gamma(std::mt19937_64& rng, double shape) {
  if (shape < 1.0) {
    const double u = static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    return standard_gamma(rng, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform_01(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// Fills values with N(0, stddev²) draws, in order.
// Each value uniform on [-bound, bound), drawn in order from rng.
inline void fill_uniform(std::span<float> values, double bound, std::mt19937_64& rng) {
  for (float& v : values) v = static_cast<float>(bound * (2.0 * uniform_01(rng) - 1.0));
}

inline void fill_normal(std::span<float> values, double stddev, std::mt19937_64& rng) {
  for (float& v : values) v = static_cast<float>(stddev * standard_normal(rng));
}

// Fisher–Yates shuffle in place.
template <typename T>
void portable_shuffle(std::span<T> values, std::mt19937_64& rng) {
  for (std::size_t i = values.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(uniform_below(rng, i));
    std::swap(values[i - 1], values[j]);
  }
}

}  // namespace qgossip
