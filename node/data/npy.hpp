#pragma once
// A reader for NumPy's .npy files (format versions 1.0, 2.0 and 3.0), for the vectors `qgossip codec`
// measures: a 6-byte magic "\x93NUMPY", the version (2 bytes), the header length (2 bytes LE in 1.0,
// 4 bytes LE in 2.0/3.0), an ASCII Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }
// padded with spaces and ended by '\n', then the raw data.
//
// Accepted: descr '<f4' (float32) or '<f8' (float64, rounded to float32), any shape in C order,
// flattened (shape () holds one value). Anything else is a config_error that names the file and
// says what was wrong and what is expected: bad magic or version, a header that is not that dict
// (missing, repeated or unknown keys), big-endian or non-float dtypes, fortran_order True, a data
// section shorter or longer than the shape says, a float64 outside float32's range. NaN and Inf
// are read as they are (the caller decides what to do with them).
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace qgossip {

// Reads the whole file at path. Throws config_error "PATH: ..." on anything above.
[[nodiscard]] std::vector<float> read_npy(const std::string& path);

// The same from bytes already in memory; `name` is the file name used in messages.
[[nodiscard]] std::vector<float> parse_npy(std::span<const std::byte> bytes, const std::string& name);

// True iff bytes start with the .npy magic "\x93NUMPY" (how a reader tells .npy from raw floats).
[[nodiscard]] bool has_npy_magic(std::span<const std::byte> bytes);

}  // namespace qgossip
