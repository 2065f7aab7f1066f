#include "node/data/cifar10.hpp"

#include <vector>

#include "core/errors.hpp"
#include "node/data/file_bytes.hpp"

namespace qgossip {
namespace {

constexpr const char* kMissingHint =
    "the directory must hold the CIFAR-10 binary version: data_batch_1.bin..data_batch_5.bin and "
    "test_batch.bin (e.g. cifar-10-batches-bin/ from cifar-10-binary.tar.gz)";

// The bytes of one batch file, checked to be a positive whole number of records with labels 0..9.
std::vector<std::byte> read_batch(const std::string& path) {
  std::vector<std::byte> bytes = read_file_bytes(path, kMissingHint);
  if (bytes.empty()) {
    throw config_error(path, 0, 0, "empty file (expected CIFAR-10 records of 3073 bytes: a label byte "
                                   "and 3072 pixel bytes)");
  }
  if (bytes.size() % kCifar10RecordBytes != 0) {
    throw config_error(path, 0, 0, "size " + std::to_string(bytes.size()) +
                                       " bytes is not a multiple of 3073 (a CIFAR-10 record: 1 label "
                                       "byte and 3072 pixel bytes)");
  }
  for (std::size_t r = 0; r < bytes.size() / kCifar10RecordBytes; ++r) {
    const auto label = std::to_integer<unsigned>(bytes[r * kCifar10RecordBytes]);
    if (label >= kCifar10Classes) {
      throw config_error(path, 0, 0, "record " + std::to_string(r) + " has label " + std::to_string(label) +
                                         ", expected 0..9");
    }
  }
  return bytes;
}

}  // namespace

std::vector<std::string> cifar10_files(split which) {
  if (which == split::test) return {"test_batch.bin"};
  std::vector<std::string> files;
  for (int b = 1; b <= 5; ++b) files.push_back("data_batch_" + std::to_string(b) + ".bin");
  return files;
}

dataset load_cifar10(const std::string& dir, split which) {
  // Read (and check) every file first, so that the features are allocated once at their final size.
  std::vector<std::vector<std::byte>> batches;
  std::size_t records = 0;
  for (const std::string& name : cifar10_files(which)) {
    batches.push_back(read_batch(dir + "/" + name));
    records += batches.back().size() / kCifar10RecordBytes;
  }
  dataset d;
  d.size = records;
  d.dim = kCifar10Pixels;
  d.classes = kCifar10Classes;
  d.shape = {3, kCifar10Side, kCifar10Side};
  d.features.resize(records * kCifar10Pixels);
  d.labels.resize(records);
  std::size_t i = 0;
  for (const std::vector<std::byte>& batch : batches) {
    for (std::size_t r = 0; r < batch.size() / kCifar10RecordBytes; ++r, ++i) {
      const std::byte* record = batch.data() + r * kCifar10RecordBytes;
      d.labels[i] = std::to_integer<std::uint8_t>(record[0]);
      float* row = d.features.data() + i * kCifar10Pixels;
      for (std::size_t p = 0; p < kCifar10Pixels; ++p) {
        row[p] = static_cast<float>(std::to_integer<std::uint8_t>(record[1 + p])) / 255.0f;
      }
    }
  }
  return d;
}

}  // namespace qgossip
