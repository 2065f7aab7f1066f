// Dense LSB-first bit packing: the layout (golden bytes), round trips for every width with the stream
// cut at arbitrary points, padding detection, and bounds enforcement.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/errors.hpp"
#include "kernels/cpu/bitpack.hpp"

using namespace qgossip::kernels;

namespace {

std::vector<std::byte> bytes(std::initializer_list<unsigned> list) {
  std::vector<std::byte> b;
  for (unsigned x : list) b.push_back(static_cast<std::byte>(x));
  return b;
}

std::vector<std::byte> pack(const std::vector<std::uint16_t>& codes, unsigned bits) {
  std::vector<std::byte> out(packed_size(codes.size(), bits));
  pack_bits(codes, bits, out);
  return out;
}

}  // namespace

TEST_CASE("layout: code k at bits [k*b, (k+1)*b), LSB first, zero-padded") {
  CHECK(pack({1, 2, 3, 4}, 4) == bytes({0x21, 0x43}));
  CHECK(pack({1, 2, 3}, 4) == bytes({0x21, 0x03}));
  CHECK(pack({5, 3, 7}, 3) == bytes({0xDD, 0x01}));  // 101 | 011 << 3 | 111 << 6
  CHECK(pack({0xAB, 0x01}, 8) == bytes({0xAB, 0x01}));
  CHECK(pack({0xABC, 0x123}, 12) == bytes({0xBC, 0x3A, 0x12}));
  CHECK(pack({1, 0, 1}, 2) == bytes({0x11}));
  CHECK(pack({0xFFFF}, 16) == bytes({0xFF, 0xFF}));
  CHECK(pack({}, 5).empty());
}

TEST_CASE("round trip for every width, streamed in pieces") {
  std::mt19937 gen(2024);
  for (unsigned bits = 1; bits <= kMaxCodeBits; ++bits) {
    CAPTURE(bits);
    for (std::size_t count : {0u, 1u, 2u, 3u, 7u, 8u, 9u, 31u, 100u, 1001u}) {
      CAPTURE(count);
      std::uniform_int_distribution<unsigned> code(0, (1u << bits) - 1);
      std::vector<std::uint16_t> codes(count);
      for (auto& c : codes) c = static_cast<std::uint16_t>(code(gen));
      const std::vector<std::byte> whole = pack(codes, bits);

      // The same stream written in random pieces, through the 8-bit API where it fits.
      std::vector<std::byte> pieces(whole.size());
      bit_writer w(pieces);
      for (std::size_t at = 0; at < count;) {
        const std::size_t len = std::min<std::size_t>(count - at, 1 + gen() % 37);
        if (bits <= 8) {
          std::vector<std::uint8_t> narrow(codes.begin() + at, codes.begin() + at + len);
          w.put(narrow, bits);
        } else {
          w.put(std::span<const std::uint16_t>(codes.data() + at, len), bits);
        }
        at += len;
      }
      CHECK(w.finish() == whole.size());
      CHECK(pieces == whole);

      // Read back in different pieces.
      bit_reader r(whole);
      std::vector<std::uint16_t> back(count);
      for (std::size_t at = 0; at < count;) {
        const std::size_t len = std::min<std::size_t>(count - at, 1 + gen() % 41);
        if (bits <= 8) {
          std::vector<std::uint8_t> narrow(len);
          r.get(narrow, bits);
          std::copy(narrow.begin(), narrow.end(), back.begin() + at);
        } else {
          r.get(std::span<std::uint16_t>(back.data() + at, len), bits);
        }
        at += len;
      }
      CHECK(back == codes);
      CHECK(r.bit_position() == count * bits);
      CHECK(r.rest_is_zero());
    }
  }
}

// The 8-bit API's whole-group paths (eight codes of b < 8 bits spread to, or gathered from, b bytes
// at once; with AVX2, 32 codes at once for b <= 3 from 64 codes on) against the 16-bit API's
// code-by-code accumulator, over runs long enough to use them end to end, up to the last bytes of
// the stream, where the reader falls back.
TEST_CASE("whole groups of narrow codes: the same bytes and codes as the code-by-code path") {
  std::mt19937 gen(7);
  for (unsigned bits = 1; bits < 8; ++bits) {
    CAPTURE(bits);
    for (std::size_t count : {8u, 16u, 64u, 1024u, 1031u}) {
      CAPTURE(count);
      std::uniform_int_distribution<unsigned> code(0, (1u << bits) - 1);
      std::vector<std::uint16_t> wide(count);
      for (auto& c : wide) c = static_cast<std::uint16_t>(code(gen));
      const std::vector<std::uint8_t> narrow(wide.begin(), wide.end());
      const std::vector<std::byte> whole = pack(wide, bits);
      std::vector<std::byte> fast(whole.size());
      bit_writer w(fast);
      w.put(narrow, bits);
      w.finish();
      CHECK(fast == whole);
      // Whole, and after a first group read alone (the rest starts b bytes in, still on a byte).
      for (std::size_t head : {std::size_t{0}, std::size_t{8}}) {
        CAPTURE(head);
        std::vector<std::uint8_t> back(count);
        bit_reader r(whole);
        if (head > 0) r.get(std::span(back).first(head), bits);
        r.get(std::span(back).subspan(head), bits);
        CHECK(back == narrow);
      }
    }
  }
}

TEST_CASE("rest_is_zero sees any set padding bit") {
  std::vector<std::byte> b = pack({5, 3, 7}, 3);  // 9 bits used: 7 padding bits in byte 1
  for (int bit = 1; bit < 8; ++bit) {
    std::vector<std::byte> flipped = b;
    flipped[1] ^= static_cast<std::byte>(1u << bit);
    bit_reader r(flipped);
    std::vector<std::uint8_t> codes(3);
    r.get(codes, 3);
    CHECK_FALSE(r.rest_is_zero());
  }
  std::vector<std::byte> longer = b;
  longer.push_back(std::byte{0});
  longer.push_back(std::byte{0x10});
  bit_reader r(longer);
  std::vector<std::uint8_t> codes(3);
  r.get(codes, 3);
  CHECK_FALSE(r.rest_is_zero());
}

TEST_CASE("writer and reader refuse to leave their buffers") {
  std::vector<std::byte> small(2);
  bit_writer w(small);
  const std::vector<std::uint8_t> five(5, 1);
  CHECK_THROWS_AS(w.put(five, 4), qgossip::invariant_error);  // 20 bits > 16
  const std::vector<std::uint8_t> four(4, 1);
  w.put(four, 4);
  CHECK(w.finish() == 2);

  bit_reader r(small);
  std::vector<std::uint8_t> out(3);
  CHECK_THROWS_AS(r.get(out, 6), qgossip::invariant_error);  // 18 bits > 16
  std::vector<std::uint8_t> wide(2);
  CHECK_THROWS_AS(r.get(wide, 9), qgossip::invariant_error);  // 9-bit codes need uint16
}
