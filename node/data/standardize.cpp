#include "node/data/standardize.hpp"

#include <cmath>

#include "core/errors.hpp"

namespace qgossip {
namespace {

// Calls f(channel, feature) for every feature of d (a reference: const when d is). Within an
// example, channel c of an image covers the contiguous features [c·plane, (c+1)·plane); a non-image
// example is one channel.
template <class D, class F>
void for_each_feature(D& d, F f) {
  const std::size_t channels = channel_count(d);
  const std::size_t plane = d.dim / channels;
  QG_ENFORCE(d.features.size() == d.size * d.dim, "features " << d.features.size() << " != size " << d.size
                                                              << " x dim " << d.dim);
  QG_ENFORCE(!d.shape.is_image() || d.shape.size() == d.dim, "image shape does not match dim " << d.dim);
  for (std::size_t i = 0; i < d.size; ++i) {
    auto* example = d.features.data() + i * d.dim;
    for (std::size_t c = 0; c < channels; ++c) {
      for (std::size_t k = 0; k < plane; ++k) f(c, example[c * plane + k]);
    }
  }
}

}  // namespace

std::size_t channel_count(const dataset& d) { return d.shape.is_image() ? d.shape.channels : 1; }

channel_stats measure_channels(const dataset& d) {
  QG_ENFORCE(d.size > 0 && d.dim > 0, "size " << d.size << " dim " << d.dim);
  const std::size_t channels = channel_count(d);
  const double per_channel = static_cast<double>(d.size) * static_cast<double>(d.dim / channels);
  channel_stats s;
  s.mean.assign(channels, 0.0);
  s.stddev.assign(channels, 0.0);
  for_each_feature(d, [&](std::size_t c, float x) { s.mean[c] += x; });
  for (double& m : s.mean) m /= per_channel;
  for_each_feature(d, [&](std::size_t c, float x) {
    const double dev = x - s.mean[c];
    s.stddev[c] += dev * dev;
  });
  for (double& sd : s.stddev) sd = std::sqrt(sd / per_channel);
  return s;
}

void standardize(dataset& d, const channel_stats& s) {
  const std::size_t channels = channel_count(d);
  QG_ENFORCE(s.mean.size() == channels && s.stddev.size() == channels,
             "stats for " << s.mean.size() << "/" << s.stddev.size() << " channels, data has " << channels);
  std::vector<double> divisor(s.stddev);
  for (double& sd : divisor) sd = sd > 0 ? sd : 1.0;
  for_each_feature(d, [&](std::size_t c, float& x) { x = static_cast<float>((x - s.mean[c]) / divisor[c]); });
}

}  // namespace qgossip
