#pragma once
// What the algorithm tests share: a ring's mixing row and a deterministic stochastic-rounding
// "compressor", so each test drives the update rules without the codec library.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace qgossip::testing {

// Row `rank` of a ring of n with every weight 1/3 (uniform and Metropolis–Hastings agree there).
inline mixing_row ring_row(int rank, int n) {
  mixing_row r;
  r.rank = rank;
  r.self_weight = 1.0 / 3.0;
  const int a = (rank + n - 1) % n, b = (rank + 1) % n;
  r.neighbours = a < b ? std::vector<int>{a, b} : std::vector<int>{b, a};
  r.weights = {1.0 / 3.0, 1.0 / 3.0};
  return r;
}

// Unbiased stochastic rounding to `levels` levels of max|v| (a QSGDinf-like relative quantizer:
// its error scales with the vector, as real compressors' do), seeded by (rank, t): deterministic.
inline std::vector<float> round_to_grid(std::span<const float> v, float levels, int rank, std::uint64_t t) {
  float top = 0.0f;
  for (float x : v) top = std::max(top, std::fabs(x));
  std::vector<float> out(v.size(), 0.0f);
  if (top == 0.0f) return out;
  const float step = top / levels;
  std::mt19937_64 rng(static_cast<std::uint64_t>(rank) * 1000003ull + t);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float q = v[i] / step, lo = std::floor(q);
    out[i] = step * (lo + (u(rng) < q - lo ? 1.0f : 0.0f));
  }
  return out;
}

}  // namespace qgossip::testing
