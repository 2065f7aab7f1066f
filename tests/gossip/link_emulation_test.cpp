// The emulated egress link over the in-process transport.
//
// Timing on a loaded 2-core machine: every lower bound is exact by construction and asserted tightly
// (a message is never handed over before its due time, and due is computed from a clock reading
// taken after the test's own start stamp, so no amount of load can make it early). Upper bounds only
// catch a wrapper that does not send at all or paces far too slowly: they allow kSlack = 2 s on top
// of the expected time (10-20 times the expected times here), far above the scheduling stalls seen
// on a loaded 2-core machine (tens of milliseconds).
#include "gossip/link_emulation.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "gossip/inproc/transport.hpp"
#include "tests/gossip/spawn.hpp"
#include "tests/gossip/test_bytes.hpp"

using namespace qgossip;
using qgossip::testing::bytes;
using qgossip::testing::text;
using namespace std::chrono_literals;

namespace {

constexpr auto kSlack = 2s;

// What the link model says one message of `frame_bytes` (header + payload) occupies the link for.
transport_clock::duration transmission(std::size_t frame_bytes, const link_emulation& l) {
  const double s = static_cast<double>(frame_bytes + l.per_message_overhead_bytes) * 8.0 / l.rate_bits_per_s;
  return std::chrono::duration_cast<transport_clock::duration>(std::chrono::duration<double>(s));
}

// Receives `count` messages on t (deadline: now + limit each) and stamps their arrival.
struct arrival {
  transport_clock::time_point at;
  int peer;
  std::string header, payload;
};
std::vector<arrival> receive_n(transport& t, int count, transport_clock::duration limit = 10s) {
  std::vector<arrival> got;
  inbound_frames in;
  for (int i = 0; i < count; ++i) {
    status s = t.receive(transport_clock::now() + limit, in);
    REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    got.push_back({transport_clock::now(), in.peer, text(in.header), text(in.payload)});
  }
  return got;
}

}  // namespace

TEST_CASE("link emulation: unlimited is a pass-through: no copy held, nothing to flush") {
  inproc_network net(3);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  auto t2 = net.endpoint(2);
  emulated_link_transport link(inner, {});
  CHECK(link.link().pass_through());
  REQUIRE(link.send(1, bytes("h"), bytes("direct")).is_ok());
  const int peers[] = {1, 2};
  REQUIRE(link.send_all(peers, bytes("h"), bytes("fan-out")).is_ok());
  CHECK(link.queued() == 0);
  // Already in the peers' mailboxes, without any further call on the wrapper.
  inbound_frames in;
  REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "direct");
  REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "fan-out");
  REQUIRE(t2.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "fan-out");
  CHECK(link.flush(transport_clock::now()).is_ok());
  CHECK(link.peer_address(1) == inner.peer_address(1));
}

TEST_CASE("link emulation: a delayed message is not delivered before its delay, and is soon after") {
  constexpr auto kDelay = 80ms;
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, {.delay = kDelay});
  const auto start = transport_clock::now();
  // Rank 0 sends and then waits in receive(), as a node does; rank 1 stamps the arrival.
  auto results = test::spawn(2, [&](int rank) -> transport_clock::duration {
    if (rank == 0) {
      REQUIRE(link.send(1, bytes("h"), bytes("late")).is_ok());
      CHECK(link.queued() == 1);
      inbound_frames in;
      // Nothing comes to rank 0: this times out at its deadline, having handed the message over on the way.
      CHECK(link.receive(transport_clock::now() + kDelay + 100ms, in).code() == errc::timeout);
      CHECK(link.queued() == 0);
      return {};
    }
    auto got = receive_n(t1, 1);
    CHECK(got[0].payload == "late");
    CHECK(got[0].peer == 0);
    return got[0].at - start;
  });
  CHECK(results[1] >= kDelay);
  CHECK(results[1] < kDelay + kSlack);
}

TEST_CASE("link emulation: receive returns timeout only at the caller's deadline, not at a due time") {
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, {.delay = 30ms});
  REQUIRE(link.send(1, bytes("h"), bytes("p")).is_ok());
  inbound_frames in;
  auto start = transport_clock::now();
  CHECK(link.receive(start + 10ms, in).code() == errc::timeout);  // before the message is due
  CHECK(transport_clock::now() - start >= 10ms);
  start = transport_clock::now();
  CHECK(link.receive(start + 100ms, in).code() == errc::timeout);  // woke at 30 ms to send, kept waiting
  CHECK(transport_clock::now() - start >= 100ms);
  CHECK(link.queued() == 0);
  REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "p");
}

TEST_CASE("link emulation: N messages of S bytes take N·(S + overhead)·8/rate, and not much more") {
  // 8 Mbit/s = 1 byte per microsecond: 16 messages of 48 + 10000 bytes (+ 77 overhead) take 162 ms.
  const link_emulation l{.rate_bits_per_s = 8e6};
  constexpr int kMessages = 16;
  const std::string header(48, 'h');
  const std::string payload(10000, 'p');
  const auto tx = transport_clock::duration(transmission(header.size() + payload.size(), l));
  CHECK(std::chrono::duration<double>(tx).count() == doctest::Approx(10.125e-3).epsilon(1e-9));
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, l);
  const auto start = transport_clock::now();
  auto results = test::spawn(2, [&](int rank) -> std::vector<arrival> {
    if (rank == 0) {
      for (int i = 0; i < kMessages; ++i) {
        std::string h = header;
        h[0] = static_cast<char>('a' + i);  // which message this is
        REQUIRE(link.send(1, bytes(h), bytes(payload)).is_ok());
      }
      REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
      return {};
    }
    return receive_n(t1, kMessages);
  });
  const auto& got = results[1];
  for (int i = 0; i < kMessages; ++i) {
    CAPTURE(i);
    CHECK(got[static_cast<std::size_t>(i)].header[0] == static_cast<char>('a' + i));  // FIFO
    // Message i has left the link after i + 1 transmissions. Each transmission is truncated to whole
    // nanoseconds when accumulated, hence the i + 1 ns.
    CHECK(got[static_cast<std::size_t>(i)].at - start >= (i + 1) * tx - std::chrono::nanoseconds(i + 1));
  }
  CHECK(got.back().at - start < kMessages * tx + kSlack);
}

TEST_CASE("link emulation: one FIFO link for all peers: a small message waits behind a big one to another peer") {
  // 80 Mbit/s = 10 bytes per microsecond: the 200 kB message to rank 1 takes 20 ms, the small one
  // to rank 2 can leave only after it, although it alone would take 14 us.
  const link_emulation l{.rate_bits_per_s = 80e6, .delay = 5ms};
  const std::string big(200'000, 'b');
  inproc_network net(3);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  auto t2 = net.endpoint(2);
  emulated_link_transport link(inner, l);
  const auto start = transport_clock::now();
  REQUIRE(link.send(1, bytes("H1"), bytes(big)).is_ok());
  REQUIRE(link.send(2, bytes("H2"), bytes("small")).is_ok());
  CHECK(link.queued() == 2);
  auto results = test::spawn(3, [&](int rank) -> std::vector<arrival> {
    if (rank == 0) {
      REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
      return {};
    }
    return receive_n(rank == 1 ? t1 : t2, 1);
  });
  const auto tx_big = transmission(2 + big.size(), l);
  const auto tx_small = transmission(2 + 5, l);
  CHECK(results[1][0].payload == big);
  CHECK(results[1][0].at - start >= tx_big + l.delay);
  CHECK(results[2][0].payload == "small");
  CHECK(results[2][0].at - start >= tx_big + tx_small + l.delay - 2ns);
  CHECK(results[2][0].at - start < tx_big + tx_small + l.delay + kSlack);
}

TEST_CASE("link emulation: send_all to k peers is k messages through the link, in the peers' order") {
  const link_emulation l{.rate_bits_per_s = 8e6, .per_message_overhead_bytes = 0};
  const std::string payload(20'000, 'x');  // 20 ms per copy at 1 byte/us
  inproc_network net(4);
  auto inner = net.endpoint(0);
  std::vector<inproc_transport> peers;
  for (int r = 1; r < 4; ++r) peers.push_back(net.endpoint(r));
  emulated_link_transport link(inner, l);
  const int to[] = {3, 1, 2};
  const auto start = transport_clock::now();
  REQUIRE(link.send_all(to, bytes("h"), bytes(payload)).is_ok());
  CHECK(link.queued() == 3);
  auto results = test::spawn(4, [&](int rank) -> std::vector<arrival> {
    if (rank == 0) {
      REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
      return {};
    }
    return receive_n(peers[static_cast<std::size_t>(rank - 1)], 1);
  });
  const auto tx = transmission(1 + payload.size(), l);
  // Rank 3 first, then 1, then 2: the k-th copy in send order leaves after k transmissions.
  for (int k = 0; k < 3; ++k) {
    const int rank = to[k];
    CAPTURE(rank);
    const auto& a = results[static_cast<std::size_t>(rank)][0];
    CHECK(a.payload == payload);
    CHECK(a.peer == 0);
    CHECK(a.at - start >= (k + 1) * tx - std::chrono::nanoseconds(k + 1));
  }
  CHECK(results[2][0].at - start < 3 * tx + kSlack);
}

TEST_CASE("link emulation: an idle link does not bank credit: after a pause, pacing starts from now") {
  // Pacing is max(now, link_free) + transmission: waiting 50 ms must not let the next 3 messages
  // leave in a burst.
  const link_emulation l{.rate_bits_per_s = 8e6, .per_message_overhead_bytes = 0};
  const std::string payload(9'999, 'x');  // + 1-byte header: 10 ms each
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, l);
  REQUIRE(link.send(1, bytes("h"), bytes(payload)).is_ok());
  REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
  std::this_thread::sleep_for(50ms);
  const auto start = transport_clock::now();
  for (int i = 0; i < 3; ++i) REQUIRE(link.send(1, bytes("h"), bytes(payload)).is_ok());
  REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
  CHECK(transport_clock::now() - start >= 3 * transmission(10'000, l) - 3ns);
  auto got = receive_n(t1, 4);
  CHECK(got.size() == 4);
}

TEST_CASE("link emulation: a node waiting in receive sends on time: a ping-pong takes two delays") {
  constexpr auto kDelay = 40ms;
  inproc_network net(2);
  auto e0 = net.endpoint(0);
  auto e1 = net.endpoint(1);
  emulated_link_transport l0(e0, {.delay = kDelay});
  emulated_link_transport l1(e1, {.delay = kDelay});
  auto results = test::spawn(2, [&](int rank) -> transport_clock::duration {
    inbound_frames in;
    if (rank == 0) {
      const auto start = transport_clock::now();
      REQUIRE(l0.send(1, bytes("h"), bytes("ping")).is_ok());
      status s = l0.receive(start + 10s, in);  // hands the ping over at 40 ms while waiting
      REQUIRE_MESSAGE(s.is_ok(), s.to_string());
      CHECK(text(in.payload) == "pong");
      return transport_clock::now() - start;
    }
    status s = l1.receive(transport_clock::now() + 10s, in);
    REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    CHECK(text(in.payload) == "ping");
    REQUIRE(l1.send(0, bytes("h"), bytes("pong")).is_ok());
    REQUIRE(l1.flush(transport_clock::now() + 10s).is_ok());
    return {};
  });
  CHECK(results[0] >= 2 * kDelay);
  CHECK(results[0] < 2 * kDelay + kSlack);
}

TEST_CASE("link emulation: flush delivers everything, or stops at its deadline keeping the rest") {
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  // The delay is long so that "nothing is due yet" below holds even after a 200 ms scheduling stall.
  emulated_link_transport link(inner, {.rate_bits_per_s = 8e6, .delay = 200ms, .per_message_overhead_bytes = 0});
  const std::string payload(9'999, 'x');  // 10 ms each
  const auto sent = transport_clock::now();
  for (int i = 0; i < 5; ++i) REQUIRE(link.send(1, bytes(std::string(1, char('0' + i))), bytes(payload)).is_ok());
  CHECK(link.queued() == 5);

  SUBCASE("to the end") {
    REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
    CHECK(link.queued() == 0);
    CHECK(transport_clock::now() - sent >= 5 * 10ms + 200ms - 5ns);  // the last one's due time
    auto got = receive_n(t1, 5, 0s);  // already there: no waiting
    for (int i = 0; i < 5; ++i) CHECK(got[static_cast<std::size_t>(i)].header == std::string(1, char('0' + i)));
  }
  SUBCASE("up to a deadline that comes first") {
    // Message 0 is due at 210 ms, message 4 at 250 ms: a deadline now + 1 ms releases nothing and
    // reports all five.
    status s = link.flush(transport_clock::now() + 1ms);
    CHECK(s.code() == errc::timeout);
    CHECK(s.message() == "5 message(s) still queued on the emulated link at the flush deadline");
    CHECK(link.queued() == 5);
    REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
    CHECK(link.queued() == 0);
    CHECK(receive_n(t1, 5, 0s).size() == 5);
  }
}

TEST_CASE("link emulation: the inner transport's send errors surface when the message is handed over") {
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, {.delay = 10ms});

  SUBCASE("from flush; the failing message is dropped, the rest stay queued") {
    REQUIRE(link.send(7, bytes("h"), bytes("nowhere")).is_ok());  // queued: the inner send comes later
    REQUIRE(link.send(1, bytes("h"), bytes("fine")).is_ok());
    status s = link.flush(transport_clock::now() + 10s);
    CHECK(s.code() == errc::invalid);
    CHECK(s.message().find("rank 7") != std::string::npos);
    CHECK(link.queued() == 1);
    REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
    inbound_frames in;
    REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
    CHECK(text(in.payload) == "fine");
  }
  SUBCASE("from receive, before its deadline") {
    REQUIRE(link.send(-1, bytes("h"), bytes("nowhere")).is_ok());
    inbound_frames in;
    const auto start = transport_clock::now();
    CHECK(link.receive(start + 10s, in).code() == errc::invalid);
    CHECK(transport_clock::now() - start < kSlack);
  }
  SUBCASE("from a later send") {
    REQUIRE(link.send(0, bytes("h"), bytes("to myself")).is_ok());
    std::this_thread::sleep_for(15ms);
    CHECK(link.send(1, bytes("h"), bytes("fine")).code() == errc::invalid);
    CHECK(link.queued() == 1);  // the new message was queued all the same
  }
  SUBCASE("pass-through: at once") {
    emulated_link_transport direct(inner, {});
    CHECK(direct.send(5, bytes("h"), bytes("p")).code() == errc::invalid);
  }
}

TEST_CASE("link emulation: a negative or non-finite rate, or a negative delay, is a broken invariant") {
  inproc_network net(1);
  auto inner = net.endpoint(0);
  CHECK_THROWS_AS(emulated_link_transport(inner, {.rate_bits_per_s = -1}), invariant_error);
  CHECK_THROWS_AS(emulated_link_transport(inner, {.rate_bits_per_s = std::nan("")}), invariant_error);
  CHECK_THROWS_AS(emulated_link_transport(inner, {.delay = -1us}), invariant_error);
}

TEST_CASE("link emulation: queued bytes are those still leaving the link, not those only delayed") {
  // 8 Mbit/s = 1 byte per microsecond: the 50 kB message to rank 1 leaves over 50 ms, then waits
  // out a 200 ms delay; the flow control of asynchronous gossip counts it only while it leaves.
  const link_emulation l{.rate_bits_per_s = 8e6, .delay = 200ms, .per_message_overhead_bytes = 0};
  const std::string payload(50'000, 'p');
  inproc_network net(2);
  auto inner = net.endpoint(0);
  auto t1 = net.endpoint(1);
  emulated_link_transport link(inner, l);
  CHECK(inner.queued_bytes(1) == std::size_t{0});  // the in-process transport holds nothing: sent is delivered
  CHECK(link.queued_bytes(1) == std::size_t{0});
  const auto start = transport_clock::now();
  REQUIRE(link.send(1, bytes("HH"), bytes(payload)).is_ok());
  if (transport_clock::now() - start < 40ms) CHECK(link.queued_bytes(1) == std::size_t{2 + payload.size()});
  CHECK(link.queued_bytes(0) == std::size_t{0});  // another peer's link holds nothing of it
  std::this_thread::sleep_until(start + 60ms);
  CHECK(link.queued_bytes(1) == std::size_t{0});  // left: on the wire, only delayed
  CHECK(link.queued() == 1);
  REQUIRE(link.flush(transport_clock::now() + 10s).is_ok());
}
