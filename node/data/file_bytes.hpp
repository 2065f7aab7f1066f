#pragma once
// Reading a whole data file into memory in one go, for the readers of binary formats (CIFAR-10,
// .npy). The buffer is exactly the file's size: nothing is allocated from numbers inside the file.
#include <cstddef>
#include <string>
#include <vector>

namespace qgossip {

// The bytes of the regular file at path. Throws config_error whose message starts with the path:
//   "PATH: cannot open: <reason>"   (plus " — <missing_hint>" when the file does not exist and a
//                                    hint is given: what the directory should hold)
//   "PATH: not a regular file"
//   "PATH: cannot read: <reason>"
[[nodiscard]] std::vector<std::byte> read_file_bytes(const std::string& path,
                                                     const std::string& missing_hint = "");

}  // namespace qgossip
