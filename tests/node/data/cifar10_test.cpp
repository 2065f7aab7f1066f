// The CIFAR-10 binary reader, specified on small batch files written here: records of a label byte
// and 3072 pixel bytes (R, G, B planes of 32x32, row by row) with known values.
#include "node/data/cifar10.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/node/data/data_files.hpp"

using namespace qgossip;
using namespace qgossip::testing;

namespace {

// The pixel byte of channel c, row y, column x of the example with global index e.
std::uint8_t pixel(std::size_t e, std::size_t c, std::size_t y, std::size_t x) {
  return static_cast<std::uint8_t>((e * 7 + c * 85 + y * 3 + x * 5) % 256);
}

std::uint8_t label_of(std::size_t e) { return static_cast<std::uint8_t>((e * 3 + 1) % 10); }

// `count` records for the examples first, first+1, ...
std::string records(std::size_t first, std::size_t count) {
  std::string s;
  for (std::size_t e = first; e < first + count; ++e) {
    s += static_cast<char>(label_of(e));
    for (std::size_t c = 0; c < 3; ++c)
      for (std::size_t y = 0; y < 32; ++y)
        for (std::size_t x = 0; x < 32; ++x) s += static_cast<char>(pixel(e, c, y, x));
  }
  return s;
}

constexpr std::size_t kBatchRecords[5] = {2, 1, 3, 1, 2};  // 9 training examples in all
constexpr std::size_t kTrain = 9, kTest = 2;

// Writes the five training batches (examples 0..8 in order) and test_batch.bin (examples 100, 101).
void write_cifar(const temp_dir& dir) {
  std::size_t e = 0;
  for (int b = 0; b < 5; ++b) {
    dir.write("data_batch_" + std::to_string(b + 1) + ".bin", records(e, kBatchRecords[b]));
    e += kBatchRecords[b];
  }
  dir.write("test_batch.bin", records(100, kTest));
}

// Checks that example i of d holds the pixels and label of global example e.
void check_example(const dataset& d, std::size_t i, std::size_t e) {
  CAPTURE(i);
  CHECK(d.labels[i] == label_of(e));
  std::size_t wrong = 0;
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t y = 0; y < 32; ++y)
      for (std::size_t x = 0; x < 32; ++x)
        wrong += d.row(i)[c * 1024 + y * 32 + x] != static_cast<float>(pixel(e, c, y, x)) / 255.0f;
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("cifar10: the five training batches in order, then the test batch, as CHW in [0, 1]") {
  const temp_dir dir("cifar10");
  write_cifar(dir);
  const dataset train = load_cifar10(dir.str(), split::train);
  CHECK(train.size == kTrain);
  CHECK(train.dim == 3072);
  CHECK(train.classes == 10);
  CHECK(train.shape == image_shape{3, 32, 32});
  CHECK(train.features.size() == kTrain * 3072);
  for (std::size_t i = 0; i < kTrain; ++i) check_example(train, i, i);
  check_consistent(train);

  const dataset test = load_cifar10(dir.str(), split::test);
  REQUIRE(test.size == kTest);
  CHECK(test.shape == image_shape{3, 32, 32});
  for (std::size_t i = 0; i < kTest; ++i) check_example(test, i, 100 + i);
  // Byte 255 is exactly 1 and byte 0 exactly 0.
  dir.write("test_batch.bin", std::string(1, '\x09') + std::string(1536, '\xff') + std::string(1536, '\0'));
  const dataset extremes = load_cifar10(dir.str(), split::test);
  CHECK(extremes.features[0] == 1.0f);
  CHECK(extremes.features[3071] == 0.0f);
  CHECK(extremes.labels[0] == 9);
}

TEST_CASE("cifar10: faulty files are config_errors that start with the file's path") {
  const temp_dir dir("cifar10_errors");
  write_cifar(dir);
  const std::string batch3 = dir.file("data_batch_3.bin");
  const auto train_error = [&] { return error_of([&] { (void)load_cifar10(dir.str(), split::train); }); };

  SUBCASE("a missing file says what the directory must hold") {
    std::filesystem::remove(batch3);
    const std::string e = train_error();
    CHECK(starts_with(e, batch3 + ": cannot open: No such file or directory"));
    CHECK(contains(e, "data_batch_1.bin..data_batch_5.bin and test_batch.bin"));
    CHECK(contains(e, "cifar-10-batches-bin/"));
    const std::string test_path = dir.file("test_batch.bin");
    std::filesystem::remove(test_path);
    CHECK(starts_with(error_of([&] { (void)load_cifar10(dir.str(), split::test); }), test_path + ": cannot open"));
  }
  SUBCASE("a directory in place of a file cannot be read") {
    std::filesystem::remove(batch3);
    std::filesystem::create_directory(batch3);
    CHECK(train_error() == batch3 + ": not a regular file");
  }
  SUBCASE("an empty file") {
    dir.write("data_batch_3.bin", "");
    CHECK(starts_with(train_error(), batch3 + ": empty file"));
  }
  SUBCASE("a size that is not a whole number of records") {
    dir.write("data_batch_3.bin", records(0, 2) + "12345");
    CHECK(starts_with(train_error(), batch3 + ": size 6151 bytes is not a multiple of 3073"));
    dir.write("data_batch_3.bin", records(0, 1).substr(0, 3072));
    CHECK(starts_with(train_error(), batch3 + ": size 3072 bytes is not a multiple of 3073"));
  }
  SUBCASE("a label above 9 names its record") {
    std::string bad = records(0, 3);
    bad[2 * 3073] = 10;
    dir.write("data_batch_3.bin", bad);
    CHECK(train_error() == batch3 + ": record 2 has label 10, expected 0..9");
    bad[2 * 3073] = static_cast<char>(255);
    dir.write("data_batch_3.bin", bad);
    CHECK(train_error() == batch3 + ": record 2 has label 255, expected 0..9");
  }
}
