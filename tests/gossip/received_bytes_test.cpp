// A received payload handed on by moving: a vector's bytes or an adopted buffer's, the same view
// after a move, nothing left behind in the moved-from value, and the owner let go on clear().
#include "gossip/received_bytes.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <utility>
#include <vector>

using namespace qgossip;

namespace {
std::vector<std::byte> some_bytes(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 13 + 1);
  return v;
}
}  // namespace

TEST_CASE("received bytes: a vector's bytes move without a copy and leave nothing behind") {
  const auto expected = some_bytes(1000);
  std::vector<std::byte> v = expected;
  const std::byte* at = v.data();
  received_bytes a(std::move(v));
  CHECK(a.data() == at);
  CHECK(a == expected);
  received_bytes b = std::move(a);
  CHECK(b.data() == at);  // the same bytes, not a copy
  CHECK(b == expected);
  CHECK(a.empty());  // NOLINT(bugprone-use-after-move): a moved-from value is empty
  CHECK(a.size() == 0);
  received_bytes c;
  c = std::move(b);
  CHECK(c.data() == at);
  CHECK(b.empty());  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("received bytes: an adopted buffer lives as long as its last holder") {
  auto owner = std::make_shared<std::vector<std::byte>>(some_bytes(64));
  const std::vector<std::byte> expected = *owner;
  received_bytes a(std::span<const std::byte>(*owner), owner);
  CHECK(a.data() == owner->data());
  CHECK(owner.use_count() == 2);
  received_bytes b = std::move(a);
  CHECK(owner.use_count() == 2);
  CHECK(b == expected);
  b.clear();
  CHECK(owner.use_count() == 1);
  CHECK(b.empty());
}

TEST_CASE("received bytes: assign copies into a vector of its own and lets go of an adopted buffer") {
  auto owner = std::make_shared<std::vector<std::byte>>(some_bytes(64));
  received_bytes a(std::span<const std::byte>(*owner), owner);
  const auto other = some_bytes(7);
  a.assign(other.begin(), other.end());
  CHECK(owner.use_count() == 1);
  CHECK(a.data() != other.data());
  CHECK(a == other);
  CHECK(!(a == std::span<const std::byte>(*owner)));
}
