#pragma once
// The arithmetic shared by the gossip algorithms: weighted sums over a node and its neighbours,
// written as plain loops over contiguous floats so the compiler vectorizes them. Weights are used
// as float, and every sum runs in a fixed order, so results are bit-reproducible.
#include <cstddef>
#include <span>

#include "core/errors.hpp"

namespace qgossip::mixing {

// out = a * x
inline void scale(std::span<float> out, float a, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  for (std::size_t i = 0; i < out.size(); ++i) o[i] = a * xp[i];
}

// out += a * x
inline void axpy(std::span<float> out, float a, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  for (std::size_t i = 0; i < out.size(); ++i) o[i] += a * xp[i];
}

// out += x
inline void add(std::span<float> out, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  for (std::size_t i = 0; i < out.size(); ++i) o[i] += xp[i];
}

// out = a * out + b * x
inline void blend(std::span<float> out, float a, float b, std::span<const float> x) {
  QG_ENFORCE(out.size() == x.size(), out.size() << " vs " << x.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  for (std::size_t i = 0; i < out.size(); ++i) o[i] = a * o[i] + b * xp[i];
}

// out = x - y
inline void sub(std::span<float> out, std::span<const float> x, std::span<const float> y) {
  QG_ENFORCE(out.size() == x.size() && x.size() == y.size(), out.size() << ", " << x.size() << ", " << y.size());
  float* __restrict o = out.data();
  const float* __restrict xp = x.data();
  const float* __restrict yp = y.data();
  for (std::size_t i = 0; i < out.size(); ++i) o[i] = xp[i] - yp[i];
}

}  // namespace qgossip::mixing
