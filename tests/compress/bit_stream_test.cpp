#include "algorithms/compress/bit_stream.hpp"

#include <doctest/doctest.h>

#include <random>

using namespace qgossip;

TEST_CASE("bit streams round-trip values of every width, MSB first, LSB-first bytes") {
  std::vector<std::byte> out{std::byte{0xAA}};  // a prefix the stream must not touch
  bit_stream_writer w(out);
  w.put_bits(0b101, 3);
  w.put_bit(true);
  CHECK(w.bits() == 4);
  CHECK(out.size() == 2);
  CHECK(out[0] == std::byte{0xAA});
  // bits in order 1,0,1,1 -> byte bits 0..3 = 1,0,1,1 -> 0b1101
  CHECK(out[1] == std::byte{0x0D});

  std::mt19937_64 rng(5);
  std::vector<std::pair<std::uint64_t, unsigned>> items;
  std::vector<std::byte> buf;
  bit_stream_writer w2(buf);
  for (int i = 0; i < 2000; ++i) {
    unsigned n = static_cast<unsigned>(rng() % 65);
    std::uint64_t v = n == 64 ? rng() : (rng() & ((std::uint64_t{1} << n) - 1));
    items.emplace_back(v, n);
    w2.put_bits(v, n);
  }
  bit_stream_reader r(buf);
  for (auto [v, n] : items) {
    std::uint64_t got = 0;
    REQUIRE(r.get_bits(n, got));
    CHECK(got == v);
  }
  CHECK(r.at_padding());
}

TEST_CASE("a bit stream reader stops at the end instead of reading past it") {
  std::vector<std::byte> one{std::byte{0xFF}};
  bit_stream_reader r(one);
  std::uint64_t v = 0;
  CHECK(r.get_bits(5, v));
  CHECK(v == 31);
  CHECK_FALSE(r.get_bits(4, v));  // only 3 left
  CHECK(r.bits_left() == 3);
  bool b = false;
  CHECK(r.get_bit(b));
  CHECK(r.get_bits(2, v));
  CHECK_FALSE(r.get_bit(b));
  bit_stream_reader empty(std::span<const std::byte>{});
  CHECK_FALSE(empty.get_bit(b));
  CHECK(empty.at_padding());
}
