#include "node/data/dataset.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

dataset dataset::subset(std::span<const std::size_t> indices) const {
  dataset out;
  out.size = indices.size();
  out.dim = dim;
  out.classes = classes;
  out.shape = shape;
  out.features.resize(indices.size() * dim);
  out.labels.resize(indices.size());
  gather(*this, indices, out.features, out.labels);
  return out;
}

void gather(const dataset& d, std::span<const std::size_t> indices, std::span<float> features_out,
            std::span<std::uint8_t> labels_out) {
  QG_ENFORCE(features_out.size() >= indices.size() * d.dim && labels_out.size() >= indices.size(),
             "buffers " << features_out.size() << "/" << labels_out.size() << " for " << indices.size()
                        << " examples of dim " << d.dim);
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const std::size_t i = indices[k];
    QG_ENFORCE(i < d.size, "index " << i << " at position " << k << " >= size " << d.size);
    std::copy_n(d.features.data() + i * d.dim, d.dim, features_out.data() + k * d.dim);
    labels_out[k] = d.labels[i];
  }
}

void check_consistent(const dataset& d) {
  QG_ENFORCE(d.features.size() == d.size * d.dim,
             "features " << d.features.size() << " != size " << d.size << " x dim " << d.dim);
  QG_ENFORCE(d.labels.size() == d.size, "labels " << d.labels.size() << " != size " << d.size);
  QG_ENFORCE(d.classes >= 1 && d.classes <= 256, "classes " << d.classes);
  QG_ENFORCE(!d.shape.is_image() || d.shape.size() == d.dim,
             "image shape " << d.shape.channels << "x" << d.shape.height << "x" << d.shape.width << " != dim " << d.dim);
  for (std::size_t i = 0; i < d.size; ++i) {
    QG_ENFORCE(d.labels[i] < d.classes,
               "label " << int(d.labels[i]) << " of example " << i << " >= classes " << d.classes);
  }
}

std::vector<std::size_t> label_histogram(const dataset& d) {
  std::vector<std::size_t> counts(d.classes, 0);
  for (const std::uint8_t y : d.labels) {
    QG_ENFORCE(y < d.classes, "label " << int(y) << " >= classes " << d.classes);
    ++counts[y];
  }
  return counts;
}

}  // namespace qgossip
