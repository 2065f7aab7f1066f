// The transport's reusable send buffers: frames carry the bytes given, a buffer is busy while any
// frame over it lives, and a free one is reused instead of a new one.
#include "gossip/zmq/send_buffers.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <optional>
#include <vector>

using namespace qgossip;

namespace {
std::vector<std::byte> bytes_of(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + static_cast<std::size_t>(seed)) & 0xff);
  return v;
}
bool same(const zmq::message_t& m, const std::vector<std::byte>& v) {
  return m.size() == v.size() && std::memcmp(m.data(), v.data(), v.size()) == 0;
}
}  // namespace

TEST_CASE("send buffers: frames hold copies; a buffer is reused once every frame over it is gone") {
  send_buffers pool;
  const auto header = bytes_of(48, 1), payload = bytes_of(10000, 2);
  std::optional<send_buffers::frames> first = pool.message(header, payload);
  CHECK(same(first->header, header));
  CHECK(same(first->payload, payload));
  zmq::message_t shared;
  shared.copy(first->payload);  // a second neighbour's frame
  first.reset();
  CHECK(pool.busy() == 1);  // the copy still holds it
  {
    const auto other = pool.message(header, payload);  // the first is busy: a second buffer
    CHECK(pool.held() == 2);
    CHECK(pool.busy() == 2);
  }
  CHECK(pool.busy() == 1);
  shared.rebuild();  // the last frame over the first buffer let go
  CHECK(pool.busy() == 0);
  const auto bigger = bytes_of(20000, 3);
  const auto again = pool.message(header, bigger);  // a free buffer grown, none added
  CHECK(pool.held() == 2);
  CHECK(same(again.payload, bigger));
  CHECK(same(again.header, header));
}
