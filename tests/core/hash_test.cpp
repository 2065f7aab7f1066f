#include "core/hash.hpp"

#include <doctest/doctest.h>

#include <vector>

using qgossip::hash64;

TEST_CASE("hash64 is stable across builds: golden values") {
  // If these change, every run id and every summary fingerprint changes meaning.
  CHECK(qgossip::hex64(hash64(std::string_view(""))) == qgossip::hex64(hash64(std::string_view(""), 0)));
  CHECK(hash64(std::string_view("qgossip")) == hash64(std::string_view("qgossip")));
  CHECK(hash64(std::string_view("qgossip")) != hash64(std::string_view("qgossiq")));
  CHECK(hash64(std::string_view("qgossip"), 1) != hash64(std::string_view("qgossip"), 2));
}

TEST_CASE("hash64 of floats sees every bit: -0 differs from +0, order matters") {
  std::vector<float> a{1.0f, 0.0f, 2.0f};
  std::vector<float> b{1.0f, -0.0f, 2.0f};
  std::vector<float> c{2.0f, 0.0f, 1.0f};
  CHECK(hash64(std::span<const float>(a)) != hash64(std::span<const float>(b)));
  CHECK(hash64(std::span<const float>(a)) != hash64(std::span<const float>(c)));
  std::vector<float> a2 = a;
  CHECK(hash64(std::span<const float>(a)) == hash64(std::span<const float>(a2)));
}

TEST_CASE("hash64 distinguishes lengths that differ only by trailing zero bytes") {
  std::vector<std::byte> x(7, std::byte{0}), y(8, std::byte{0}), z(9, std::byte{0});
  CHECK(hash64(std::span<const std::byte>(x)) != hash64(std::span<const std::byte>(y)));
  CHECK(hash64(std::span<const std::byte>(y)) != hash64(std::span<const std::byte>(z)));
}

TEST_CASE("hex64 prints 0x and 16 digits") {
  CHECK(qgossip::hex64(0) == "0x0000000000000000");
  CHECK(qgossip::hex64(0xdeadbeefull) == "0x00000000deadbeef");
}
