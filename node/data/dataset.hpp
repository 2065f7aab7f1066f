#pragma once
// An in-memory labelled data set: `size` examples of `dim` float features each, stored row-major
// (example i is features[i*dim, (i+1)*dim)), and one label in [0, classes) per example.
// A plain value type: copy it, move it, take a subset of it. Models read it through spans and
// never keep a reference to it beyond a call.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qgossip {

// Which half of a data set's distribution: the training examples or the held-out test examples.
enum class split { train, test };

// The layout of an image example's dim = channels·height·width features: channel-major (CHW, as
// torch expects). All zero for data that are not images (synthetic clusters).
struct image_shape {
  std::size_t channels = 0;
  std::size_t height = 0;
  std::size_t width = 0;
  [[nodiscard]] bool is_image() const { return channels > 0 && height > 0 && width > 0; }
  [[nodiscard]] std::size_t size() const { return channels * height * width; }
  bool operator==(const image_shape&) const = default;
};

struct dataset {
  std::size_t size = 0;
  std::size_t dim = 0;
  std::size_t classes = 0;
  image_shape shape;                 // images: shape.size() == dim; otherwise all zero
  std::vector<float> features;       // size × dim, row-major
  std::vector<std::uint8_t> labels;  // size, each < classes

  // The features of example i. REQUIRES: i < size.
  [[nodiscard]] std::span<const float> row(std::size_t i) const {
    return std::span<const float>(features).subspan(i * dim, dim);
  }
  // A new data set holding the given examples in the given order (repeats allowed).
  // REQUIRES: every index < size (checked: invariant_error otherwise).
  [[nodiscard]] dataset subset(std::span<const std::size_t> indices) const;
};

// Copies the features of examples `indices` into `features_out` (row after row, i.e. one column
// per example of a column-major dim × n matrix) and their labels into `labels_out`.
// REQUIRES (invariant_error otherwise): every index < d.size, features_out.size() >= n·dim,
// labels_out.size() >= n.
void gather(const dataset& d, std::span<const std::size_t> indices, std::span<float> features_out,
            std::span<std::uint8_t> labels_out);

// Checks that the fields agree (vector lengths, classes in 1..256, every label < classes);
// throws invariant_error naming the first disagreement.
void check_consistent(const dataset& d);

// Number of examples of each label: a vector of length d.classes.
[[nodiscard]] std::vector<std::size_t> label_histogram(const dataset& d);

}  // namespace qgossip
