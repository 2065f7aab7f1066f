// The .npy reader, specified by the files it must accept and the ones it must reject, each with a
// message naming the file and the fault. Fixtures are built here byte by byte the way NumPy's
// format.write_array lays them out (magic, version, little-endian header length, the dict padded
// with spaces and a final '\n' to a multiple of 64 bytes, then the data).
#include "node/data/npy.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

template <class T>
std::string data_of(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

// A .npy file with the given header dict text and data bytes; major version 1 uses a 2-byte header
// length, 2 and 3 a 4-byte one.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) s += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return s + header + data;
}

std::vector<float> parse(const std::string& file) {
  return parse_npy(std::as_bytes(std::span<const char>(file.data(), file.size())), "x.npy");
}

std::string error_of(const std::string& file) {
  try {
    (void)parse(file);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kF4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";

}  // namespace

TEST_CASE("npy: float32 vectors are read exactly, and the layout matches NumPy's") {
  const std::string file = npy(kF4, data_of<float>({1.5f, -2.0f, 3.25e-20f}));
  // What numpy.save writes for a 3-vector of float32: a 128-byte preamble, header length 118.
  CHECK(file.size() == 128 + 12);
  CHECK(file.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  CHECK(parse(file) == std::vector<float>{1.5f, -2.0f, 3.25e-20f});
  CHECK(has_npy_magic(std::as_bytes(std::span<const char>(file.data(), file.size()))));
}

TEST_CASE("npy: float64 is rounded to float32, any C-order shape is flattened, () is one value") {
  const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  CHECK(parse(npy(f8, data_of<double>({0.1, -1e30, 0.0, 7.0}))) ==
        std::vector<float>{0.1f, -1e30f, 0.0f, 7.0f});
  const std::string scalar = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
  CHECK(parse(npy(scalar, data_of<float>({42.0f}))) == std::vector<float>{42.0f});
  const std::string empty = "{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }";
  CHECK(parse(npy(empty, "")).empty());
  // Key order, quotes and spacing as other writers produce them; versions 2.0 and 3.0.
  const std::string other = "{\"shape\":(2,),\"fortran_order\":False,\"descr\":\"<f4\"}";
  CHECK(parse(npy(other, data_of<float>({1.0f, 2.0f}), 2)) == std::vector<float>{1.0f, 2.0f});
  CHECK(parse(npy(kF4, data_of<float>({1.0f, 2.0f, 3.0f}), 3)) == std::vector<float>{1.0f, 2.0f, 3.0f});
  // NaN and Inf pass through: the caller (the codec tool) decides.
  const std::vector<float> special = parse(npy(kF4, data_of<float>({NAN, INFINITY, -0.0f})));
  CHECK(std::isnan(special[0]));
  CHECK(special[1] == INFINITY);
  CHECK(std::signbit(special[2]));
}

TEST_CASE("npy: rejected files name the file and the fault") {
  const std::string good_data = data_of<float>({1.0f, 2.0f, 3.0f});
  SUBCASE("bad magic") {
    std::string file = npy(kF4, good_data);
    file[1] = 'n';
    CHECK(contains(error_of(file), "x.npy: bad magic"));
    CHECK(contains(error_of("PK\x03\x04 a zip file"), "x.npy: bad magic"));
    CHECK(contains(error_of(""), "x.npy: bad magic"));
  }
  SUBCASE("unsupported version") {
    std::string file = npy(kF4, good_data);
    file[6] = 4;
    CHECK(contains(error_of(file), "unsupported format version 4.0"));
  }
  SUBCASE("fortran order") {
    const std::string f = "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }";
    CHECK(contains(error_of(npy(f, good_data)), "x.npy: fortran_order is True"));
  }
  SUBCASE("truncated data, trailing data") {
    std::string file = npy(kF4, good_data);
    CHECK(contains(error_of(file.substr(0, file.size() - 1)),
                   "truncated: shape (3,) of '<f4' needs 12 data bytes, the file has 11"));
    CHECK(contains(error_of(file + "xxxx"),
                   "trailing bytes: shape (3,) of '<f4' needs 12 data bytes, the file has 16"));
  }
  SUBCASE("truncated header and preamble") {
    const std::string file = npy(kF4, good_data);
    CHECK(contains(error_of(file.substr(0, 100)), "truncated header: it says 118 bytes, the file has 90"));
    CHECK(contains(error_of(file.substr(0, 9)), "truncated before the header length"));
    CHECK(contains(error_of(file.substr(0, 7)), "truncated before the version"));
  }
  SUBCASE("dtypes other than little-endian float32/float64") {
    CHECK(contains(error_of(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", good_data)),
                   "dtype '>f4' is not supported (big-endian)"));
    CHECK(contains(error_of(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", good_data)),
                   "dtype '<i4' is not supported"));
    CHECK(contains(error_of(npy("{'descr': '<f2', 'fortran_order': False, 'shape': (6,), }", good_data)),
                   "dtype '<f2' is not supported"));
  }
  SUBCASE("malformed header dicts") {
    CHECK(contains(error_of(npy("{'descr': '<f4', 'shape': (3,), }", good_data)),
                   "the header has no 'fortran_order'"));
    CHECK(
        contains(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", good_data)),
                 "unknown key 'x'"));
    CHECK(contains(
        error_of(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", good_data)),
        "key 'descr' given twice"));
    CHECK(contains(error_of(npy("{'descr': '<f4', 'fortran_order': false, 'shape': (3,)}", good_data)),
                   "expected True or False"));
    CHECK(contains(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}", good_data)),
                   "expected a non-negative integer in the shape"));
    CHECK(contains(error_of(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk", good_data)),
                   "unexpected text after the header dict"));
    CHECK(contains(error_of(npy("{'descr: '<f4'", good_data)), "header at character"));
  }
  SUBCASE("a shape whose size overflows") {
    CHECK(contains(
        error_of(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "")),
        "is too large"));
  }
  SUBCASE("float64 beyond float32's range") {
    const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    CHECK(contains(error_of(npy(f8, data_of<double>({1.0, 1e300}))), "value 1 (1000"));
    CHECK(contains(error_of(npy(f8, data_of<double>({1.0, -1e39}))), "outside float32's range"));
  }
}

TEST_CASE("npy: read_npy reads a file and names a missing one") {
  const fs::path path = fs::temp_directory_path() / ("qgossip-npy-" + std::to_string(getpid()) + ".npy");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string file = npy(kF4, data_of<float>({1.0f, 2.0f, 3.0f}));
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
  }
  CHECK(read_npy(path.string()) == std::vector<float>{1.0f, 2.0f, 3.0f});
  fs::remove(path);
  try {
    (void)read_npy(path.string());
    FAIL("no error for a missing file");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) == path.string() + ": cannot open: No such file or directory");
  }
}

TEST_CASE("npy arrays: dtype, shape and raw bytes as stored, for every accepted dtype") {
  const auto bytes_of = [](const std::string& s) { return std::as_bytes(std::span<const char>(s.data(), s.size())); };
  const std::string i8 = data_of<std::int64_t>({1, -2, 3, 1LL << 40, 5, 6});
  const npy_array a =
      parse_npy_array(bytes_of(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", i8)), "a.npy");
  CHECK(a.descr == "<i8");
  CHECK(a.shape == std::vector<std::uint64_t>{2, 3});
  CHECK(a.item_size == 8);
  CHECK(a.count() == 6);
  CHECK(std::memcmp(a.data.data(), i8.data(), i8.size()) == 0);
  CHECK(a.data.size() == i8.size());

  const npy_array s =
      parse_npy_array(bytes_of(npy("{'descr': '|u1', 'fortran_order': False, 'shape': (), }", "\x07")), "s.npy");
  CHECK(s.count() == 1);
  CHECK(s.item_size == 1);
  CHECK(std::to_integer<int>(s.data[0]) == 7);

  for (const std::string_view descr : kNpyDescrs) {
    CAPTURE(descr);
    const std::size_t item = static_cast<std::size_t>(descr[2] - '0');
    const std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (3,), }";
    const npy_array x = parse_npy_array(bytes_of(npy(dict, std::string(3 * item, '\x01'))), "x.npy");
    CHECK(x.item_size == item);
    CHECK(x.data.size() == 3 * item);
  }
}

TEST_CASE("npy arrays: refused dtypes list what is accepted; sizes are checked before allocating") {
  const auto error = [](const std::string& file, std::span<const std::string_view> accepted = kNpyDescrs) {
    try {
      (void)parse_npy_array(std::as_bytes(std::span<const char>(file.data(), file.size())), "y.npy", accepted);
    } catch (const config_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'))) ==
        "y.npy: dtype '<c8' is not supported (expected a .npy file of '<f4', '<f8', '|u1', '|i1', '<i2', "
        "'<u2', '<i4', '<u4', '<i8' or '<u8' values in C order)");
  const std::string_view only_f4[] = {"<f4"};
  CHECK(error(npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')), only_f4) ==
        "y.npy: dtype '<i8' is not supported (expected a .npy file of '<f4' values in C order)");
  CHECK(contains(error(npy("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'))),
                 "dtype '>i4' is not supported (big-endian)"));
  // 2^40 float32 values claimed by a 140-byte file: an error naming the file, not an attempt to
  // allocate 4 TiB (std::bad_alloc would escape the CHECK and fail the test).
  const std::string huge = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", "abcd");
  CHECK(contains(error(huge), "y.npy: truncated: shape (1099511627776,) of '<f4' needs 4398046511104 data "
                              "bytes, the file has 4"));
  CHECK(contains(error_of(huge), "x.npy: truncated: shape (1099511627776,)"));
  CHECK(contains(error(npy("{'descr': '<u8', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }",
                           "")),
                 "y.npy: shape (65536, 65536, 65536, 65536) is too large"));
}

TEST_CASE("npy arrays: read_npy_array drops the preamble in place; a missing file gets the hint") {
  const fs::path path = fs::temp_directory_path() / ("qgossip-npy-array-" + std::to_string(getpid()) + ".npy");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string file = npy("{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }",
                                 data_of<std::uint16_t>({1, 500, 65535}));
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
  }
  const npy_array a = read_npy_array(path.string());
  CHECK(a.descr == "<u2");
  REQUIRE(a.data.size() == 6);
  std::uint16_t v[3];
  std::memcpy(v, a.data.data(), 6);
  CHECK(v[1] == 500);
  CHECK(v[2] == 65535);
  fs::remove(path);
  try {
    (void)read_npy_array(path.string(), kNpyDescrs, "put the arrays there");
    FAIL("no error for a missing file");
  } catch (const config_error& e) {
    CHECK(std::string(e.what()) == path.string() + ": cannot open: No such file or directory \u2014 put the arrays there");
  }
}
