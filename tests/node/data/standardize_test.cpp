// Per-channel standardization: the measured statistics against a direct computation, and the data
// after standardize() having mean 0 and standard deviation 1 in every channel.
#include "node/data/standardize.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;

namespace {

// n images of shape c×h×w; channel k's values are uniform in [k, 1 + 3k) (different means and spreads).
dataset random_images(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::uint64_t seed) {
  dataset d;
  d.size = n;
  d.shape = {c, h, w};
  d.dim = d.shape.size();
  d.classes = 2;
  d.labels.assign(n, 0);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < c; ++k)
      for (std::size_t p = 0; p < h * w; ++p)
        d.features.push_back(static_cast<float>(k + (1.0 + 2.0 * k) * static_cast<double>(rng() >> 11) * 0x1p-53));
  return d;
}

// Mean and population standard deviation of channel k, straight from the definition.
std::pair<double, double> direct_stats(const dataset& d, std::size_t k) {
  const std::size_t plane = d.shape.height * d.shape.width;
  std::vector<double> v;
  for (std::size_t i = 0; i < d.size; ++i)
    for (std::size_t p = 0; p < plane; ++p) v.push_back(d.row(i)[k * plane + p]);
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, std::sqrt(var / static_cast<double>(v.size()))};
}

}  // namespace

TEST_CASE("standardize: per-channel statistics of an image data set, and mean 0 / std 1 after") {
  dataset d = random_images(200, 3, 4, 5, 11);
  const channel_stats s = measure_channels(d);
  REQUIRE(s.mean.size() == 3);
  REQUIRE(s.stddev.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    const auto [mean, sd] = direct_stats(d, k);
    CHECK(s.mean[k] == doctest::Approx(mean).epsilon(1e-12));
    CHECK(s.stddev[k] == doctest::Approx(sd).epsilon(1e-12));
    // Uniform on [k, 1 + 3k): mean k + (1 + 2k)/2, sd (1 + 2k)/sqrt(12); 4000 draws per channel.
    CHECK(s.mean[k] == doctest::Approx(k + (1.0 + 2.0 * k) / 2).epsilon(0.02));
  }
  CHECK(s.mean[0] != doctest::Approx(s.mean[2]));

  standardize(d, s);
  const channel_stats after = measure_channels(d);
  for (std::size_t k = 0; k < 3; ++k) {
    CAPTURE(k);
    CHECK(std::fabs(after.mean[k]) < 1e-5);
    CHECK(std::fabs(after.stddev[k] - 1.0) < 1e-5);
  }
}

TEST_CASE("standardize: data from elsewhere (the test set) get the same affine map") {
  const dataset train = random_images(50, 2, 3, 3, 1);
  const channel_stats s = measure_channels(train);
  dataset test = random_images(5, 2, 3, 3, 2);
  const dataset before = test;
  standardize(test, s);
  for (std::size_t i = 0; i < test.features.size(); ++i) {
    const std::size_t k = (i % 18) / 9;  // channel of feature i
    CHECK(test.features[i] == static_cast<float>((before.features[i] - s.mean[k]) / s.stddev[k]));
  }
}

TEST_CASE("standardize: a non-image data set is one channel; a constant channel is only centred") {
  dataset flat;
  flat.size = 4;
  flat.dim = 2;
  flat.classes = 2;
  flat.labels = {0, 1, 0, 1};
  flat.features = {1, 3, 5, 7, 1, 3, 5, 7};
  const channel_stats s = measure_channels(flat);
  REQUIRE(s.mean.size() == 1);
  CHECK(s.mean[0] == 4.0);
  CHECK(s.stddev[0] == doctest::Approx(std::sqrt(5.0)));
  standardize(flat, s);
  CHECK(flat.features[0] == doctest::Approx(-3.0 / std::sqrt(5.0)));

  dataset img = random_images(3, 2, 2, 2, 5);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t p = 0; p < 4; ++p) img.features[i * 8 + 4 + p] = 2.5f;  // channel 1 constant
  const channel_stats c = measure_channels(img);
  CHECK(c.mean[1] == 2.5);
  CHECK(c.stddev[1] == 0.0);
  standardize(img, c);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t p = 0; p < 4; ++p) CHECK(img.features[i * 8 + 4 + p] == 0.0f);
}

TEST_CASE("standardize: statistics for another number of channels, or no data, are invariant errors") {
  dataset d = random_images(2, 3, 2, 2, 7);
  channel_stats one{{0.5}, {1.0}};
  CHECK_THROWS_AS(standardize(d, one), invariant_error);
  CHECK_THROWS_AS((void)measure_channels(dataset{}), invariant_error);
}
