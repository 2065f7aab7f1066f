// The IDX reader, specified by the files it must accept and the ones it must reject (each with a
// message naming the file and the fault). Fixtures are written to a fresh temporary directory.
#include "node/data/idx_reader.hpp"

#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using bytes = std::vector<std::uint8_t>;

void put_u32(bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}

bytes images_file(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, std::size_t payload,
                  std::uint32_t magic = 0x803) {
  bytes b;
  put_u32(b, magic);
  put_u32(b, count);
  put_u32(b, rows);
  put_u32(b, cols);
  for (std::size_t i = 0; i < payload; ++i) b.push_back(static_cast<std::uint8_t>(i * 37 % 256));
  return b;
}

bytes labels_file(std::uint32_t count, std::size_t payload, std::uint8_t label_mod = 10) {
  bytes b;
  put_u32(b, 0x801);
  put_u32(b, count);
  for (std::size_t i = 0; i < payload; ++i) b.push_back(static_cast<std::uint8_t>(i % label_mod));
  return b;
}

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("qgossip_idx_test_" + std::to_string(::getpid()));
  temp_dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() { fs::remove_all(path); }
  std::string write_gz(const std::string& name, const bytes& content) const {
    const std::string p = (path / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) == int(content.size()));
    REQUIRE(gzclose(f) == Z_OK);
    return p;
  }
  std::string write_plain(const std::string& name, const bytes& content) const {
    const std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    return p;
  }
};

// The message of the config_error that f throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("valid IDX images and labels are read as stored") {
  temp_dir dir;
  const bytes img = images_file(3, 2, 2, 12);
  const idx_images got = read_idx_images(dir.write_gz("img.gz", img));
  CHECK(got.count == 3);
  CHECK(got.rows == 2);
  CHECK(got.cols == 2);
  CHECK(got.pixels == bytes(img.begin() + 16, img.end()));
  CHECK(read_idx_labels(dir.write_gz("lab.gz", labels_file(3, 3))) == bytes{0, 1, 2});
  SUBCASE("an uncompressed file reads the same (zlib passes it through)") {
    CHECK(read_idx_images(dir.write_plain("img.raw", img)).pixels == got.pixels);
  }
}

TEST_CASE("a bad magic number is rejected with both values") {
  temp_dir dir;
  const std::string p = dir.write_gz("img.gz", images_file(3, 2, 2, 12, 0x801));
  const std::string e = error_of([&] { (void)read_idx_images(p); });
  CHECK(contains(e, p));
  CHECK(contains(e, "bad magic 0x00000801, expected 0x00000803"));
  // A labels file read as labels but holding images.
  const std::string q = dir.write_gz("lab.gz", images_file(3, 2, 2, 12));
  CHECK(contains(error_of([&] { (void)read_idx_labels(q); }), "bad magic 0x00000803, expected 0x00000801"));
}

TEST_CASE("a payload shorter than the header promises is truncated") {
  temp_dir dir;
  const std::string p = dir.write_gz("img.gz", images_file(3, 2, 2, 8));
  const std::string e = error_of([&] { (void)read_idx_images(p); });
  CHECK(contains(e, p));
  CHECK(contains(e, "(12 bytes) but the file holds only 8 bytes of data"));
  const std::string h = dir.write_gz("short_header.gz", bytes{0, 0, 8, 3, 0, 0});
  CHECK(contains(error_of([&] { (void)read_idx_images(h); }), "truncated header: 6 of 16 bytes"));
  const std::string empty = dir.write_gz("empty.gz", bytes{});
  CHECK(contains(error_of([&] { (void)read_idx_labels(empty); }), "no IDX header"));
}

TEST_CASE("a gzip stream cut short is reported as corrupt, not read as a short file") {
  temp_dir dir;
  const std::string p = dir.write_gz("img.gz", images_file(100, 8, 8, 6400));
  const auto full = fs::file_size(p);
  fs::resize_file(p, full / 2);
  const std::string e = error_of([&] { (void)read_idx_images(p); });
  CHECK(contains(e, p));
  CHECK(contains(e, "corrupt gzip stream"));
}

TEST_CASE("bytes beyond the promised count are rejected") {
  temp_dir dir;
  const std::string p = dir.write_gz("lab.gz", labels_file(3, 5));
  CHECK(contains(error_of([&] { (void)read_idx_labels(p); }), "trailing data after the 3 bytes"));
}

TEST_CASE("a zero dimension is rejected") {
  temp_dir dir;
  const std::string p = dir.write_gz("img.gz", images_file(3, 0, 2, 0));
  CHECK(contains(error_of([&] { (void)read_idx_images(p); }), "dimension 1 is 0"));
}

TEST_CASE("a file that does not exist names the path and the reason") {
  CHECK(error_of([] { (void)read_idx_labels("/nonexistent/qgossip/lab.gz"); }) ==
        "cannot open /nonexistent/qgossip/lab.gz: No such file or directory");
}

// Issue 31, item 7: every missing data.dir was told to install the Debian package, which installs
// only its own folder (/usr/share/datasets/fashion-mnist, where the package itself is the answer).
TEST_CASE("load_fashion_mnist: a missing data set in another folder names the folder and its files") {
  CHECK(error_of([] { (void)load_fashion_mnist("/nonexistent/fashion-mnist"); }) ==
        "cannot open /nonexistent/fashion-mnist/train-images-idx3-ubyte.gz: No such file or directory"
        " \u2014 data.dir is /nonexistent/fashion-mnist (read from the folder qgossip runs in when relative): it "
        "must hold {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz");
}

TEST_CASE("load_fashion_mnist checks shape, counts and labels across the two files") {
  temp_dir dir;
  const std::string images = dir.write_gz("t10k-images-idx3-ubyte.gz", images_file(3, 28, 28, 3 * 784));
  SUBCASE("consistent files load, scaled to [0, 1]") {
    dir.write_gz("t10k-labels-idx1-ubyte.gz", labels_file(3, 3));
    const dataset d = load_fashion_mnist(dir.path.string(), split::test);
    CHECK(d.size == 3);
    CHECK(d.dim == 784);
    CHECK(d.classes == 10);
    CHECK(d.labels == bytes{0, 1, 2});
    CHECK(d.features[1] == doctest::Approx(37.0 / 255.0));
    check_consistent(d);
  }
  SUBCASE("fewer labels than images") {
    dir.write_gz("t10k-labels-idx1-ubyte.gz", labels_file(2, 2));
    const std::string e = error_of([&] { (void)load_fashion_mnist(dir.path.string(), split::test); });
    CHECK(contains(e, "t10k-labels-idx1-ubyte.gz: 2 labels but " + images + " has 3 images"));
  }
  SUBCASE("a label outside 0..9") {
    dir.write_gz("t10k-images-idx3-ubyte.gz", images_file(12, 28, 28, 12 * 784));
    dir.write_gz("t10k-labels-idx1-ubyte.gz", labels_file(12, 12, 12));
    const std::string e = error_of([&] { (void)load_fashion_mnist(dir.path.string(), split::test); });
    CHECK(contains(e, "label 10 of example 10 is not in 0..9"));
  }
  SUBCASE("images that are not 28x28") {
    dir.write_gz("t10k-images-idx3-ubyte.gz", images_file(3, 2, 2, 12));
    dir.write_gz("t10k-labels-idx1-ubyte.gz", labels_file(3, 3));
    const std::string e = error_of([&] { (void)load_fashion_mnist(dir.path.string(), split::test); });
    CHECK(contains(e, "images are 2x2, Fashion-MNIST's are 28x28"));
  }
}

TEST_CASE("the installed Fashion-MNIST loads with the published sizes") {
  if (!fs::exists(kFashionMnistDir)) {
    MESSAGE("skipped: " << kFashionMnistDir << " not installed");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const dataset train = load_fashion_mnist(kFashionMnistDir, split::train);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("loaded 60000 training images in " << seconds << " s");
  CHECK(train.size == 60000);
  CHECK(train.dim == 784);
  CHECK(train.features.size() == 60000u * 784u);
  check_consistent(train);
  // Fashion-MNIST is balanced: 6000 training and 1000 test images per class.
  CHECK(label_histogram(train) == std::vector<std::size_t>(10, 6000));
  const dataset test = load_fashion_mnist(kFashionMnistDir, split::test);
  CHECK(test.size == 10000);
  CHECK(label_histogram(test) == std::vector<std::size_t>(10, 1000));
  float lo = 1, hi = 0;
  for (float v : test.features) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);
}
