#pragma once
// A reader for NumPy's .npy files (format versions 1.0, 2.0 and 3.0): a 6-byte magic "\x93NUMPY",
// the version (2 bytes), the header length (2 bytes LE in 1.0, 4 bytes LE in 2.0/3.0), an ASCII
// Python dict literal
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1000,), }
// padded with spaces and ended by '\n', then the raw data.
//
// Two levels:
//  - read_npy_array / parse_npy_array: the array as stored (dtype, shape, raw little-endian bytes)
//    for the dtypes in `accepted` (by default every one in kNpyDescrs), any shape in C order.
//  - read_npy / parse_npy: a float vector, for the vectors `qgossip codec` measures. Accepted:
//    descr '<f4' (float32) or '<f8' (float64, rounded to float32), any shape in C order, flattened
//    (shape () holds one value).
// Anything else is a config_error that names the file and says what was wrong and what is
// expected: bad magic or version, a header that is not that dict (missing, repeated or unknown
// keys), big-endian or unaccepted dtypes, fortran_order True, a shape whose byte size overflows,
// a data section shorter or longer than the shape says (checked before anything is allocated for
// it), and for read_npy a float64 outside float32's range. NaN and Inf are read as they are (the
// caller decides what to do with them).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip {

// The little-endian dtypes read_npy_array knows, as NumPy writes them: float32, float64, and the
// 8- to 64-bit integers ('|' marks a one-byte type, which has no byte order).
inline constexpr std::string_view kNpyDescrs[] = {"<f4", "<f8", "|u1", "|i1", "<i2",
                                                  "<u2", "<i4", "<u4", "<i8", "<u8"};

// An array as stored: `data` holds count() elements of item_size bytes each, little-endian, C order.
struct npy_array {
  std::string descr;                 // one of kNpyDescrs
  std::vector<std::uint64_t> shape;  // () for a scalar
  std::size_t item_size = 0;         // bytes per element, given by descr
  std::vector<std::byte> data;       // exactly count() × item_size bytes

  // The number of elements: the product of shape (1 for a scalar).
  [[nodiscard]] std::uint64_t count() const;
};

// Reads the whole file at path; dtypes outside `accepted` are rejected (the message lists
// `accepted`). Throws config_error "PATH: ..." on anything listed above; for a missing file the
// message ends with missing_hint when one is given (what the directory should hold).
[[nodiscard]] npy_array read_npy_array(const std::string& path,
                                       std::span<const std::string_view> accepted = kNpyDescrs,
                                       const std::string& missing_hint = "");

// The same from bytes already in memory; `name` is the file name used in messages.
[[nodiscard]] npy_array parse_npy_array(std::span<const std::byte> bytes, const std::string& name,
                                        std::span<const std::string_view> accepted = kNpyDescrs);

// A description of a shape as NumPy prints it: "(3,)", "(2, 5)", "()".
[[nodiscard]] std::string npy_shape_text(const std::vector<std::uint64_t>& shape);

// Reads the whole file at path. Throws config_error "PATH: ..." on anything above.
[[nodiscard]] std::vector<float> read_npy(const std::string& path);

// The same from bytes already in memory; `name` is the file name used in messages.
[[nodiscard]] std::vector<float> parse_npy(std::span<const std::byte> bytes, const std::string& name);

// Writes `data` (count(shape) elements of descr's size, little-endian, C order) as a .npy file of
// format 1.0, as numpy.save does; atomically (a temporary file renamed into place), so that a reader
// never sees half a file. REQUIRES descr in kNpyDescrs and data.size() to match the shape. Throws
// config_error "PATH: ..." when the file cannot be written (a missing folder, a full disk).
void write_npy(const std::string& path, std::string_view descr, const std::vector<std::uint64_t>& shape,
               std::span<const std::byte> data);

// True iff bytes start with the .npy magic "\x93NUMPY" (how a reader tells .npy from raw floats).
[[nodiscard]] bool has_npy_magic(std::span<const std::byte> bytes);

}  // namespace qgossip
