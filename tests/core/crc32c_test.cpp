#include "core/crc32c.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string_view>
#include <vector>

using namespace qgossip;

namespace {

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

// The definition, one bit at a time: the third, independent opinion both fast paths must match.
std::uint32_t crc32c_bitwise(std::span<const std::byte> data) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::byte b : data) {
    c ^= std::to_integer<std::uint32_t>(b);
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? 0x82F63B78u : 0u);
  }
  return ~c;
}

std::vector<std::byte> filled(std::size_t n, int (*f)(std::size_t)) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::byte(static_cast<unsigned char>(f(i)));
  return v;
}

}  // namespace

TEST_CASE("crc32c: standard check value and RFC 3720 (iSCSI) test vectors") {
  const auto zeros = filled(32, [](std::size_t) { return 0; });
  const auto ones = filled(32, [](std::size_t) { return 0xFF; });
  const auto up = filled(32, [](std::size_t i) { return static_cast<int>(i); });
  const auto down = filled(32, [](std::size_t i) { return static_cast<int>(31 - i); });
  using fn = std::uint32_t (*)(std::span<const std::byte>, std::uint32_t);
  std::vector<std::pair<const char*, fn>> impls = {{"dispatch", &crc32c}, {"portable", &crc32c_portable}};
  if (crc32c_hardware_available()) impls.emplace_back("hardware", &crc32c_hardware);
  for (auto [name, f] : impls) {
    CAPTURE(name);
    CHECK(f(bytes("123456789"), 0) == 0xE3069283u);
    CHECK(f({}, 0) == 0u);
    CHECK(f(zeros, 0) == 0x8A9136AAu);
    CHECK(f(ones, 0) == 0x62A8AB43u);
    CHECK(f(up, 0) == 0x46DD794Eu);
    CHECK(f(down, 0) == 0x113FDB5Cu);
  }
}

TEST_CASE("crc32c: this x86-64-v3 build uses the SSE4.2 instruction") {
#if defined(__SSE4_2__)
  CHECK(crc32c_hardware_available());
#else
  MESSAGE("built without SSE4.2: only the portable path is tested");
#endif
}

TEST_CASE("crc32c: continuing a checksum equals checksumming the concatenation") {
  const std::string_view text = "the quick brown fox jumps over the lazy dog";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    CAPTURE(cut);
    CHECK(crc32c(bytes(text.substr(cut)), crc32c(bytes(text.substr(0, cut)))) == crc32c(bytes(text)));
    CHECK(crc32c_portable(bytes(text.substr(cut)), crc32c_portable(bytes(text.substr(0, cut)))) ==
          crc32c_portable(bytes(text)));
  }
}

TEST_CASE("crc32c: portable, hardware and bitwise agree on random buffers at every alignment") {
  std::mt19937_64 rng(20261122);
  std::vector<std::byte> buf(4096 + 16);
  for (auto& b : buf) b = std::byte(static_cast<unsigned char>(rng()));
  // Lengths 0..300 cover every tail length around the 8-byte main loop; offsets 0..7 every alignment.
  for (std::size_t len = 0; len <= 300; ++len) {
    const std::size_t off = rng() % 8;
    std::span<const std::byte> s(buf.data() + off, len);
    const std::uint32_t expect = crc32c_bitwise(s);
    CAPTURE(len);
    CAPTURE(off);
    REQUIRE(crc32c_portable(s) == expect);
    if (crc32c_hardware_available()) REQUIRE(crc32c_hardware(s) == expect);
  }
  std::span<const std::byte> big(buf.data() + 3, 4096);
  CHECK(crc32c_portable(big) == crc32c_bitwise(big));
  if (crc32c_hardware_available()) CHECK(crc32c_hardware(big) == crc32c_portable(big));
}
