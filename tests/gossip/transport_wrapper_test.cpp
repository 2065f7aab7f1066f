// transport_wrapper (gossip/transport_wrapper.hpp) and the two decorators built on it: each hands
// every call it does not change to its inner transport, and offers each interface of
// gossip/transport.hpp exactly when the inner one does; faulty_transport alone offers liveness and
// queue figures over any backend (its injected losses, the figures a test sets).
#include "gossip/transport_wrapper.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gossip/faulty_transport.hpp"
#include "gossip/inproc/transport.hpp"
#include "gossip/link_emulation.hpp"
#include "tests/gossip/bare_transport.hpp"
#include "tests/gossip/test_bytes.hpp"

using namespace qgossip;
using namespace std::chrono_literals;
using qgossip::testing::bare_offers;
using qgossip::testing::bare_transport;
using qgossip::testing::bytes;
using qgossip::testing::text;

namespace {

// A backend with every interface that records each call made on it ("method peer") and answers
// with values that name the call: a test sees which calls reached it and that their answers came
// back unchanged.
class recording_transport final : public transport,
                                  public transport_liveness,
                                  public transport_queues,
                                  public transport_admission {
 public:
  status send(int peer, std::span<const std::byte>, std::span<const std::byte> payload) override {
    note("send " + std::to_string(peer) + " " + text({payload.begin(), payload.end()}));
    return status::ok();
  }
  status send_all(std::span<const int> peers, std::span<const std::byte>,
                  std::span<const std::byte> payload) override {
    std::string to;
    for (int p : peers) to += std::to_string(p) + ",";
    note("send_all " + to + " " + text({payload.begin(), payload.end()}));
    return status::ok();
  }
  status receive(transport_clock::time_point, inbound_frames& out) override {
    note("receive");
    out.peer = 7;
    return status::error(errc::corrupt, "recorded");
  }
  std::string peer_address(int peer) const override {
    note("peer_address", peer);
    return "rec://" + std::to_string(peer);
  }
  transport_liveness* liveness() override { return this; }
  transport_queues* queues() override { return this; }
  transport_admission* admission() override { return this; }

  void take_lost_peers(std::vector<int>& out) override {
    note("take_lost_peers");
    out.push_back(5);
  }
  std::string loss_cause(int peer) const override {
    note("loss_cause", peer);
    return "cause " + std::to_string(peer);
  }
  void forget_peer(int peer) override { note("forget_peer", peer); }
  void watch_peer(int peer) override { note("watch_peer", peer); }
  std::optional<std::uint64_t> bytes_heard(int peer) const override { return answer("bytes_heard", peer, 1000); }
  bool alive(int peer) const override {
    note("alive", peer);
    return peer % 2 == 1;
  }

  std::optional<std::size_t> queued_bytes(int peer) const override { return answer("queued_bytes", peer, 2000); }
  std::optional<std::uint64_t> bytes_taken(int peer) const override { return answer("bytes_taken", peer, 3000); }
  std::optional<std::uint64_t> bytes_acknowledged(int peer) const override {
    return answer("bytes_acknowledged", peer, 4000);
  }

  transport_refusals refusals() const override {
    note("refusals");
    return {.auth = 1, .handshake = 2, .identity = 3};
  }
  void take_refusal_log(std::vector<std::string>& lines) override {
    note("take_refusal_log");
    lines.push_back("a refusal");
  }
  std::vector<int> peers_refusing_this_node() const override {
    note("peers_refusing_this_node");
    return {4};
  }

  // The calls made since the last take(), in order.
  std::vector<std::string> take() { return std::exchange(calls_, {}); }

 private:
  void note(const std::string& what) const { calls_.push_back(what); }
  void note(std::string_view what, int peer) const { calls_.push_back(std::string(what) + " " + std::to_string(peer)); }
  std::uint64_t answer(std::string_view what, int peer, std::uint64_t base) const {
    note(what, peer);
    return base + static_cast<std::uint64_t>(peer);
  }
  mutable std::vector<std::string> calls_;  // the const methods record too
};

}  // namespace

TEST_CASE("transport_wrapper: every call reaches the inner transport, and its answer comes back") {
  recording_transport rec;
  transport_wrapper w(rec);
  transport& t = w;
  CHECK(t.send(1, bytes("h"), bytes("one")).is_ok());
  const int peers[] = {1, 2};
  CHECK(t.send_all(peers, bytes("h"), bytes("two")).is_ok());
  inbound_frames in;
  CHECK(t.receive(transport_clock::now(), in).code() == errc::corrupt);
  CHECK(in.peer == 7);
  CHECK(t.peer_address(3) == "rec://3");
  CHECK(rec.take() == std::vector<std::string>{"send 1 one", "send_all 1,2, two", "receive", "peer_address 3"});

  REQUIRE(t.liveness() == static_cast<transport_liveness*>(&w));
  transport_liveness& l = *t.liveness();
  std::vector<int> lost;
  l.take_lost_peers(lost);
  CHECK(lost == std::vector<int>{5});
  CHECK(l.loss_cause(3) == "cause 3");
  l.forget_peer(3);
  l.watch_peer(3);
  CHECK(l.bytes_heard(3) == 1003u);
  CHECK(l.alive(3));
  CHECK_FALSE(l.alive(4));
  CHECK(rec.take() == std::vector<std::string>{"take_lost_peers", "loss_cause 3", "forget_peer 3", "watch_peer 3",
                                               "bytes_heard 3", "alive 3", "alive 4"});

  REQUIRE(t.queues() == static_cast<transport_queues*>(&w));
  const transport_queues& q = *t.queues();
  CHECK(q.queued_bytes(3) == std::size_t{2003});
  CHECK(q.bytes_taken(3) == 3003u);
  CHECK(q.bytes_acknowledged(3) == 4003u);
  CHECK(rec.take() == std::vector<std::string>{"queued_bytes 3", "bytes_taken 3", "bytes_acknowledged 3"});

  REQUIRE(t.admission() == static_cast<transport_admission*>(&w));
  transport_admission& a = *t.admission();
  const transport_refusals r = a.refusals();
  CHECK(r.auth == 1);
  CHECK(r.handshake == 2);
  CHECK(r.identity == 3);
  std::vector<std::string> lines;
  a.take_refusal_log(lines);
  CHECK(lines == std::vector<std::string>{"a refusal"});
  CHECK(a.peers_refusing_this_node() == std::vector<int>{4});
  CHECK(rec.take() == std::vector<std::string>{"refusals", "take_refusal_log", "peers_refusing_this_node"});
}

TEST_CASE("transport_wrapper: offers an interface exactly when its inner transport does") {
  recording_transport rec;
  for (int bits = 0; bits < 8; ++bits) {
    const bare_offers offers{.liveness = (bits & 1) != 0, .queues = (bits & 2) != 0, .admission = (bits & 4) != 0};
    CAPTURE(bits);
    bare_transport inner(rec, offers);
    transport_wrapper w(static_cast<transport&>(inner));  // a wrapper of a wrapper, not a copy
    CHECK((w.liveness() != nullptr) == offers.liveness);
    CHECK((w.queues() != nullptr) == offers.queues);
    CHECK((w.admission() != nullptr) == offers.admission);
  }
  // The in-process backend has queue figures only (nothing is held: a send is delivered).
  inproc_network net(2);
  inproc_transport t0 = net.endpoint(0);
  CHECK(t0.liveness() == nullptr);
  REQUIRE(t0.queues() != nullptr);
  CHECK(t0.admission() == nullptr);
  CHECK(t0.queues()->queued_bytes(1) == std::size_t{0});
  CHECK(t0.queues()->bytes_taken(1) == std::nullopt);
  CHECK(t0.queues()->bytes_acknowledged(1) == std::nullopt);
  transport_wrapper w(t0);
  CHECK(w.liveness() == nullptr);
  CHECK(w.queues() == static_cast<transport_queues*>(&w));
  CHECK(w.admission() == nullptr);
}

TEST_CASE("faulty_transport: liveness and queue figures over a backend without them; admission as its inner one's") {
  recording_transport rec;
  bare_transport none(rec, {});
  faulty_transport f(none, {});
  REQUIRE(f.liveness() != nullptr);
  REQUIRE(f.queues() != nullptr);
  CHECK(f.admission() == nullptr);
  transport_liveness& l = *f.liveness();
  std::vector<int> lost;
  l.take_lost_peers(lost);
  CHECK(lost.empty());
  f.lose(2);
  l.take_lost_peers(lost);
  CHECK(lost == std::vector<int>{2});
  CHECK(l.loss_cause(2).empty());
  l.forget_peer(2);
  l.watch_peer(2);
  CHECK(l.bytes_heard(2) == std::nullopt);
  f.set_heard(2, 9);
  CHECK(l.bytes_heard(2) == 9u);
  CHECK_FALSE(l.alive(2));  // no backend to say so
  f.set_alive(2, true);
  CHECK(l.alive(2));
  f.lose(2);  // a loss not yet taken: not alive, whatever was set
  CHECK_FALSE(l.alive(2));
  l.take_lost_peers(lost);
  CHECK(l.alive(2));
  f.set_alive(2, std::nullopt);
  CHECK_FALSE(l.alive(2));
  const transport_queues& q = *f.queues();
  CHECK(q.queued_bytes(2) == std::nullopt);
  f.set_queued(2, 10);
  CHECK(q.queued_bytes(2) == std::size_t{10});
  CHECK(q.bytes_taken(2) == std::nullopt);
  CHECK(q.bytes_acknowledged(2) == std::nullopt);
  f.set_acknowledged(2, 11);
  CHECK(q.bytes_acknowledged(2) == 11u);
  CHECK(rec.take().empty());  // none of it reached the backend, which has none of them

  // Over a backend with all three: what it sets by hand, else the backend's.
  faulty_transport g(rec, {});
  REQUIRE(g.admission() == static_cast<transport_admission*>(&g));
  CHECK(g.admission()->peers_refusing_this_node() == std::vector<int>{4});
  g.lose(9);
  lost.clear();
  g.liveness()->take_lost_peers(lost);
  CHECK(lost == std::vector<int>{5, 9});
  CHECK(g.liveness()->loss_cause(3) == "cause 3");
  CHECK(g.liveness()->bytes_heard(3) == 1003u);
  CHECK(g.queues()->queued_bytes(3) == std::size_t{2003});
  g.set_queued(3, 1);
  CHECK(g.queues()->queued_bytes(3) == std::size_t{1});
  CHECK(g.queues()->bytes_taken(3) == 3003u);
  CHECK(g.queues()->bytes_acknowledged(3) == 4003u);
}

TEST_CASE("faulty_transport: send_all puts each copy through the rules") {
  inproc_network net(3);
  inproc_transport t0 = net.endpoint(0), t1 = net.endpoint(1), t2 = net.endpoint(2);
  faulty_transport f(t0, {{.action = fault::drop, .peer = 2, .nth = 0}});
  const int peers[] = {1, 2};
  REQUIRE(f.send_all(peers, bytes("h"), bytes("first")).is_ok());
  REQUIRE(f.send_all(peers, bytes("h"), bytes("second")).is_ok());
  CHECK(f.injected(fault::drop) == 1);
  inbound_frames in;
  REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "first");
  REQUIRE(t1.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "second");
  REQUIRE(t2.receive(transport_clock::now(), in).is_ok());
  CHECK(text(in.payload) == "second");  // the first copy to rank 2 was dropped
  CHECK(t2.receive(transport_clock::now(), in).code() == errc::timeout);
}

TEST_CASE("link emulation: queue figures exactly when the inner transport has them, its own link added") {
  recording_transport rec;
  bare_transport none(rec, {});
  const link_emulation slow{.rate_bits_per_s = 8e6, .delay = 1s};
  emulated_link_transport over_none(none, slow);
  CHECK(over_none.queues() == nullptr);
  CHECK(over_none.liveness() == nullptr);
  CHECK(over_none.admission() == nullptr);

  emulated_link_transport link(rec, slow);
  REQUIRE(link.queues() == static_cast<transport_queues*>(&link));
  CHECK(link.queues()->queued_bytes(1) == std::size_t{2001});  // nothing leaving the link: the inner's
  CHECK(link.queues()->bytes_taken(1) == 3001u);
  CHECK(link.queues()->bytes_acknowledged(1) == 4001u);
  REQUIRE(link.liveness() != nullptr);
  CHECK(link.liveness()->loss_cause(1) == "cause 1");
  REQUIRE(link.admission() != nullptr);
  CHECK(link.admission()->refusals().identity == 3);
}
