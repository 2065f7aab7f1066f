// Image data sets from .npy files, specified on arrays written here in every accepted layout and
// dtype (checked value by value, including the HWC -> CHW transposition) and on every file it must
// refuse, each with a message that starts with the file's path.
#include "node/data/npy_images.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/node/data/data_files.hpp"

using namespace qgossip;
using namespace qgossip::testing;

namespace {

// Writes DIR/train_images.npy and DIR/train_labels.npy.
void write_train(const temp_dir& dir, const std::string& images, const std::string& labels) {
  dir.write("train_images.npy", images);
  dir.write("train_labels.npy", labels);
}

const std::string kTwoLabels = npy_file("|u1", "(2,)", bytes_of<std::uint8_t>({1, 0}));

}  // namespace

TEST_CASE("npy images: uint8 (N, H, W) is one channel scaled by 1/255") {
  const temp_dir dir("npy_images");
  std::vector<std::uint8_t> pixels(2 * 3 * 5);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 9);
  pixels.back() = 255;
  write_train(dir, npy_file("|u1", "(2, 3, 5)", bytes_of(pixels)), kTwoLabels);
  const dataset d = load_npy_images(dir.str(), split::train);
  CHECK(d.size == 2);
  CHECK(d.dim == 15);
  CHECK(d.shape == image_shape{1, 3, 5});
  REQUIRE(d.features.size() == pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) CHECK(d.features[i] == static_cast<float>(pixels[i]) / 255.0f);
  CHECK(d.features.back() == 1.0f);
  CHECK(d.labels == std::vector<std::uint8_t>{1, 0});
  CHECK(d.classes == 2);
  check_consistent(d);
}

TEST_CASE("npy images: float32 (N, C, H, W) and float64 are taken as they are; test_* for the test split") {
  const temp_dir dir("npy_images");
  std::vector<float> values(2 * 3 * 2 * 4);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 3.0f;
  dir.write("test_images.npy", npy_file("<f4", "(2, 3, 2, 4)", bytes_of(values)));
  dir.write("test_labels.npy", npy_file("<i8", "(2,)", bytes_of<std::int64_t>({7, 2})));
  const dataset d = load_npy_images(dir.str(), split::test);
  CHECK(d.shape == image_shape{3, 2, 4});
  CHECK(d.dim == 24);
  CHECK(d.features == values);
  CHECK(d.labels == std::vector<std::uint8_t>{7, 2});
  CHECK(d.classes == 8);

  const std::vector<double> f8{0.1, -2.5, 1e-3, 4.0, 0.0, 1e30};
  write_train(dir, npy_file("<f8", "(2, 1, 3)", bytes_of(f8)), kTwoLabels);
  const dataset e = load_npy_images(dir.str(), split::train);
  CHECK(e.shape == image_shape{1, 1, 3});
  CHECK(e.features == std::vector<float>{0.1f, -2.5f, 1e-3f, 4.0f, 0.0f, 1e30f});
}

TEST_CASE("npy images: uint8 (N, H, W, C) is transposed to CHW value by value") {
  const temp_dir dir("npy_images");
  constexpr std::size_t n = 2, h = 5, w = 6, c = 3;
  const auto value = [](std::size_t i, std::size_t y, std::size_t x, std::size_t ch) {
    return static_cast<std::uint8_t>(i * 100 + y * 13 + x * 7 + ch * 50);
  };
  std::vector<std::uint8_t> hwc;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t y = 0; y < h; ++y)
      for (std::size_t x = 0; x < w; ++x)
        for (std::size_t ch = 0; ch < c; ++ch) hwc.push_back(value(i, y, x, ch));
  write_train(dir, npy_file("|u1", "(2, 5, 6, 3)", bytes_of(hwc)), kTwoLabels);
  const dataset d = load_npy_images(dir.str(), split::train);
  CHECK(d.shape == image_shape{3, 5, 6});
  REQUIRE(d.features.size() == hwc.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t ch = 0; ch < c; ++ch)
      for (std::size_t y = 0; y < h; ++y)
        for (std::size_t x = 0; x < w; ++x)
          wrong += d.row(i)[ch * h * w + y * w + x] != static_cast<float>(value(i, y, x, ch)) / 255.0f;
  CHECK(wrong == 0);
  // A second dimension of 1..4 means (N, C, H, W), even when the last would fit channels too.
  write_train(dir, npy_file("|u1", "(2, 4, 8, 3)", std::string(2 * 4 * 8 * 3, '\x10')), kTwoLabels);
  CHECK(load_npy_images(dir.str(), split::train).shape == image_shape{4, 8, 3});
}

TEST_CASE("npy images: every integer label dtype; classes = largest label + 1, at least 2") {
  const temp_dir dir("npy_images");
  const std::string images = npy_file("|u1", "(3, 5, 5)", std::string(75, '\x01'));
  const auto classes_with = [&](const std::string& labels) {
    write_train(dir, images, labels);
    const dataset d = load_npy_images(dir.str(), split::train);
    CHECK(d.labels.size() == 3);
    return d.classes;
  };
  CHECK(classes_with(npy_file("|u1", "(3,)", bytes_of<std::uint8_t>({0, 255, 3}))) == 256);
  CHECK(classes_with(npy_file("|i1", "(3,)", bytes_of<std::int8_t>({0, 127, 3}))) == 128);
  CHECK(classes_with(npy_file("<i2", "(3,)", bytes_of<std::int16_t>({0, 9, 3}))) == 10);
  CHECK(classes_with(npy_file("<u2", "(3,)", bytes_of<std::uint16_t>({5, 1, 3}))) == 6);
  CHECK(classes_with(npy_file("<i4", "(3,)", bytes_of<std::int32_t>({0, 1, 3}))) == 4);
  CHECK(classes_with(npy_file("<u4", "(3,)", bytes_of<std::uint32_t>({0, 0, 99}))) == 100);
  CHECK(classes_with(npy_file("<i8", "(3,)", bytes_of<std::int64_t>({0, 11, 3}))) == 12);
  CHECK(classes_with(npy_file("<u8", "(3,)", bytes_of<std::uint64_t>({0, 0, 0}))) == 2);
  write_train(dir, images, npy_file("<u2", "(3,)", bytes_of<std::uint16_t>({255, 1, 3})));
  CHECK(load_npy_images(dir.str(), split::train).labels == std::vector<std::uint8_t>{255, 1, 3});
}

TEST_CASE("npy images: refused files name the file and the fault") {
  const temp_dir dir("npy_images_errors");
  const std::string images_path = dir.file("train_images.npy");
  const std::string labels_path = dir.file("train_labels.npy");
  const std::string good_images = npy_file("|u1", "(2, 5, 5)", std::string(50, '\x02'));
  const auto error = [&] { return error_of([&] { (void)load_npy_images(dir.str(), split::train); }); };

  SUBCASE("missing files say what the directory must hold") {
    CHECK(starts_with(error(), images_path + ": cannot open: No such file or directory"));
    CHECK(contains(error(), "train_images.npy, train_labels.npy, test_images.npy and test_labels.npy"));
    dir.write("train_images.npy", good_images);
    CHECK(starts_with(error(), labels_path + ": cannot open: No such file or directory"));
  }
  SUBCASE("image dtypes other than uint8, float32, float64") {
    write_train(dir, npy_file("<i4", "(2, 5, 5)", std::string(200, '\0')), kTwoLabels);
    CHECK(error() == images_path + ": dtype '<i4' is not supported (expected a .npy file of '|u1', '<f4' or "
                                   "'<f8' values in C order)");
    write_train(dir, npy_file(">f4", "(2, 5, 5)", std::string(200, '\0')), kTwoLabels);
    CHECK(starts_with(error(), images_path + ": dtype '>f4' is not supported (big-endian)"));
  }
  SUBCASE("label dtypes other than integers") {
    write_train(dir, good_images, npy_file("<f4", "(2,)", bytes_of<float>({0, 1})));
    CHECK(error() == labels_path + ": dtype '<f4' is not supported (expected a .npy file of '|u1', '|i1', "
                                   "'<i2', '<u2', '<i4', '<u4', '<i8' or '<u8' values in C order)");
  }
  SUBCASE("image shapes of the wrong rank or layout, or with nothing in them") {
    write_train(dir, npy_file("|u1", "(2, 25)", std::string(50, '\0')), kTwoLabels);
    CHECK(error() == images_path + ": images of shape (2, 25) have rank 2, expected (N, H, W), (N, C, H, W) or "
                                   "(N, H, W, C)");
    write_train(dir, npy_file("|u1", "(2, 1, 5, 5, 1)", std::string(50, '\0')), kTwoLabels);
    CHECK(starts_with(error(), images_path + ": images of shape (2, 1, 5, 5, 1) have rank 5"));
    write_train(dir, npy_file("|u1", "(2, 8, 8, 5)", std::string(640, '\0')), kTwoLabels);
    CHECK(starts_with(error(), images_path + ": images of shape (2, 8, 8, 5) are neither (N, C, H, W)"));
    write_train(dir, npy_file("|u1", "(2, 8, 4, 3)", std::string(192, '\0')), kTwoLabels);  // W <= 4
    CHECK(starts_with(error(), images_path + ": images of shape (2, 8, 4, 3) are neither"));
    write_train(dir, npy_file("|u1", "(0, 5, 5)", ""), kTwoLabels);
    CHECK(error() == images_path + ": no images (shape (0, 5, 5))");
    write_train(dir, npy_file("|u1", "(2, 0, 5)", ""), kTwoLabels);
    CHECK(error() == images_path + ": images of shape (2, 0, 5) have a zero height or width");
  }
  SUBCASE("labels of the wrong rank or count") {
    write_train(dir, good_images, npy_file("|u1", "(2, 1)", bytes_of<std::uint8_t>({0, 1})));
    CHECK(error() == labels_path + ": labels of shape (2, 1), expected (N,)");
    write_train(dir, good_images, npy_file("|u1", "(3,)", bytes_of<std::uint8_t>({0, 1, 1})));
    CHECK(error() == labels_path + ": 3 labels but " + images_path + " has 2 images");
  }
  SUBCASE("labels outside 0..255") {
    write_train(dir, good_images, npy_file("<i2", "(2,)", bytes_of<std::int16_t>({0, -1})));
    CHECK(error() == labels_path + ": label -1 of example 1 is negative (labels must be in 0..255)");
    write_train(dir, good_images, npy_file("|i1", "(2,)", bytes_of<std::int8_t>({-128, 0})));
    CHECK(error() == labels_path + ": label -128 of example 0 is negative (labels must be in 0..255)");
    write_train(dir, good_images, npy_file("<i4", "(2,)", bytes_of<std::int32_t>({256, 0})));
    CHECK(error() == labels_path + ": label 256 of example 0 is too large (labels must be in 0..255)");
    write_train(dir, good_images, npy_file("<u8", "(2,)", bytes_of<std::uint64_t>({1, ~0ULL})));
    CHECK(error() == labels_path + ": label 18446744073709551615 of example 1 is too large (labels must be in "
                                   "0..255)");
  }
  SUBCASE("a header promising far more data than the file holds fails before allocating") {
    // 2^40 bytes of images in a file of a few hundred: an error, not an attempt to allocate 1 TiB.
    write_train(dir, npy_file("|u1", "(1099511627776, 1, 1)", std::string(64, '\0')), kTwoLabels);
    CHECK(starts_with(error(), images_path + ": truncated: shape (1099511627776, 1, 1) of '|u1' needs "
                                             "1099511627776 data bytes, the file has 64"));
    write_train(dir, good_images, npy_file("<i8", "(1099511627776,)", std::string(16, '\0')));
    CHECK(starts_with(error(), labels_path + ": truncated: shape (1099511627776,) of '<i8' needs 8796093022208"));
    // A shape whose byte count overflows 64 bits.
    write_train(dir, npy_file("<f8", "(4294967296, 4294967296, 1)", ""), kTwoLabels);
    CHECK(starts_with(error(), images_path + ": shape (4294967296, 4294967296, 1) is too large"));
  }
  SUBCASE("NaN, Inf and float64 beyond float32's range") {
    write_train(dir, npy_file("<f4", "(2, 1, 2)", bytes_of<float>({0, 1, NAN, 2})), kTwoLabels);
    CHECK(error() == images_path + ": element 2 is nan");
    write_train(dir, npy_file("<f8", "(2, 1, 2)", bytes_of<double>({0, 1, 2, -INFINITY})), kTwoLabels);
    CHECK(error() == images_path + ": element 3 is -inf");
    write_train(dir, npy_file("<f8", "(2, 1, 2)", bytes_of<double>({0, 1e39, 2, 3})), kTwoLabels);
    CHECK(error() == images_path + ": element 1 (1e+39) is outside float32's range");
  }
}
