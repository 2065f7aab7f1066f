#pragma once
// Synthetic classification data for tests and smoke runs: Gaussian class clusters.
// Each class c has a centre μ_c with i.i.d. N(0, separation²) coordinates; an example of class c is
// μ_c + noise·N(0, I). Labels are balanced (example i has label i mod classes before a seeded
// shuffle of the order). With separation ≥ noise and dim ≳ 10 the classes are nearly linearly
// separable, so softmax regression reaches low loss and high accuracy.
// Deterministic in the options: the same options give the same bytes on every platform
// (see core/portable_random.hpp).
#include <cstddef>
#include <cstdint>

#include "node/data/dataset.hpp"

namespace qgossip {

struct synthetic_options {
  std::size_t size = 1000;  // examples, >= 1
  std::size_t dim = 20;     // features, >= 1
  std::size_t classes = 4;  // 2..256
  std::uint64_t seed = 1;
  double separation = 1.0;  // standard deviation of the class centres' coordinates, > 0
  double noise = 1.0;       // standard deviation of an example around its centre, >= 0
  // Centres come from `centre_seed` when set (non-zero), else from `seed`: a train and a test set
  // drawn with different seeds but the same centre_seed share their classes.
  std::uint64_t centre_seed = 0;
};

// Throws config_error for options outside the ranges above.
[[nodiscard]] dataset make_synthetic(const synthetic_options& options);

}  // namespace qgossip
