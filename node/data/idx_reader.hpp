#pragma once
// Readers for the IDX format of MNIST / Fashion-MNIST (gzip-compressed or plain; zlib reads both):
// a big-endian header (magic 0x00000803 for u8 images with count, rows, cols; 0x00000801 for u8
// labels with count) followed by exactly count×rows×cols (resp. count) bytes.
// Everything wrong with a file (cannot open, bad magic, zero dimension, truncated, trailing bytes,
// corrupt gzip stream) is a config_error whose message names the file and what was wrong. Nothing
// is allocated from the header's numbers: the payload buffer grows with the bytes actually read,
// and a header claiming fewer bytes than arrive, or more (e.g. 2^40), says "FILE: header claims N
// images of RxC (B bytes) but the file holds only M bytes of data". Payloads above 16 GiB are refused.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "node/data/dataset.hpp"

namespace qgossip {

struct idx_images {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count × rows × cols, row-major, as stored
};

[[nodiscard]] idx_images read_idx_images(const std::string& path);
[[nodiscard]] std::vector<std::uint8_t> read_idx_labels(const std::string& path);

// Where the Debian package dataset-fashion-mnist installs the four files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
// True when dir is that folder, however written: only there is the package the answer to a
// missing file.
[[nodiscard]] bool is_packaged_fashion_mnist(const std::string& dir);
// The two files load_fashion_mnist reads for a split, by name: {images, labels}, e.g.
// train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz.
[[nodiscard]] std::array<std::string, 2> fashion_mnist_files(split which);

// Fashion-MNIST from `dir`: train (60000) or test (10000) split, 784 features scaled to [0, 1],
// 10 classes. Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz. Besides the per-file checks,
// requires 28×28 images, as many labels as images and every label < 10. A missing file's message
// says which Debian package provides it.
[[nodiscard]] dataset load_fashion_mnist(const std::string& dir = kFashionMnistDir,
                                         split which = split::train);

}  // namespace qgossip
