#pragma once
// A reader for the binary version of CIFAR-10 (cifar-10-binary.tar.gz from
// https://www.cs.toronto.edu/~kriz/cifar.html, which unpacks to cifar-10-batches-bin/).
// Each file is a sequence of 3073-byte records: one label byte (0..9), then 1024 red, 1024 green
// and 1024 blue bytes, each plane a 32x32 image row by row. That is channel-major (CHW) order
// already, so example i's features are its 3072 pixel bytes / 255 in file order.
//
// Train is data_batch_1.bin .. data_batch_5.bin concatenated in that order, test is test_batch.bin.
// The distribution's files hold 10000 records each; any positive whole number of records is read.
// Everything wrong with a file (missing, unreadable, empty, a size that is not a whole number of
// records, a label above 9) is a config_error whose message starts with the file's path.
#include <cstddef>
#include <string>
#include <vector>

#include "node/data/dataset.hpp"

namespace qgossip {

inline constexpr std::size_t kCifar10Side = 32;
inline constexpr std::size_t kCifar10Pixels = 3 * kCifar10Side * kCifar10Side;  // 3072
inline constexpr std::size_t kCifar10RecordBytes = 1 + kCifar10Pixels;          // 3073
inline constexpr std::size_t kCifar10Classes = 10;

// CIFAR-10 from `dir` (the directory holding the .bin files): shape {3, 32, 32}, 3072 features in
// [0, 1], 10 classes.
[[nodiscard]] dataset load_cifar10(const std::string& dir, split which);
// The files load_cifar10 reads for a split, by name: data_batch_1.bin..data_batch_5.bin, or test_batch.bin.
[[nodiscard]] std::vector<std::string> cifar10_files(split which);

}  // namespace qgossip
