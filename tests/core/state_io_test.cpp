// core/state_io: the field format, read back in order, and a reader that turns every malformed
// input into a state_error naming the context, the offset and the field (never a crash).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/state_io.hpp"

using namespace qgossip;

namespace {

std::vector<std::byte> sample_state() {
  state_writer w;
  w.put_u64("round", 42);
  w.put_i64("offset", -7);
  w.put_bool("flag", true);
  w.put_f64("nan", std::numeric_limits<double>::quiet_NaN());
  w.put_string("name", "dcd");
  const std::vector<float> x = {1.5f, -0.0f, std::numeric_limits<float>::infinity()};
  w.put_floats("x", x);
  const std::vector<double> d = {0.25, -3.0};
  w.put_doubles("d", d);
  const std::vector<std::uint64_t> u = {1, 2, 3};
  w.put_u64s("u", u);
  w.put_floats("empty", std::vector<float>{});
  return w.take();
}

struct sample_values {
  std::uint64_t round = 0;
  std::int64_t offset = 0;
  bool flag = false;
  double nan = 0;
  std::string name;
  std::vector<float> x = std::vector<float>(3);
  std::vector<double> d;
  std::vector<std::uint64_t> u;
  std::vector<float> empty;
};

// Reads sample_state() back (throws state_error on any fault).
sample_values read_sample(state_reader& r) {
  sample_values v;
  v.round = r.get_u64("round");
  v.offset = r.get_i64("offset");
  v.flag = r.get_bool("flag");
  v.nan = r.get_f64("nan");
  v.name = r.get_string("name");
  r.get_floats("x", v.x);
  v.d = r.get_doubles("d");
  v.u = r.get_u64s("u");
  v.empty = r.get_floats("empty");
  r.expect_end();
  return v;
}

std::string error_of(const std::vector<std::byte>& bytes, void (*read)(state_reader&)) {
  state_reader r(bytes, "file.bin: section 's'");
  try {
    read(r);
  } catch (const state_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("state_io: every field type reads back as written, bit for bit") {
  const std::vector<std::byte> bytes = sample_state();
  state_reader r(bytes, "test");
  const sample_values v = read_sample(r);
  CHECK(r.at_end());
  CHECK(v.round == 42);
  CHECK(v.offset == -7);
  CHECK(v.flag);
  CHECK(std::isnan(v.nan));
  CHECK(v.name == "dcd");
  CHECK(v.x[0] == 1.5f);
  CHECK(std::bit_cast<std::uint32_t>(v.x[1]) == 0x80000000u);  // -0.0f kept
  CHECK(std::isinf(v.x[2]));
  CHECK(v.d == std::vector<double>{0.25, -3.0});
  CHECK(v.u == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(v.empty.empty());
}

TEST_CASE("state_io: the encoding is little-endian with a name, type and length per field") {
  state_writer w;
  w.put_u64("ab", 0x0102030405060708ull);
  const std::vector<std::byte> expected = {
      std::byte{2},    std::byte{'a'},  std::byte{'b'},  std::byte{1},                      // name, type u64
      std::byte{8},    std::byte{0},    std::byte{0},    std::byte{0},    std::byte{0}, std::byte{0},
      std::byte{0},    std::byte{0},                                                        // length 8
      std::byte{0x08}, std::byte{0x07}, std::byte{0x06}, std::byte{0x05}, std::byte{0x04}, std::byte{0x03},
      std::byte{0x02}, std::byte{0x01}};
  CHECK(w.bytes() == expected);
}

TEST_CASE("state_io: a wrong name, type or count is an error naming the context and both sides") {
  const std::vector<std::byte> bytes = sample_state();
  const std::string wrong_name = error_of(bytes, [](state_reader& r) { (void)r.get_u64("iteration"); });
  CHECK(wrong_name.find("file.bin: section 's': at byte 0") != std::string::npos);
  CHECK(wrong_name.find("expected field 'iteration' (u64), found field 'round'") != std::string::npos);
  const std::string wrong_type = error_of(bytes, [](state_reader& r) { (void)r.get_f64("round"); });
  CHECK(wrong_type.find("found it as u64") != std::string::npos);
  const std::string wrong_count = error_of(bytes, [](state_reader& r) {
    (void)r.get_u64("round");
    (void)r.get_i64("offset");
    (void)r.get_bool("flag");
    (void)r.get_f64("nan");
    (void)r.get_string("name");
    std::vector<float> x(4);
    r.get_floats("x", x);
  });
  CHECK(wrong_count.find("field 'x' holds 3 floats, expected 4") != std::string::npos);
  const std::string mismatch = error_of(bytes, [](state_reader& r) { r.expect_u64("round", 41); });
  CHECK(mismatch.find("field 'round' is 42, expected 41") != std::string::npos);
  const std::string left_over = error_of(bytes, [](state_reader& r) {
    (void)r.get_u64("round");
    r.expect_end();
  });
  CHECK(left_over.find("bytes left over after the last field") != std::string::npos);
}

TEST_CASE("state_io: reading past the end is an error") {
  state_writer w;
  w.put_u64("a", 1);
  const std::vector<std::byte> bytes = w.take();
  state_reader r(bytes, "ctx");
  (void)r.get_u64("a");
  CHECK_THROWS_WITH_AS((void)r.get_u64("b"), doctest::Contains("found the end of the data"), state_error);
}

TEST_CASE("state_io: truncation at every byte offset is an error, never a crash or a short read") {
  const std::vector<std::byte> bytes = sample_state();
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    CAPTURE(size);
    const std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size));
    state_reader r(cut, "cut");
    CHECK_THROWS_AS((void)read_sample(r), state_error);
  }
}

TEST_CASE("state_io: a length that overruns the input or does not fit the element size is refused") {
  state_writer w;
  w.put_floats("x", std::vector<float>{1, 2});
  std::vector<std::byte> bytes = w.take();
  // The length field is at 1 + 1 + 1 = 3 (name length, "x", type).
  std::vector<std::byte> huge = bytes;
  for (int i = 0; i < 8; ++i) huge[3 + i] = std::byte{0xff};
  state_reader r1(huge, "ctx");
  CHECK_THROWS_WITH_AS((void)r1.get_floats("x"), doctest::Contains("are left"), state_error);
  std::vector<std::byte> odd = bytes;
  odd[3] = std::byte{7};
  odd.pop_back();
  state_reader r2(odd, "ctx");
  CHECK_THROWS_WITH_AS((void)r2.get_floats("x"), doctest::Contains("not a multiple of 4"), state_error);
  state_writer b;
  b.put_u64("flag", 2);
  const std::vector<std::byte> two = b.take();
  state_reader r3(two, "ctx");
  CHECK_THROWS_WITH_AS((void)r3.get_bool("flag"), doctest::Contains("expected 0 or 1"), state_error);
}
