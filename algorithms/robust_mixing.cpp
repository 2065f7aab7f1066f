#include "algorithms/robust_mixing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/errors.hpp"

namespace qgossip {

clip_rule::clip_rule(const robust_options& o) : options_(o) {
  QG_ENFORCE(o.tolerate >= 0 && (!o.tau || (std::isfinite(*o.tau) && *o.tau >= 0)),
             "tolerate=" << o.tolerate << " tau=" << o.tau.value_or(-1));
}

void clip_rule::scales(std::span<const double> distances, std::span<float> scale) {
  QG_ENFORCE(distances.size() == scale.size(), distances.size() << " distances, " << scale.size() << " scales");
  double tau = options_.tau.value_or(0.0);
  if (!options_.tau) {
    const auto b = static_cast<std::size_t>(tolerated());
    sorted_.assign(distances.begin(), distances.end());
    for (double& d : sorted_)
      if (!std::isfinite(d)) d = INFINITY;  // NaN sorts as the largest: never the radius
    if (sorted_.size() > b) {
      std::nth_element(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(b), sorted_.end(),
                       std::greater<>());
      tau = sorted_[b];  // the (b+1)-th largest
    }
    if (!std::isfinite(tau)) tau = 0;  // more than b copies that overflowed: trust none
  }
  last_ = {.tau = tau,
           .clipped_fraction = 0,
           .largest_distance = 0,
           .screened_fraction = 0,
           .loss_gap = std::isfinite(largest_gap_) ? largest_gap_ : 0};
  std::size_t clipped = 0;
  const bool checked = screened_.size() == distances.size();  // the distances came from checked_distance
  std::size_t left_out = 0;
  for (std::size_t k = 0; k < distances.size(); ++k) {
    const double d = distances[k];
    if (checked && screened_[k])
      ++left_out;  // a copy the screen left out: no distance measured
    else
      last_.largest_distance = std::max(last_.largest_distance, std::isfinite(d) ? d : INFINITY);
    if (!std::isfinite(d)) {
      scale[k] = 0.0f;
    } else if (d <= tau) {
      scale[k] = 1.0f;
      continue;
    } else {
      scale[k] = static_cast<float>(tau / d);
    }
    ++clipped;
  }
  if (!distances.empty()) {
    last_.clipped_fraction = static_cast<double>(clipped) / static_cast<double>(distances.size());
    last_.screened_fraction = static_cast<double>(left_out) / static_cast<double>(distances.size());
  }
  screened_.clear();
  largest_gap_ = -INFINITY;
}

double clip_rule::checked_distance(std::span<const float> copy, std::span<const float> own) {
  if (gap_ && options_.screen) {
    const double gap = gap_(copy, own);
    largest_gap_ = std::max(largest_gap_, gap);
    screened_.push_back(gap <= *options_.screen ? 0 : 1);  // NaN (a loss not finite): left out too
    if (screened_.back()) return INFINITY;
  }
  return distance(copy, own);
}

double distance(std::span<const float> a, std::span<const float> b) {
  QG_ENFORCE(a.size() == b.size(), a.size() << " vs " << b.size());
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sum += d * d;
  }
  return std::sqrt(sum);
}

}  // namespace qgossip
