// Elias omega code: the standard table, lengths, round trips up to 2^64 - 1, and a decoder that
// fails cleanly on truncated, overlong and random input.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/compress/bit_stream.hpp"
#include "algorithms/compress/elias.hpp"
#include "core/errors.hpp"

using namespace qgossip;

namespace {

constexpr std::uint64_t kMax = ~std::uint64_t{0};

// The code of n as a string of '0'/'1', read back bit by bit from the stream.
std::string code_of(std::uint64_t n) {
  std::vector<std::byte> bytes;
  bit_stream_writer w(bytes);
  elias_omega_put(w, n);
  bit_stream_reader r(bytes);
  std::string s;
  for (std::size_t i = 0; i < w.bits(); ++i) {
    bool b = false;
    REQUIRE(r.get_bit(b));
    s += b ? '1' : '0';
  }
  return s;
}

std::vector<std::byte> bytes_of(const std::string& bits) {
  std::vector<std::byte> bytes;
  bit_stream_writer w(bytes);
  for (char c : bits) w.put_bit(c == '1');
  return bytes;
}

}  // namespace

TEST_CASE("known codes: the standard Elias omega table") {
  // Elias (1975), table of the omega code; groups separated here by spaces for reading.
  const std::pair<std::uint64_t, const char*> table[] = {
      {1, "0"},
      {2, "10 0"},
      {3, "11 0"},
      {4, "10 100 0"},
      {5, "10 101 0"},
      {7, "10 111 0"},
      {8, "11 1000 0"},
      {15, "11 1111 0"},
      {16, "10 100 10000 0"},
      {17, "10 100 10001 0"},
      {31, "10 100 11111 0"},
      {32, "10 101 100000 0"},
      {100, "10 110 1100100 0"},
      {1000, "11 1001 1111101000 0"},
      {65536, "10 100 10000 10000000000000000 0"},
  };
  for (const auto& [n, spaced] : table) {
    CAPTURE(n);
    std::string expected;
    for (const char* p = spaced; *p; ++p)
      if (*p != ' ') expected += *p;
    CHECK(code_of(n) == expected);
    CHECK(elias_omega_bits(n) == expected.size());
  }
}

TEST_CASE("extreme values: 2^63 and 2^64 - 1 take the maximum, 76 bits") {
  CHECK(code_of(std::uint64_t{1} << 63) == "10" "101" "111111" "1" + std::string(63, '0') + "0");
  CHECK(code_of(kMax) == "10" "101" "111111" + std::string(64, '1') + "0");
  CHECK(elias_omega_bits(kMax) == kEliasOmegaMaxBits);
  CHECK(elias_omega_bits(std::uint64_t{1} << 63) == kEliasOmegaMaxBits);
  // No code is longer: the length only grows with the bit width, and width 64 is the last.
  for (unsigned w = 1; w <= 64; ++w) {
    const std::uint64_t lo = std::uint64_t{1} << (w - 1);
    const std::uint64_t hi = w == 64 ? kMax : (std::uint64_t{1} << w) - 1;
    CHECK(elias_omega_bits(lo) == elias_omega_bits(hi));
    CHECK(elias_omega_bits(hi) <= kEliasOmegaMaxBits);
  }
}

TEST_CASE("zero has no code") {
  std::vector<std::byte> bytes;
  bit_stream_writer w(bytes);
  CHECK_THROWS_AS(elias_omega_put(w, 0), invariant_error);
  CHECK_THROWS_AS((void)elias_omega_bits(0), invariant_error);
}

TEST_CASE("round trip: a long stream of random, small and extreme values reads back exactly") {
  std::mt19937_64 gen(2024);
  std::vector<std::uint64_t> values = {1, 2, 3, 4, (std::uint64_t{1} << 63), kMax, kMax - 1};
  for (unsigned w = 1; w <= 64; ++w) {  // every bit width at its edges
    const std::uint64_t lo = std::uint64_t{1} << (w - 1);
    values.push_back(lo);
    values.push_back(lo + 1);
    values.push_back(w == 64 ? kMax : 2 * lo - 1);
  }
  for (int i = 0; i < 20000; ++i) values.push_back((gen() >> (gen() % 64)) | 1u);  // log-uniform-ish
  for (std::uint64_t n = 1; n <= 300; ++n) values.push_back(n);

  std::vector<std::byte> bytes;
  bit_stream_writer w(bytes);
  std::size_t expected_bits = 0;
  for (std::uint64_t n : values) {
    elias_omega_put(w, n);
    expected_bits += elias_omega_bits(n);
  }
  CHECK(w.bits() == expected_bits);
  bit_stream_reader r(bytes);
  for (std::uint64_t n : values) {
    std::uint64_t got = 0;
    REQUIRE(elias_omega_get(r, got));
    CHECK(got == n);
  }
  CHECK(r.bits_read() == expected_bits);
  CHECK(r.at_padding());
}

TEST_CASE("truncated codes return false") {
  // A byte-truncated stream: the reader runs out of bits before the code ends (the full code is
  // longer than the bytes kept), whatever the code.
  for (std::uint64_t n : {std::uint64_t{300}, std::uint64_t{1} << 40, std::uint64_t{1} << 63, kMax}) {
    std::vector<std::byte> bytes;
    bit_stream_writer w(bytes);
    elias_omega_put(w, n);
    for (std::size_t keep = 0; 8 * keep < w.bits(); ++keep) {
      CAPTURE(n);
      CAPTURE(keep);
      bit_stream_reader r(std::span<const std::byte>(bytes).first(keep));
      std::uint64_t got = 0;
      CHECK_FALSE(elias_omega_get(r, got));
    }
  }
  std::uint64_t got = 0;
  bit_stream_reader empty(std::span<const std::byte>{});
  CHECK_FALSE(elias_omega_get(empty, got));
  // Bit-exact truncation: "10 1" (the start of 4) as the whole stream, padded with 1s instead of 0s
  // so that padding cannot complete it.
  const std::vector<std::byte> ones_bytes = bytes_of("10111111");
  bit_stream_reader ones(ones_bytes);
  CHECK_FALSE(elias_omega_get(ones, got));
}

TEST_CASE("overlong codes: a group that would exceed 64 bits is rejected, not shifted out") {
  std::uint64_t got = 0;
  // 2^64 - 1 with its final 0 turned into a 1: the next group would need 2^64 bits.
  const std::vector<std::byte> max_bytes =
      bytes_of("10" "101" "111111" + std::string(64, '1') + "1" + std::string(100, '0'));
  bit_stream_reader after_max(max_bytes);
  CHECK_FALSE(elias_omega_get(after_max, got));
  // N = 64 ("10 110 1000000") followed by a 1: a 65-bit group.
  const std::vector<std::byte> bytes_64 = bytes_of("10" "110" "1000000" "1" + std::string(70, '1'));
  bit_stream_reader after_64(bytes_64);
  CHECK_FALSE(elias_omega_get(after_64, got));
  // N = 63 followed by a 1 is a legal 64-bit group: that is how 2^63 .. 2^64 - 1 are coded.
  const std::vector<std::byte> bytes_63 = bytes_of("10" "101" "111111" "1" + std::string(63, '0') + "0");
  bit_stream_reader after_63(bytes_63);
  REQUIRE(elias_omega_get(after_63, got));
  CHECK(got == (std::uint64_t{1} << 63));
  // All ones: groups 1 -> 3 -> 15 -> 65535 ... overflow, never a crash.
  const std::vector<std::byte> ones_200 = bytes_of(std::string(200, '1'));
  bit_stream_reader all_ones(ones_200);
  CHECK_FALSE(elias_omega_get(all_ones, got));
}

TEST_CASE("random input: every successful parse is the one canonical code of the value it returns") {
  // Every bit string that parses at all parses as exactly the code of the returned n: re-encoding
  // n gives back the bits consumed. Failures come only from running out or from over-64-bit groups.
  std::mt19937 gen(99);
  int ok = 0, failed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::byte> junk(1 + gen() % 12);
    for (std::byte& b : junk) b = static_cast<std::byte>(gen());
    bit_stream_reader r(junk);
    std::uint64_t n = 0;
    if (!elias_omega_get(r, n)) {
      ++failed;
      continue;
    }
    ++ok;
    REQUIRE(n >= 1);
    REQUIRE(r.bits_read() == elias_omega_bits(n));
    std::string consumed;
    bit_stream_reader again(junk);
    for (std::size_t i = 0; i < r.bits_read(); ++i) {
      bool b = false;
      REQUIRE(again.get_bit(b));
      consumed += b ? '1' : '0';
    }
    CHECK(consumed == code_of(n));
  }
  CHECK(ok > 1000);  // both outcomes are exercised
  CHECK(failed > 100);
}
