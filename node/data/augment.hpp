#pragma once
// Augmentation of training batches of images (data_spec.augment): for each example, a random crop
// after zero padding (pad each side with p = crop_padding zeros, cut a window of the original size
// at offsets (dx, dy) uniform in 0..2p), then a left-right mirror with probability 1/2.
//
// The choices for example k of a batch are a counter-based hash of (seed, rank, round, k): the
// same in every run with that seed, different across nodes and rounds, and independent of the
// batch's contents, of every other use of the seed, and of the order of calls. Everything works
// in place and allocates nothing.
#include <cstddef>
#include <cstdint>
#include <span>

#include "node/data/data_spec.hpp"
#include "node/data/dataset.hpp"

namespace qgossip {

// The random choices for one example.
struct augment_draw {
  std::size_t dx = 0;  // column of the crop window in the padded image, 0..2p (p: content unmoved)
  std::size_t dy = 0;  // its row, 0..2p
  bool flip = false;   // mirror left-right after cropping
  bool operator==(const augment_draw&) const = default;
};

// The choices for example k of the batch of `round` on node `rank`. REQUIRES: spec.crop_padding >= 0.
[[nodiscard]] augment_draw draw_augment(const augment_spec& spec, std::uint64_t seed, int rank,
                                        std::uint64_t round, std::size_t k);

// Crops one CHW image padded by `padding` zeros at the window (dx, dy), then mirrors it if
// draw.flip; in place. With p = padding and x' = draw.flip ? W-1-x : x, afterwards
//   image[c][y][x] = before[c][y + dy - p][x' + dx - p]   (0 where that is outside the image).
// REQUIRES (invariant_error otherwise): shape.is_image(), image.size() == shape.size(), padding >= 0.
void augment_image(std::span<float> image, const image_shape& shape, int padding, const augment_draw& draw);

// Applies augment_image with draw_augment(spec, seed, rank, round, k) to each example k of batch.
// An inactive spec (crop_padding 0, flip false) leaves any batch untouched. Otherwise REQUIRES
// (invariant_error): batch is an image data set (shape.is_image(), shape.size() == dim,
// features.size() == size·dim) and spec.crop_padding >= 0.
void augment_batch(dataset& batch, const augment_spec& spec, std::uint64_t seed, int rank,
                   std::uint64_t round);

}  // namespace qgossip
