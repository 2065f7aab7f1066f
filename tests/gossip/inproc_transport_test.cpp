#include "gossip/inproc/transport.hpp"

#include <doctest/doctest.h>

#include <string_view>

#include "core/errors.hpp"
#include "tests/gossip/spawn.hpp"
#include "tests/gossip/test_bytes.hpp"

using namespace qgossip;
using qgossip::testing::bytes;
using qgossip::testing::text;
using namespace std::chrono_literals;

namespace {
}  // namespace

TEST_CASE("inproc: messages arrive whole, in order, naming their sender") {
  inproc_network net(3);
  auto t0 = net.endpoint(0);
  auto t1 = net.endpoint(1);
  auto t2 = net.endpoint(2);
  REQUIRE(t1.send(0, bytes("h1"), bytes("first")).is_ok());
  REQUIRE(t2.send(0, bytes("h2"), bytes("")).is_ok());
  REQUIRE(t1.send(0, bytes("h3"), bytes("third")).is_ok());
  inbound_frames in;
  const auto soon = transport_clock::now() + 1s;
  REQUIRE(t0.receive(soon, in).is_ok());
  CHECK(in.peer == 1);
  CHECK(text(in.header) == "h1");
  CHECK(text(in.payload) == "first");
  REQUIRE(t0.receive(soon, in).is_ok());
  CHECK(in.peer == 2);
  CHECK(in.payload.empty());
  REQUIRE(t0.receive(soon, in).is_ok());
  CHECK(text(in.payload) == "third");
}

TEST_CASE("inproc: receive times out at its deadline when nothing comes") {
  inproc_network net(2);
  auto t0 = net.endpoint(0);
  inbound_frames in;
  const auto start = transport_clock::now();
  status s = t0.receive(start + 50ms, in);
  CHECK(s.code() == errc::timeout);
  CHECK(transport_clock::now() - start >= 50ms);
}

TEST_CASE("inproc: a message waits for a rank that has not taken its endpoint yet") {
  inproc_network net(2);
  auto t0 = net.endpoint(0);
  REQUIRE(t0.send(1, bytes("h"), bytes("early")).is_ok());
  auto t1 = net.endpoint(1);
  inbound_frames in;
  REQUIRE(t1.receive(transport_clock::now() + 1s, in).is_ok());
  CHECK(text(in.payload) == "early");
}

TEST_CASE("inproc: sending to a rank outside the network or to oneself is invalid") {
  inproc_network net(2);
  auto t0 = net.endpoint(0);
  CHECK(t0.send(2, bytes("h"), bytes("p")).code() == errc::invalid);
  CHECK(t0.send(-1, bytes("h"), bytes("p")).code() == errc::invalid);
  CHECK(t0.send(0, bytes("h"), bytes("p")).code() == errc::invalid);
  CHECK_THROWS_AS(net.endpoint(0), invariant_error);  // one endpoint per rank
}

TEST_CASE("inproc: a receiver blocked in receive wakes for a message from another thread") {
  inproc_network net(2);
  auto t0 = net.endpoint(0);
  auto t1 = net.endpoint(1);
  auto results = test::spawn(2, [&](int rank) -> std::string {
    if (rank == 1) {
      std::this_thread::sleep_for(20ms);
      return t1.send(0, bytes("h"), bytes("hello")).to_string();
    }
    inbound_frames in;
    status s = t0.receive(transport_clock::now() + 5s, in);
    return s ? text(in.payload) : s.to_string();
  });
  CHECK(results[0] == "hello");
  CHECK(results[1] == "ok");
}

// The header buffers alternate between the mailbox and the caller; a payload is handed over as the
// sender's copy was queued (received_bytes, moved), so the receiver may keep it without a copy.
TEST_CASE("inproc: header buffers are recycled, and a payload is handed over whole") {
  inproc_network net(2);
  auto t0 = net.endpoint(0);
  auto t1 = net.endpoint(1);
  const std::vector<std::byte> payload(4096, std::byte{7});
  inbound_frames in;
  REQUIRE(t1.send(0, bytes("h"), payload).is_ok());
  REQUIRE(t0.receive(transport_clock::now() + 1s, in).is_ok());
  REQUIRE(t1.send(0, bytes("h"), payload).is_ok());
  REQUIRE(t0.receive(transport_clock::now() + 1s, in).is_ok());
  // From now on the two header buffers alternate between the mailbox and the caller.
  const std::byte* a = in.header.data();
  received_bytes kept = std::move(in.payload);  // a caller that keeps the payload
  REQUIRE(t1.send(0, bytes("h"), payload).is_ok());
  REQUIRE(t0.receive(transport_clock::now() + 1s, in).is_ok());
  const std::byte* b = in.header.data();
  REQUIRE(t1.send(0, bytes("h"), payload).is_ok());
  REQUIRE(t0.receive(transport_clock::now() + 1s, in).is_ok());
  CHECK(a != b);
  CHECK(in.header.data() == a);
  CHECK(in.payload == payload);
  CHECK(kept == payload);  // what the caller kept is still the earlier message's
}
