// Batch augmentation: the crop and flip against a direct reference (pad with zeros, cut the
// window, mirror), the draws' determinism and independence across nodes and rounds, and their
// distribution.
#include "node/data/augment.hpp"

#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;

namespace {

// n images of shape c×h×w with distinct non-zero values (so moved and zero-filled cells show).
dataset images(std::size_t n, std::size_t c, std::size_t h, std::size_t w) {
  dataset d;
  d.size = n;
  d.shape = {c, h, w};
  d.dim = d.shape.size();
  d.classes = 2;
  d.labels.assign(n, 1);
  for (std::size_t i = 0; i < n * d.dim; ++i) d.features.push_back(1.0f + static_cast<float>(i));
  return d;
}

// The reference: pad each plane with p zeros per side, cut the h×w window at (dx, dy), then mirror.
std::vector<float> reference(std::span<const float> image, const image_shape& s, int p, const augment_draw& a) {
  const std::size_t pad = static_cast<std::size_t>(p), ph = s.height + 2 * pad, pw = s.width + 2 * pad;
  std::vector<float> out(image.size());
  for (std::size_t c = 0; c < s.channels; ++c) {
    std::vector<float> padded(ph * pw, 0.0f);
    for (std::size_t y = 0; y < s.height; ++y)
      for (std::size_t x = 0; x < s.width; ++x)
        padded[(y + pad) * pw + x + pad] = image[(c * s.height + y) * s.width + x];
    for (std::size_t y = 0; y < s.height; ++y)
      for (std::size_t x = 0; x < s.width; ++x) {
        const std::size_t from_x = a.flip ? s.width - 1 - x : x;
        out[(c * s.height + y) * s.width + x] = padded[(y + a.dy) * pw + from_x + a.dx];
      }
  }
  return out;
}

const augment_spec kCropFlip{4, true};

}  // namespace

TEST_CASE("augment: every example is its reference crop-and-flip under its own draw") {
  const dataset original = images(64, 3, 6, 7);
  dataset batch = original;
  augment_batch(batch, kCropFlip, 42, 3, 17);
  std::size_t wrong = 0;
  for (std::size_t k = 0; k < batch.size; ++k) {
    const augment_draw a = draw_augment(kCropFlip, 42, 3, 17, k);
    CHECK(a.dx <= 8);
    CHECK(a.dy <= 8);
    const std::vector<float> want = reference(original.row(k), original.shape, 4, a);
    wrong += !std::equal(want.begin(), want.end(), batch.row(k).begin());
  }
  CHECK(wrong == 0);
  CHECK(batch.labels == original.labels);
}

TEST_CASE("augment: a crop shifts the content by its offset and fills zeros; a flip is an exact mirror") {
  const dataset d = images(1, 2, 4, 5);
  const auto at = [](std::span<const float> img, std::size_t c, std::size_t y, std::size_t x) {
    return img[(c * 4 + y) * 5 + x];
  };
  // Window at dx = p + 2, dy = p - 1 with p = 3: out[y][x] = in[y - 1][x + 2], zero outside.
  std::vector<float> img(d.features);
  augment_image(img, d.shape, 3, {5, 2, false});
  for (std::size_t c = 0; c < 2; ++c)
    for (std::size_t y = 0; y < 4; ++y)
      for (std::size_t x = 0; x < 5; ++x) {
        const float want = (y >= 1 && x + 2 < 5) ? at(d.features, c, y - 1, x + 2) : 0.0f;
        CHECK(at(img, c, y, x) == want);
      }
  // The opposite direction: out[y][x] = in[y + 2][x - 3].
  img = d.features;
  augment_image(img, d.shape, 3, {0, 5, false});
  for (std::size_t c = 0; c < 2; ++c)
    for (std::size_t y = 0; y < 4; ++y)
      for (std::size_t x = 0; x < 5; ++x) {
        const float want = (y + 2 < 4 && x >= 3) ? at(d.features, c, y + 2, x - 3) : 0.0f;
        CHECK(at(img, c, y, x) == want);
      }
  // The centred window with a flip mirrors every row.
  img = d.features;
  augment_image(img, d.shape, 3, {3, 3, true});
  for (std::size_t c = 0; c < 2; ++c)
    for (std::size_t y = 0; y < 4; ++y)
      for (std::size_t x = 0; x < 5; ++x) CHECK(at(img, c, y, x) == at(d.features, c, y, 4 - x));
  // Mirroring twice gives the image back bit for bit.
  augment_image(img, d.shape, 0, {0, 0, true});
  CHECK(img == d.features);
}

TEST_CASE("augment: deterministic in (seed, rank, round); another rank, round or seed draws differently") {
  const dataset original = images(16, 3, 8, 8);
  const auto run = [&](std::uint64_t seed, int rank, std::uint64_t round) {
    dataset b = original;
    augment_batch(b, kCropFlip, seed, rank, round);
    return b.features;
  };
  const std::vector<float> base = run(7, 1, 100);
  CHECK(base != original.features);
  CHECK(run(7, 1, 100) == base);
  CHECK(run(7, 2, 100) != base);
  CHECK(run(7, 1, 101) != base);
  CHECK(run(8, 1, 100) != base);
  // A draw depends on the example's position k only, not on the batch's size: the first four
  // examples augmented as a batch of their own come out as in the batch of sixteen.
  const std::vector<std::size_t> first4{0, 1, 2, 3};
  dataset small = original.subset(first4);
  augment_batch(small, kCropFlip, 7, 1, 100);
  CHECK(std::equal(small.features.begin(), small.features.end(), base.begin()));
  CHECK(draw_augment(kCropFlip, 7, 1, 100, 0) != draw_augment(kCropFlip, 7, 1, 100, 1));
}

TEST_CASE("augment: padding 0 and no flip leave any batch untouched; flip off never mirrors") {
  const dataset original = images(8, 3, 5, 5);
  dataset batch = original;
  augment_batch(batch, augment_spec{0, false}, 1, 0, 0);
  CHECK(batch.features == original.features);
  dataset flat;  // not an image data set: fine while the spec does nothing
  flat.size = 1;
  flat.dim = 3;
  flat.classes = 2;
  flat.features = {1, 2, 3};
  flat.labels = {0};
  augment_batch(flat, augment_spec{0, false}, 1, 0, 0);
  CHECK(flat.features == std::vector<float>{1, 2, 3});
  CHECK_THROWS_AS(augment_batch(flat, kCropFlip, 1, 0, 0), invariant_error);
  CHECK_THROWS_AS(augment_batch(batch, augment_spec{-1, false}, 1, 0, 0), invariant_error);
  for (std::size_t k = 0; k < 100; ++k) CHECK_FALSE(draw_augment(augment_spec{2, false}, 1, 0, 0, k).flip);
}

TEST_CASE("augment: flips are fair coins and crop offsets cover 0..2p uniformly" * doctest::test_suite("statistics")) {
  // Over n = 2000 examples the flip count is Binomial(2000, 1/2): the fraction has standard
  // deviation sqrt(0.25 / 2000) = 0.011, so ±0.05 is 4.5 standard deviations (a false failure has
  // probability below 1e-5; with a fixed seed the outcome is deterministic anyway).
  constexpr std::size_t n = 2000;
  std::size_t flips = 0;
  std::vector<std::size_t> dx_count(9, 0), dy_count(9, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const augment_draw a = draw_augment(kCropFlip, 2024, 5, 9, k);
    flips += a.flip;
    REQUIRE(a.dx <= 8);
    REQUIRE(a.dy <= 8);
    ++dx_count[a.dx];
    ++dy_count[a.dy];
  }
  const double fraction = static_cast<double>(flips) / n;
  CHECK(fraction > 0.45);
  CHECK(fraction < 0.55);
  // Each of the 9 offsets: Binomial(2000, 1/9), mean 222, sd 14; 222 ± 70 is 5 sd.
  for (std::size_t v = 0; v < 9; ++v) {
    CAPTURE(v);
    CHECK(dx_count[v] > 152);
    CHECK(dx_count[v] < 292);
    CHECK(dy_count[v] > 152);
    CHECK(dy_count[v] < 292);
  }
}
