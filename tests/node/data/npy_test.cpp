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
