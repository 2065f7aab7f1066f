#include "node/data/dataset.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.hpp"
#include "node/data/synthetic.hpp"

using namespace qgossip;

namespace {
std::vector<double> class_mean(const dataset& d, std::uint8_t c) {
  std::vector<double> mean(d.dim, 0.0);
  std::size_t n = 0;
  for (std::size_t i = 0; i < d.size; ++i) {
    if (d.labels[i] != c) continue;
    ++n;
    for (std::size_t k = 0; k < d.dim; ++k) mean[k] += d.row(i)[k];
  }
  for (double& m : mean) m /= static_cast<double>(n);
  return mean;
}
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t k = 0; k < a.size(); ++k) m = std::max(m, std::abs(a[k] - b[k]));
  return m;
}
}  // namespace

TEST_CASE("subset copies the chosen rows and labels in order") {
  dataset d;
  d.size = 3;
  d.dim = 2;
  d.classes = 3;
  d.features = {0, 1, 10, 11, 20, 21};
  d.labels = {0, 1, 2};
  const std::vector<std::size_t> pick{2, 0, 2};
  const dataset s = d.subset(pick);
  CHECK(s.size == 3);
  CHECK(s.dim == 2);
  CHECK(s.classes == 3);
  CHECK(s.features == std::vector<float>{20, 21, 0, 1, 20, 21});
  CHECK(s.labels == std::vector<std::uint8_t>{2, 0, 2});
  CHECK(s.row(1)[1] == 1.0f);
  CHECK(label_histogram(s) == std::vector<std::size_t>{1, 0, 2});
  const std::vector<std::size_t> bad{3};
  CHECK_THROWS_AS((void)d.subset(bad), invariant_error);
}

TEST_CASE("check_consistent finds disagreeing fields") {
  dataset d;
  d.size = 2;
  d.dim = 2;
  d.classes = 2;
  d.features = {0, 0, 0, 0};
  d.labels = {0, 1};
  CHECK_NOTHROW(check_consistent(d));
  d.labels[1] = 2;
  CHECK_THROWS_AS(check_consistent(d), invariant_error);
  d.labels[1] = 1;
  d.features.pop_back();
  CHECK_THROWS_AS(check_consistent(d), invariant_error);
}

TEST_CASE("synthetic data: balanced labels, deterministic in the seed, clusters where promised") {
  synthetic_options o;
  o.size = 4000;
  o.dim = 10;
  o.classes = 4;
  o.seed = 3;
  o.separation = 2.0;
  o.noise = 0.5;
  const dataset d = make_synthetic(o);
  check_consistent(d);
  CHECK(label_histogram(d) == std::vector<std::size_t>(4, 1000));
  CHECK(make_synthetic(o).features == d.features);

  // Per-class spread around the class mean is the noise: with 1000 × 10 draws per class the sample
  // standard deviation is within 3% of 0.5 (its relative error is ~1/sqrt(2·10000) = 0.7%).
  for (std::uint8_t c = 0; c < 4; ++c) {
    const std::vector<double> mean = class_mean(d, c);
    double ss = 0;
    for (std::size_t i = 0; i < d.size; ++i)
      if (d.labels[i] == c)
        for (std::size_t k = 0; k < o.dim; ++k) ss += std::pow(d.row(i)[k] - mean[k], 2);
    CHECK(std::sqrt(ss / (1000.0 * o.dim)) == doctest::Approx(0.5).epsilon(0.03));
  }

  synthetic_options other = o;
  other.seed = 4;
  const dataset e = make_synthetic(other);
  CHECK(e.features != d.features);
  // Another seed draws other centres: they lie ~separation·sqrt(2) = 2.8 apart per coordinate.
  CHECK(max_abs_diff(class_mean(d, 0), class_mean(e, 0)) > 1.0);
  // The same centre_seed keeps the centres: class means then differ only by sampling error,
  // ~0.5/sqrt(1000) = 0.016 per coordinate, so 0.1 is a 6-sigma bound.
  o.centre_seed = 99;
  other.centre_seed = 99;
  const dataset a = make_synthetic(o), b = make_synthetic(other);
  CHECK(a.features != b.features);
  CHECK(max_abs_diff(class_mean(a, 0), class_mean(b, 0)) < 0.1);
}

TEST_CASE("synthetic options are validated") {
  synthetic_options o;
  o.classes = 1;
  CHECK_THROWS_AS((void)make_synthetic(o), config_error);
  o = {};
  o.size = 0;
  CHECK_THROWS_AS((void)make_synthetic(o), config_error);
  o = {};
  o.separation = 0;
  CHECK_THROWS_AS((void)make_synthetic(o), config_error);
  o = {};
  o.noise = -1;
  CHECK_THROWS_AS((void)make_synthetic(o), config_error);
}
