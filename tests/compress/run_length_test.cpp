// The run-length coding of MCGQ §3.4: the paper's 86-bit example bit for bit, exact round trips, the
// size formulas, and a decoder that accepts only canonical encodings (one corruption per case).
#include "algorithms/compress/run_length.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

using namespace qgossip;

namespace {

std::vector<std::byte> encode(const std::vector<std::int32_t>& q, std::size_t* bits = nullptr) {
  std::vector<std::byte> out;
  bit_stream_writer w(out);
  run_length_encode(q, w);
  if (bits != nullptr) *bits = w.bits();
  return out;
}

status decode(std::span<const std::byte> in, std::vector<std::int32_t>& out) {
  bit_stream_reader r(in);
  const status st = run_length_decode(r, out);
  if (st.is_ok() && !r.at_padding()) return status::error(errc::corrupt, "trailing bits");
  return st;
}

// A stream built field by field: the test states the bits it means.
struct fields {
  std::vector<std::byte> bytes;
  bit_stream_writer w{bytes};
  fields& put(std::uint64_t value, unsigned n) {
    w.put_bits(value, n);
    return *this;
  }
};

std::string bit_string(const std::vector<std::byte>& bytes, std::size_t from, std::size_t to) {
  std::string s;
  for (std::size_t i = from; i < to; ++i)
    s += ((std::to_integer<unsigned>(bytes[i / 8]) >> (i % 8)) & 1u) ? '1' : '0';
  return s;
}

}  // namespace

TEST_CASE("the paper's example [2, -1, 0, 0, 0, 3, 0, 1] takes exactly 86 bits") {
  const std::vector<std::int32_t> q{2, -1, 0, 0, 0, 3, 0, 1};
  const run_length_widths w = run_length_widths_of(q);
  CHECK(w.value_bits == 3);  // B_q = 1 + floor(log2 3) + 1
  CHECK(w.run_bits == 2);    // B_RLE = floor(log2 3) + 1, c0 = 3
  std::size_t bits = 0;
  const std::vector<std::byte> bytes = encode(q, &bits);
  CHECK(bits == 86);
  CHECK(run_length_bits(q) == 86);
  CHECK(bytes.size() == 11);
  // B_q and B_RLE as 32-bit fields, MSB first.
  CHECK(bit_string(bytes, 0, 32) == std::string(30, '0') + "11");
  CHECK(bit_string(bytes, 32, 64) == std::string(30, '0') + "10");
  // 2 | -1 | first zero, run 3 | 3 | first zero, run 1 | 1  (sign-magnitude, sign first)
  CHECK(bit_string(bytes, 64, 86) ==
        "010"
        "101"
        "000"
        "11"
        "011"
        "000"
        "01"
        "001");
  CHECK(bit_string(bytes, 86, 88) == "00");  // padding
  std::vector<std::int32_t> back(q.size());
  REQUIRE(decode(bytes, back).is_ok());
  CHECK(back == q);
}

TEST_CASE("widths at the edges: all zero, no zero, empty, the largest magnitude") {
  CHECK(run_length_widths_of(std::vector<std::int32_t>{}).value_bits == 1);
  CHECK(run_length_widths_of(std::vector<std::int32_t>{}).run_bits == 0);
  CHECK(run_length_widths_of(std::vector<std::int32_t>(1000, 0)).value_bits == 1);
  CHECK(run_length_widths_of(std::vector<std::int32_t>(1000, 0)).run_bits == 10);  // 1000 < 1024
  CHECK(run_length_widths_of(std::vector<std::int32_t>{1, -1, 1}).run_bits == 0);
  CHECK(run_length_widths_of(std::vector<std::int32_t>{1, -1, 1}).value_bits == 2);
  CHECK(run_length_widths_of(std::vector<std::int32_t>{-4}).value_bits == 4);  // symmetric in the sign
  CHECK(run_length_widths_of(std::vector<std::int32_t>{kRunLengthMaxMagnitude}).value_bits == 32);
  CHECK(run_length_widths_of(std::vector<std::int32_t>{-kRunLengthMaxMagnitude}).value_bits == 32);
  // All zero: one first-zero code (1 bit) plus the run (10 bits).
  CHECK(run_length_bits(std::vector<std::int32_t>(1000, 0)) == 64 + 1 + 10);
  CHECK(run_length_bits(std::vector<std::int32_t>{}) == 64);
}

TEST_CASE("random integer vectors round-trip exactly, in run_length_bits() bits, within the worst case") {
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = gen() % 2000;
    const double zero_fraction = (trial % 5) * 0.24;  // 0 .. 0.96
    const unsigned width = 1 + static_cast<unsigned>(gen() % 31);
    std::vector<std::int32_t> q(n);
    std::uint64_t sum = 0;
    for (std::int32_t& x : q) {
      if (std::uniform_real_distribution<double>(0, 1)(gen) < zero_fraction) continue;
      const auto m = static_cast<std::int32_t>(1 + gen() % ((std::uint64_t{1} << width) - 1));
      x = (gen() & 1) ? -m : m;
      sum += static_cast<std::uint64_t>(m);
    }
    CAPTURE(n);
    CAPTURE(width);
    std::size_t bits = 0;
    const std::vector<std::byte> bytes = encode(q, &bits);
    CHECK(bits == run_length_bits(q));
    CHECK(bits <= run_length_max_bits(n, sum));
    std::vector<std::int32_t> back(n, 12345);
    REQUIRE(decode(bytes, back).is_ok());
    CHECK(back == q);
  }
}

TEST_CASE("worst case: alternating zeros and the largest value reaches the bound's order") {
  std::vector<std::int32_t> q(1001);
  for (std::size_t k = 1; k < q.size(); k += 2) q[k] = -kRunLengthMaxMagnitude;
  const std::uint64_t bits = run_length_bits(q);
  CHECK(bits == 64 + 1001 * 32 + 501 * 1);  // 501 runs of one zero, B_RLE = 1
  CHECK(bits <= run_length_max_bits(1001, 500 * std::uint64_t{0x7fffffff}));
  // Few samples bound the nonzeros: sum 3 over 1000 values is at most 3 values and 4 runs.
  CHECK(run_length_max_bits(1000, 3) == 64 + 7 * 3 + 4 * 10);
  std::vector<std::int32_t> sparse(1000, 0);
  sparse[1] = 1;
  sparse[500] = -1;
  sparse[998] = 1;
  CHECK(run_length_bits(sparse) <= run_length_max_bits(1000, 3));
  CHECK(run_length_max_bits(0, 0) == 64);
}

TEST_CASE("the decoder: truncated streams are corrupt at every length") {
  const std::vector<std::int32_t> q{5, 0, 0, -3, 0, 9, 9, 0, 0, 0, 0, 1};
  const std::vector<std::byte> bytes = encode(q);
  std::vector<std::int32_t> out(q.size());
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    CAPTURE(len);
    bit_stream_reader r{std::span<const std::byte>(bytes).first(len)};
    CHECK(run_length_decode(r, out).code() == errc::corrupt);
  }
}

TEST_CASE("the decoder: non-canonical streams are corrupt") {
  std::vector<std::int32_t> out(4);
  SUBCASE("reference: [3, 0, 0, -1] decodes") {
    fields f;
    f.put(3, 32).put(2, 32).put(0b011, 3).put(0b000, 3).put(2, 2).put(0b101, 3);
    REQUIRE(decode(f.bytes, out).is_ok());
    CHECK(out == std::vector<std::int32_t>{3, 0, 0, -1});
  }
  SUBCASE("B_q = 0") {
    fields f;
    f.put(0, 32).put(2, 32);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("B_q = 33") {
    fields f;
    f.put(33, 32).put(2, 32);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("B_q wider than the values need") {
    fields f;
    f.put(4, 32).put(2, 32).put(0b0011, 4).put(0b0000, 4).put(2, 2).put(0b1001, 4);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("B_RLE wider than the longest run needs") {
    fields f;
    f.put(3, 32).put(3, 32).put(0b011, 3).put(0b000, 3).put(2, 3).put(0b101, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("B_RLE wider than any run of 4 values") {
    fields f;
    f.put(3, 32).put(40, 32);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("negative zero") {
    fields f;
    f.put(3, 32).put(2, 32).put(0b011, 3).put(0b100, 3).put(2, 2).put(0b101, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("a run of length 0") {
    fields f;
    f.put(3, 32).put(2, 32).put(0b011, 3).put(0b000, 3).put(0, 2).put(0b101, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("a run past the end") {
    fields f;
    f.put(3, 32).put(2, 32).put(0b011, 3).put(0b000, 3).put(3, 2).put(0b101, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("two runs in a row (runs are maximal)") {
    fields f;
    f.put(3, 32).put(1, 32).put(0b011, 3).put(0b000, 3).put(1, 1).put(0b000, 3).put(1, 1).put(0b101, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
  SUBCASE("a zero with B_RLE = 0") {
    fields f;
    f.put(3, 32).put(0, 32).put(0b011, 3).put(0b000, 3);
    CHECK(decode(f.bytes, out).code() == errc::corrupt);
  }
}

TEST_CASE("the decoder: random streams are corrupt or decode to values that re-encode identically") {
  std::mt19937_64 gen(99);
  int decoded = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::size_t n = 1 + gen() % 8;
    // Plausible widths, so that some junk gets past the header.
    fields f;
    f.put(1 + gen() % 4, 32).put(gen() % 4, 32);
    const int extra = static_cast<int>(gen() % 40);
    for (int i = 0; i < extra; ++i) f.put(gen() & 1, 1);
    std::vector<std::int32_t> out(n);
    bit_stream_reader r(f.bytes);
    const status st = run_length_decode(r, out);
    if (!st.is_ok()) {
      CHECK(st.code() == errc::corrupt);
      continue;
    }
    ++decoded;
    // Canonical: what was accepted is exactly the encoding of what came out.
    std::vector<std::byte> again = encode(out);
    std::size_t used = r.bits_read();
    CHECK(run_length_bits(out) == used);
    CHECK(bit_string(again, 0, used) == bit_string(f.bytes, 0, used));
  }
  CHECK(decoded > 0);
}
