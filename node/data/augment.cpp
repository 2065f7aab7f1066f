#include "node/data/augment.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/portable_random.hpp"

namespace qgossip {
namespace {

// Keeps augmentation's draws apart from every other stream derived from the run's seed.
constexpr std::uint64_t kAugmentStream = 0x6175676d656e7431ULL;  // "augment1"

// Moves the content of one H×W plane in place so that plane[y][x] = before[y + oy][x + ox] (0
// outside). The source of each cell is `shift` = oy·W + ox cells after it, so walking forwards
// when shift >= 0 (backwards otherwise) reads every source before it is overwritten.
void shift_plane(float* plane, std::ptrdiff_t h, std::ptrdiff_t w, std::ptrdiff_t oy, std::ptrdiff_t ox) {
  const auto move_cell = [&](std::ptrdiff_t y, std::ptrdiff_t x) {
    const std::ptrdiff_t sy = y + oy, sx = x + ox;
    plane[y * w + x] = (sy >= 0 && sy < h && sx >= 0 && sx < w) ? plane[sy * w + sx] : 0.0f;
  };
  if (oy * w + ox >= 0) {
    for (std::ptrdiff_t y = 0; y < h; ++y)
      for (std::ptrdiff_t x = 0; x < w; ++x) move_cell(y, x);
  } else {
    for (std::ptrdiff_t y = h - 1; y >= 0; --y)
      for (std::ptrdiff_t x = w - 1; x >= 0; --x) move_cell(y, x);
  }
}

}  // namespace

augment_draw draw_augment(const augment_spec& spec, std::uint64_t seed, int rank, std::uint64_t round,
                          std::size_t k) {
  QG_ENFORCE(spec.crop_padding >= 0, "crop_padding " << spec.crop_padding);
  std::uint64_t key = derive_seed(seed, kAugmentStream);
  key = derive_seed(key, static_cast<std::uint64_t>(static_cast<std::int64_t>(rank)));
  key = derive_seed(key, round);
  key = derive_seed(key, k);
  // Three independent 64-bit values; the modulo's bias is below 2^-50 for any sensible padding.
  const std::uint64_t window = 2 * static_cast<std::uint64_t>(spec.crop_padding) + 1;
  augment_draw d;
  d.dx = static_cast<std::size_t>(derive_seed(key, 0) % window);
  d.dy = static_cast<std::size_t>(derive_seed(key, 1) % window);
  d.flip = spec.flip && (derive_seed(key, 2) >> 63) != 0;
  return d;
}

void augment_image(std::span<float> image, const image_shape& shape, int padding, const augment_draw& draw) {
  QG_ENFORCE(shape.is_image() && image.size() == shape.size() && padding >= 0,
             "image of " << image.size() << " values, shape " << shape.channels << "x" << shape.height << "x"
                         << shape.width << ", padding " << padding);
  const auto h = static_cast<std::ptrdiff_t>(shape.height), w = static_cast<std::ptrdiff_t>(shape.width);
  const auto oy = static_cast<std::ptrdiff_t>(draw.dy) - padding;
  const auto ox = static_cast<std::ptrdiff_t>(draw.dx) - padding;
  for (std::size_t c = 0; c < shape.channels; ++c) {
    float* plane = image.data() + c * shape.height * shape.width;
    if (oy != 0 || ox != 0) shift_plane(plane, h, w, oy, ox);
    if (draw.flip) {
      for (std::ptrdiff_t y = 0; y < h; ++y) std::reverse(plane + y * w, plane + (y + 1) * w);
    }
  }
}

void augment_batch(dataset& batch, const augment_spec& spec, std::uint64_t seed, int rank, std::uint64_t round) {
  if (spec.crop_padding == 0 && !spec.flip) return;
  QG_ENFORCE(batch.shape.is_image() && batch.shape.size() == batch.dim &&
                 batch.features.size() == batch.size * batch.dim,
             "augmentation needs an image data set: shape " << batch.shape.channels << "x" << batch.shape.height
                                                           << "x" << batch.shape.width << ", dim " << batch.dim
                                                           << ", " << batch.features.size() << " features for "
                                                           << batch.size << " examples");
  QG_ENFORCE(spec.crop_padding >= 0, "crop_padding " << spec.crop_padding);
  const std::span<float> features(batch.features);
  for (std::size_t k = 0; k < batch.size; ++k) {
    augment_image(features.subspan(k * batch.dim, batch.dim), batch.shape, spec.crop_padding,
                  draw_augment(spec, seed, rank, round, k));
  }
}

}  // namespace qgossip
