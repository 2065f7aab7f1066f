// The transport's reusable send buffers: frames carry the bytes given, a buffer is busy while any
// frame over it lives, and a free one is reused instead of a new one.
#include "gossip/zmq/send_buffers.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <chrono>
#include <optional>
#include <thread>
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

// A payload its owner keeps (a node's own train message) is sent with no copy and no buffer of the
// pool: the frames read the owner's bytes, count in busy_bytes while any frame over them lives, and
// the owner's reference goes with the last of them.
TEST_CASE("send buffers: an adopted payload is read in place and its owner let go with the last frame") {
  send_buffers pool;
  const auto header = bytes_of(48, 1);
  auto owner = std::make_shared<std::vector<std::byte>>(bytes_of(10000, 2));
  std::optional<send_buffers::frames> f = pool.adopt(header, *owner, owner);
  CHECK(same(f->header, header));
  CHECK(f->payload.data() == owner->data());  // no copy
  CHECK(pool.held() == 0);                   // no buffer of the pool
  CHECK(pool.busy_bytes() == 10000);
  CHECK(owner.use_count() == 2);
  zmq::message_t second;
  second.copy(f->payload);  // a second neighbour's frame
  f.reset();
  CHECK(owner.use_count() == 2);  // the copy still holds it
  CHECK(pool.busy_bytes() == 10000);
  second.rebuild();
  CHECK(owner.use_count() == 1);
  CHECK(pool.busy_bytes() == 0);
  // Adopted messages age the pool's idle buffers as any other: a burst's buffer goes after
  // kIdleMessages of them (a gossip node's train messages are all adopted).
  { const auto burst = pool.message(header, bytes_of(1 << 16, 3)); }
  CHECK(pool.held() == 1);
  for (std::uint64_t i = 0; i <= send_buffers::kIdleMessages; ++i) (void)pool.adopt(header, *owner, owner);
  CHECK(pool.held() == 0);
  CHECK(owner.use_count() == 1);
}

// A burst of large messages (a rejoining state's chunks) leaves buffers that later rounds, one
// message at a time, do not need: each is let go once the kIdleMessages messages after its last use
// did not use it, and the one buffer the steady sends reuse (the first) stays.
TEST_CASE("send buffers: a burst's buffers are let go once unused for kIdleMessages messages") {
  send_buffers pool;
  const auto header = bytes_of(48, 1), chunk = bytes_of(1 << 16, 2), round = bytes_of(1000, 3);
  {
    std::vector<send_buffers::frames> burst;  // messages 1..8, one buffer each
    for (int i = 0; i < 8; ++i) burst.push_back(pool.message(header, chunk));
    CHECK(pool.held() == 8);
  }
  CHECK(pool.busy() == 0);
  for (int i = 0; i < 56; ++i) (void)pool.message(header, round);  // messages 9..64: buffer 2 idle 62
  CHECK(pool.held() == 8);
  for (std::uint64_t i = 0; i < 8; ++i) (void)pool.message(header, round);  // 65..72: buffers 2..7 go
  CHECK(pool.held() == 2);
  (void)pool.message(header, round);  // 73: the burst's last, message 8, goes too
  CHECK(pool.held() == 1);
  CHECK(pool.busy() == 0);
}

// busy_bytes counts the buffers ZeroMQ holds; wait_held_at_most returns once a frame let go of
// enough of them (here another thread, as ZeroMQ's I/O thread does), or false at its deadline.
TEST_CASE("send buffers: wait_held_at_most waits for frames to let go of their buffers") {
  send_buffers pool;
  const auto header = bytes_of(48, 1), payload = bytes_of(1000, 2);
  std::optional<send_buffers::frames> a = pool.message(header, payload);
  std::optional<send_buffers::frames> b = pool.message(header, payload);
  CHECK(pool.busy_bytes() == 2 * 1048);
  const auto now = std::chrono::steady_clock::now;
  CHECK_FALSE(pool.wait_held_at_most(1048, now() + std::chrono::milliseconds(20)));
  CHECK(pool.wait_held_at_most(2 * 1048, now()));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.reset();
  });
  CHECK(pool.wait_held_at_most(1048, now() + std::chrono::seconds(10)));
  releaser.join();
  CHECK(pool.busy_bytes() == 1048);
  b.reset();
  CHECK(pool.busy_bytes() == 0);
}
