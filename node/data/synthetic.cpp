#include "node/data/synthetic.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/portable_random.hpp"

namespace qgossip {

dataset make_synthetic(const synthetic_options& o) {
  if (o.size == 0) throw config_error("synthetic: size must be >= 1");
  if (o.dim == 0) throw config_error("synthetic: dim must be >= 1");
  if (o.classes < 2 || o.classes > 256) {
    throw config_error("synthetic: classes must be in 2..256, got " + std::to_string(o.classes));
  }
  if (!(o.separation > 0) || !std::isfinite(o.separation)) {
    throw config_error("synthetic: separation must be > 0, got " + std::to_string(o.separation));
  }
  if (!(o.noise >= 0) || !std::isfinite(o.noise)) {
    throw config_error("synthetic: noise must be >= 0, got " + std::to_string(o.noise));
  }

  // One stream per purpose: the centres must not depend on `size` or `seed` when centre_seed is set.
  std::mt19937_64 centre_rng(derive_seed(o.centre_seed != 0 ? o.centre_seed : o.seed, 0));
  std::mt19937_64 order_rng(derive_seed(o.seed, 1));
  std::mt19937_64 noise_rng(derive_seed(o.seed, 2));

  std::vector<double> centres(o.classes * o.dim);
  for (double& c : centres) c = o.separation * standard_normal(centre_rng);

  dataset d;
  d.size = o.size;
  d.dim = o.dim;
  d.classes = o.classes;
  d.labels.resize(o.size);
  for (std::size_t i = 0; i < o.size; ++i) d.labels[i] = static_cast<std::uint8_t>(i % o.classes);
  portable_shuffle(std::span<std::uint8_t>(d.labels), order_rng);

  d.features.resize(o.size * o.dim);
  for (std::size_t i = 0; i < o.size; ++i) {
    const double* centre = centres.data() + d.labels[i] * o.dim;
    float* row = d.features.data() + i * o.dim;
    for (std::size_t k = 0; k < o.dim; ++k) {
      row[k] = static_cast<float>(centre[k] + o.noise * standard_normal(noise_rng));
    }
  }
  return d;
}

}  // namespace qgossip
