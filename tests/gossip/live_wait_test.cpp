// exchange_options::live_wait: a neighbour silent at a round's deadline but alive (its program
// busy between two steps) is waited for, told once per deadline; one not alive is judged as before.
// Rank 0 of a 4-ring (neighbours 1 and 3) over a faulty transport whose alive() the test sets by
// hand; ranks 1 and 3 are raw in-process endpoints the test speaks through. Time bounds are wide
// (the deadlines are 200 ms, the checks allow seconds): they cannot flake on a loaded machine.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "gossip/exchange.hpp"
#include "gossip/faulty_transport.hpp"
#include "gossip/inproc/transport.hpp"
#include "tests/gossip/hook_events.hpp"

using namespace qgossip;
using namespace std::chrono_literals;
using testing::hook_events;

namespace {

constexpr std::uint64_t kRun = 0xC0FFEE;
constexpr std::uint16_t kCodec = 2;
constexpr std::uint32_t kTag = 0x1234, kBytes = 64;

std::vector<std::byte> payload_of(int sender, std::uint64_t iteration) {
  return std::vector<std::byte>(kBytes, static_cast<std::byte>(sender * 16 + iteration));
}

// Sends, as `sender`, its train message for `iteration` to rank 0.
void send_as(transport& from, int sender, std::uint64_t iteration) {
  wire_header h;
  h.kind = message_kind::train;
  h.run_id = kRun;
  h.sender = static_cast<std::uint32_t>(sender);
  h.iteration = iteration;
  h.codec = kCodec;
  h.codec_tag = kTag;
  h.count = kBytes;
  const std::vector<std::byte> payload = payload_of(sender, iteration);
  h.payload_bytes = kBytes;
  std::array<std::byte, kWireHeaderBytes> bytes;
  encode_header(h, payload, bytes);
  REQUIRE(from.send(0, bytes, payload).is_ok());
}

struct waiting_node {
  inproc_network net{4};
  inproc_transport t0 = net.endpoint(0);
  inproc_transport t1 = net.endpoint(1);
  inproc_transport t3 = net.endpoint(3);
  faulty_transport f0{t0, {}};  // no faults: only alive(), set by hand
  hook_events events;
  std::vector<std::vector<int>> told;  // each waiting() call's peers
  std::vector<int> failed;
  std::unique_ptr<exchange> ex;
  std::vector<inbound_message> out;

  // live_wait as given; deadlines 200 ms; drop_silent as given; failed peers dropped.
  waiting_node(std::optional<std::chrono::milliseconds> live_wait, bool drop_silent = false,
               bool asynchronous = false) {
    exchange_options o;
    o.rank = 0;
    o.neighbours = {1, 3};
    o.run_id = kRun;
    o.first_deadline = 200ms;
    o.round_deadline = 200ms;
    o.max_payload_bytes = 1 << 20;
    o.live_wait = live_wait;
    o.drop_silent = drop_silent;
    o.asynchronous = asynchronous;
    events.on_waiting = [this](std::span<const int> peers, std::chrono::milliseconds) {
      told.emplace_back(peers.begin(), peers.end());
    };
    events.on_peer_failed = [this](int peer, const std::string&) {
      failed.push_back(peer);
      return true;
    };
    ex = std::make_unique<exchange>(f0, o, &events);
  }
  status round(std::uint64_t iteration) {
    const std::vector<std::byte> payload = payload_of(0, iteration);
    const outgoing_message m{kCodec, kTag, kBytes, payload};
    return ex->round(message_kind::train, iteration, m, out);
  }
  status gather(std::uint64_t iteration, std::uint64_t need) {
    const std::vector<std::byte> payload = payload_of(0, iteration);
    const outgoing_message m{kCodec, kTag, kBytes, payload};
    return ex->gather(iteration, m, need, &out);
  }
};

double seconds_since(transport_clock::time_point start) {
  return std::chrono::duration<double>(transport_clock::now() - start).count();
}

}  // namespace

TEST_CASE("live_wait: a live neighbour silent past the deadline is waited for until its message comes") {
  waiting_node n(0ms);  // no bound
  n.f0.set_alive(3, true);
  send_as(n.t1, 1, 1);
  std::thread late([&] {
    std::this_thread::sleep_for(700ms);
    send_as(n.t3, 3, 1);
  });
  const auto start = transport_clock::now();
  const status s = n.round(1);
  late.join();
  REQUIRE(s.is_ok());
  CHECK(seconds_since(start) >= 0.65);
  CHECK(n.out.size() == 2);
  REQUIRE(n.told.size() >= 2);  // at ~200, ~400, ~600 ms
  CHECK(n.told.size() <= 4);
  for (const auto& peers : n.told) CHECK(peers == std::vector<int>{3});
  CHECK(n.failed.empty());
}

TEST_CASE("live_wait: without it, or for a neighbour not alive, the deadline judges as before") {
  SUBCASE("off") {
    waiting_node n(std::nullopt);
    n.f0.set_alive(3, true);
    send_as(n.t1, 1, 1);
    const status s = n.round(1);
    CHECK(s.code() == errc::timeout);
    CHECK(s.message().find("rank 3") != std::string::npos);
    CHECK(n.told.empty());
  }
  SUBCASE("not alive") {
    waiting_node n(0ms);
    send_as(n.t1, 1, 1);
    const status s = n.round(1);
    CHECK(s.code() == errc::timeout);
    CHECK(n.told.empty());
  }
  SUBCASE("alive, then not: judged at the next deadline") {
    waiting_node n(0ms);
    n.f0.set_alive(3, true);
    send_as(n.t1, 1, 1);
    std::thread dies([&] {
      std::this_thread::sleep_for(500ms);
      n.f0.set_alive(3, false);
    });
    const auto start = transport_clock::now();
    const status s = n.round(1);
    dies.join();
    CHECK(s.code() == errc::timeout);
    CHECK(seconds_since(start) >= 0.45);
    CHECK(!n.told.empty());
  }
}

TEST_CASE("live_wait: a bound ends the wait for a live neighbour; drop_silent then drops it") {
  waiting_node n(500ms, /*drop_silent=*/true);
  n.f0.set_alive(3, true);
  send_as(n.t1, 1, 1);
  const auto start = transport_clock::now();
  REQUIRE(n.round(1).is_ok());
  const double took = seconds_since(start);
  CHECK(took >= 0.45);
  CHECK(took < 3.0);
  CHECK(n.failed == std::vector<int>{3});
  CHECK(n.ex->dropped(3));
  CHECK(n.told.size() >= 1);
}

TEST_CASE("live_wait with drop_silent: the dead neighbour is dropped at the deadline, the live one waited for") {
  waiting_node n(0ms, /*drop_silent=*/true);
  n.f0.set_alive(3, true);  // rank 1 is silent and not alive
  std::thread late([&] {
    std::this_thread::sleep_for(600ms);
    send_as(n.t3, 3, 1);
  });
  const status s = n.round(1);
  late.join();
  REQUIRE(s.is_ok());
  CHECK(n.failed == std::vector<int>{1});
  REQUIRE(n.out.size() == 1);
  CHECK(n.out[0].header.sender == 3u);
}

TEST_CASE("live_wait, asynchronous: a round below need waits for a live neighbour past its deadline") {
  waiting_node n(0ms, false, /*asynchronous=*/true);
  send_as(n.t1, 1, 1);
  send_as(n.t3, 3, 1);
  REQUIRE(n.gather(1, 1).is_ok());
  send_as(n.t1, 1, 2);
  n.f0.set_alive(3, true);
  std::thread late([&] {
    std::this_thread::sleep_for(700ms);
    send_as(n.t3, 3, 2);
  });
  const auto start = transport_clock::now();
  const status s = n.gather(2, 2);
  late.join();
  REQUIRE(s.is_ok());
  CHECK(seconds_since(start) >= 0.65);
  REQUIRE(!n.told.empty());
  CHECK(n.told.front() == std::vector<int>{3});
  SUBCASE("and times out as before for one not alive") {
    send_as(n.t1, 1, 3);
    n.f0.set_alive(3, false);
    CHECK(n.gather(3, 3).code() == errc::timeout);
  }
}
