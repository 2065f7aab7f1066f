// Liveness of the ZeroMQ transport (zmq_options::heartbeat_*; transport_liveness::take_lost_peers,
// errc::peer_lost) on this machine's loopback, with real sockets: a neighbour that closes, is
// killed, is stopped, or is merely busy; heartbeats off; forget_peer. Neighbours that must die
// for real live in a child process (fork, before this test case starts any thread of its own).
//
// Timing margins (why these cannot flake): detection is bounded by the transport's own timers,
// never by scheduling luck, and each bound is asserted with at least 250 ms of slack:
//  - a neighbour that is killed (SIGKILL): the kernel closes its sockets at once, our I/O thread
//    sees the end within a millisecond or so, then loss_grace (200 ms) runs: ~200 ms against a
//    limit of 500 ms (one that closes gracefully while flushing 3 MiB: ~250 ms against 1500);
//  - a stopped neighbour (SIGSTOP): its last PONG at most one interval (200) before the stop, our
//    next PING seen within a judgement (100), then timeout (800) + RTO (loopback: 200) and another
//    judgement (100): at most 1400 ms, asserted < 2000 ms; at least timeout = 800 ms, asserted
//    >= 500 ms (the kernel never closes anything, so only the heartbeat can have found it);
//  - a neighbour behind a slow link (our data to it paced at 400 kB/s, 8 s of it queued, our PINGs
//    waiting behind it): not reported for 6 s, 7.5 heartbeat timeouts (the old rule, ZeroMQ's own
//    timeout, reported it after about one);
//  - "no report" cases wait at least grace + 400 ms past the event that would have caused one.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gossip/faulty_transport.hpp"
#include "gossip/inproc/transport.hpp"
#include "gossip/zmq/curve_keys.hpp"
#include "gossip/zmq/transport.hpp"
#include "tests/gossip/test_bytes.hpp"

using namespace qgossip;
using qgossip::testing::kAnyPort;
using qgossip::testing::bytes;
using qgossip::testing::text;
using namespace std::chrono_literals;

namespace {

double ms_since(transport_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(transport_clock::now() - t).count();
}

// Ranks 0 and 1, heartbeats 200 ms / 800 ms, grace 200 ms (the default), with or without CURVE.
struct setup {
  bool curve;
  std::vector<curve_keypair> keys;
  explicit setup(bool c) : curve(c) {
    if (curve)
      for (int r = 0; r < 2; ++r) keys.push_back(generate_curve_keypair());
  }
  zmq_options options(int rank, bool heartbeats = true) const {
    zmq_options o;
    o.linger = 200ms;  // tests must not wait 10 s for messages to ranks that are gone
    o.send_timeout = 2000ms;
    // As a node sets it (its largest message): the heartbeat timeout grows by its time at 10 MiB/s
    // (heartbeat_timeout_for), 0.1 s here, where the default 256 MiB would add 25.6 s.
    o.max_payload_bytes = 1u << 20;
    if (heartbeats) {
      o.heartbeat_interval = 200ms;
      o.heartbeat_timeout = 800ms;
    }
    if (curve) {
      zmq_curve_keys k;
      k.public_key = keys[static_cast<std::size_t>(rank)].public_key;
      k.secret_key = keys[static_cast<std::size_t>(rank)].secret_key;
      k.peers[1 - rank] = keys[static_cast<std::size_t>(1 - rank)].public_key;
      o.curve = k;
    }
    return o;
  }
};

// Receives until something other than a message arrives; counts (and keeps) the messages.
status receive_until_not_ok(transport& t, transport_clock::time_point deadline, std::vector<std::string>* got = nullptr) {
  inbound_frames in;
  for (;;) {
    status s = t.receive(deadline, in);
    if (!s) return s;
    if (got) got->push_back(text(in.header));
  }
}

// Makes sure a's link to b is up (handshake done) and b's to a: a message each way.
void handshake(transport& a, int a_rank, transport& b, int b_rank) {
  inbound_frames in;
  REQUIRE(a.send(b_rank, bytes("hello"), bytes("")).is_ok());
  REQUIRE(b.receive(transport_clock::now() + 5s, in).is_ok());
  REQUIRE(b.send(a_rank, bytes("hello"), bytes("")).is_ok());
  REQUIRE(a.receive(transport_clock::now() + 5s, in).is_ok());
}

// Through the transport's liveness interface, as the exchange reads it.
std::vector<int> take_lost(transport& t) {
  transport_liveness* liveness = t.liveness();
  REQUIRE(liveness != nullptr);
  std::vector<int> v;
  liveness->take_lost_peers(v);
  return v;
}

// Rank 1 in a child process: it binds, tells the parent its endpoint over a pipe, connects to
// the parent's, answers the parent's first message with "ready", then (busy) sleeps 3 s without
// touching the transport and sends "awake", and waits to be killed. It dies with the parent
// (PR_SET_PDEATHSIG) and on its own after 60 s, so a failed test leaves nothing behind.
class child_peer {
 public:
  child_peer(const setup& s, bool busy) {
    int down[2], up[2];
    REQUIRE(::pipe(down) == 0);
    REQUIRE(::pipe(up) == 0);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(4);
      ::close(down[1]);
      ::close(up[0]);
      int code = 0;
      try {
        code = run_child(s, busy, down[0], up[1]);
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_child_ = down[1];
    from_child_ = up[0];
    endpoint_ = read_line(from_child_);
  }
  ~child_peer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    ::close(to_child_);
    ::close(from_child_);
  }
  const std::string& endpoint() const { return endpoint_; }
  pid_t pid() const { return pid_; }
  void tell(const std::string& line) {
    const std::string l = line + "\n";
    REQUIRE(::write(to_child_, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  }

 private:
  static std::string read_line(int fd) {
    std::string line;
    char c;
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10000) != 1 || ::read(fd, &c, 1) != 1) return line;  // the child failed
      if (c == '\n') return line;
      line += c;
    }
  }
  static int run_child(const setup& s, bool busy, int from_parent, int to_parent) {
    zmq_transport t(1, kAnyPort, s.options(1));
    const std::string l = t.bound_endpoint() + "\n";
    if (::write(to_parent, l.data(), l.size()) != static_cast<ssize_t>(l.size())) return 5;
    t.connect(0, read_line(from_parent));
    inbound_frames in;
    if (!t.receive(transport_clock::now() + 10s, in)) return 6;
    if (!t.send(0, bytes("ready"), bytes(""))) return 7;
    if (busy) {
      std::this_thread::sleep_for(3s);  // a long computation: the transport is not called
      if (!t.send(0, bytes("awake"), bytes(""))) return 8;
    }
    std::this_thread::sleep_for(60s);
    return 0;
  }

  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string endpoint_;
};

// The parent's side: rank 0 connected to the child, both links up.
std::unique_ptr<zmq_transport> connect_to(child_peer& child, const setup& s) {
  REQUIRE_FALSE(child.endpoint().empty());
  auto t = std::make_unique<zmq_transport>(0, kAnyPort, s.options(0));
  child.tell(t->bound_endpoint());
  t->connect(1, child.endpoint());
  REQUIRE(t->send(1, bytes("ping"), bytes("")).is_ok());
  inbound_frames in;
  REQUIRE(t->receive(transport_clock::now() + 10s, in).is_ok());
  REQUIRE(text(in.header) == "ready");
  return t;
}

}  // namespace

TEST_CASE("liveness: a neighbour that closes is reported lost after every message it sent") {
  for (bool curve : {true, false}) {
    CAPTURE(curve);
    const setup s(curve);
    zmq_transport t0(0, kAnyPort, s.options(0));
    auto t1 = std::make_unique<zmq_transport>(1, kAnyPort, s.options(1));
    t0.connect(1, t1->bound_endpoint());
    t1->connect(0, t0.bound_endpoint());
    handshake(t0, 0, *t1, 1);
    // Large enough (1 MiB each) that t0 may still be reading them when it sees t1's end: the case
    // loss_grace exists for (with loss_grace 0 the loss overtook them in 6 cases of 20; with 256
    // KiB messages never). t1 closes its inbound socket only after its queue left, and the grace
    // restarts with each message, so what must stay under it is the gap between two deliveries
    // (decrypting 1 MiB: ~10 ms): 30 of 30 cases passed with three copies of this test and a CPU
    // hog on two cores (with 4 MiB messages, 1 case of 24 failed there).
    const std::vector<std::byte> big(1u << 20, std::byte{7});
    for (const char* h : {"m1", "m2", "m3"}) REQUIRE(t1->send(0, bytes(h), big).is_ok());
    const auto closed = transport_clock::now();
    t1.reset();  // graceful: its queue leaves during the destructor (linger)
    std::vector<std::string> got;
    status s0 = receive_until_not_ok(t0, transport_clock::now() + 5s, &got);
    const double latency = ms_since(closed);
    MESSAGE(std::string(curve ? "curve" : "none") << ": graceful close reported after " << latency << " ms");
    CHECK(got == std::vector<std::string>{"m1", "m2", "m3"});
    REQUIRE(s0.code() == errc::peer_lost);
    CHECK(s0.message().find("rank 1 (tcp://127.0.0.1:") != std::string::npos);
    // The flush plus the grace restarted by its last message: ~250 ms.
    CHECK(latency < 1500);
    CHECK(take_lost(t0) == std::vector<int>{1});
    CHECK(take_lost(t0).empty());  // once per loss
    // Reported once: the DEALER keeps reconnecting to a closed port, which is no new loss.
    CHECK(receive_until_not_ok(t0, transport_clock::now() + 600ms).code() == errc::timeout);
  }
}

TEST_CASE("liveness: a link that comes back can be lost again; one that never came up is not lost") {
  const setup s(true);
  zmq_transport t0(0, kAnyPort, s.options(0));
  auto t1 = std::make_unique<zmq_transport>(1, kAnyPort, s.options(1));
  const std::string ep1 = t1->bound_endpoint();
  t0.connect(1, ep1);
  t1->connect(0, t0.bound_endpoint());
  handshake(t0, 0, *t1, 1);
  t1.reset();
  REQUIRE(receive_until_not_ok(t0, transport_clock::now() + 5s).code() == errc::peer_lost);
  CHECK(take_lost(t0) == std::vector<int>{1});
  // Rank 1 restarts on the same port; t0's DEALER reconnects (reconnect_interval 100 ms).
  t1 = std::make_unique<zmq_transport>(1, ep1, s.options(1));
  t1->connect(0, t0.bound_endpoint());
  handshake(t0, 0, *t1, 1);
  t1.reset();
  REQUIRE(receive_until_not_ok(t0, transport_clock::now() + 5s).code() == errc::peer_lost);
  CHECK(take_lost(t0) == std::vector<int>{1});

  // A neighbour nobody runs: its connection never completes, so it is never lost (the exchange's
  // first deadline reports it). 600 ms: three reconnect attempts and grace + 400 ms.
  std::string nobody;
  {
    zmq_transport probe(5, kAnyPort, s.options(0));
    nobody = probe.bound_endpoint();
  }
  zmq_options o = s.options(0);
  o.curve->peers[2] = generate_curve_keypair().public_key;
  zmq_transport lonely(0, kAnyPort, o);
  lonely.connect(2, nobody);
  inbound_frames in;
  CHECK(lonely.receive(transport_clock::now() + 600ms, in).code() == errc::timeout);
  CHECK(take_lost(lonely).empty());
}

TEST_CASE("liveness: heartbeats off (the default) report nothing") {
  const setup s(false);
  zmq_transport t0(0, kAnyPort, s.options(0, /*heartbeats=*/false));
  auto t1 = std::make_unique<zmq_transport>(1, kAnyPort, s.options(1, false));
  t0.connect(1, t1->bound_endpoint());
  t1->connect(0, t0.bound_endpoint());
  handshake(t0, 0, *t1, 1);
  CHECK_FALSE(t0.alive(1));  // nothing to tell it by
  REQUIRE(t1->send(0, bytes("last"), bytes("")).is_ok());
  t1.reset();
  std::vector<std::string> got;
  // grace + 400 ms past the close: a report would have come by then.
  CHECK(receive_until_not_ok(t0, transport_clock::now() + 600ms, &got).code() == errc::timeout);
  CHECK(got == std::vector<std::string>{"last"});
  CHECK(take_lost(t0).empty());
}

TEST_CASE("liveness: a forgotten peer is not reported") {
  const setup s(true);
  zmq_transport t0(0, kAnyPort, s.options(0));
  auto t1 = std::make_unique<zmq_transport>(1, kAnyPort, s.options(1));
  t0.connect(1, t1->bound_endpoint());
  t1->connect(0, t0.bound_endpoint());
  handshake(t0, 0, *t1, 1);
  t0.forget_peer(1);
  t1.reset();
  CHECK(receive_until_not_ok(t0, transport_clock::now() + 600ms).code() == errc::timeout);
  CHECK(take_lost(t0).empty());

  // Forgotten while its loss was pending: withdrawn.
  zmq_options lingering = s.options(0);
  lingering.linger = 3000ms;
  auto a = std::make_unique<zmq_transport>(0, kAnyPort, lingering);
  auto b = std::make_unique<zmq_transport>(1, kAnyPort, s.options(1));
  a->connect(1, b->bound_endpoint());
  b->connect(0, a->bound_endpoint());
  handshake(*a, 0, *b, 1);
  b.reset();
  REQUIRE(receive_until_not_ok(*a, transport_clock::now() + 5s).code() == errc::peer_lost);
  a->forget_peer(1);
  CHECK(take_lost(*a).empty());
  // Its queued messages no longer linger: the destructor returns at once, not after 3 s.
  REQUIRE(a->send(1, bytes("h"), bytes("p")).is_ok());
  const auto closing = transport_clock::now();
  a.reset();
  CHECK(ms_since(closing) < 1500);
}

TEST_CASE("liveness: a killed neighbour (SIGKILL) is reported within 500 ms") {
  for (bool curve : {true, false}) {
    CAPTURE(curve);
    const setup s(curve);
    child_peer child(s, /*busy=*/false);
    auto t0 = connect_to(child, s);
    const auto killed = transport_clock::now();
    REQUIRE(::kill(child.pid(), SIGKILL) == 0);
    status st = receive_until_not_ok(*t0, transport_clock::now() + 5s);
    const double latency = ms_since(killed);
    MESSAGE(std::string(curve ? "curve" : "none") << ": SIGKILL reported after " << latency << " ms");
    REQUIRE(st.code() == errc::peer_lost);
    CHECK(latency < 500);
    CHECK_FALSE(t0->alive(1));
    CHECK(take_lost(*t0) == std::vector<int>{1});
    CHECK_FALSE(t0->alive(1));
  }
}

TEST_CASE("liveness: a stopped neighbour (SIGSTOP) is reported by heartbeat within 2 s") {
  for (bool curve : {true, false}) {
    CAPTURE(curve);
    const setup s(curve);
    child_peer child(s, /*busy=*/false);
    auto t0 = connect_to(child, s);
    const auto stopped = transport_clock::now();
    REQUIRE(::kill(child.pid(), SIGSTOP) == 0);
    status st = receive_until_not_ok(*t0, transport_clock::now() + 5s);
    const double latency = ms_since(stopped);
    MESSAGE(std::string(curve ? "curve" : "none") << ": SIGSTOP reported after " << latency << " ms");
    REQUIRE(st.code() == errc::peer_lost);
    CHECK(latency >= 500);  // only the heartbeat could find it: nothing closed
    CHECK(latency < 2000);  // interval + timeout + RTO + two judgements = 1400 ms
    CHECK(take_lost(*t0) == std::vector<int>{1});
    CHECK_FALSE(t0->alive(1));
    // Once: reconnecting to the stopped process (whose kernel still accepts TCP connections)
    // never completes a handshake, so nothing more is reported. grace + 400 ms.
    CHECK(receive_until_not_ok(*t0, transport_clock::now() + 600ms).code() == errc::timeout);
    CHECK(take_lost(*t0).empty());
  }  // ~child_peer: SIGCONT, SIGKILL, waitpid
}

TEST_CASE("liveness: a busy neighbour (3 s without calling its transport) is not reported") {
  const setup s(true);
  child_peer child(s, /*busy=*/true);
  auto t0 = connect_to(child, s);
  const auto start = transport_clock::now();
  inbound_frames in;
  CHECK(t0->alive(1));
  // Its I/O thread answers our PINGs meanwhile: no loss for 3 s (3.75 heartbeat timeouts), then
  // its "awake". Alive all along (transport_liveness::alive: what a round waits on, live_wait).
  status st = t0->receive(start + 2s, in);
  REQUIRE(st.code() == errc::timeout);
  CHECK(t0->alive(1));
  st = t0->receive(start + 10s, in);
  const double waited = ms_since(start);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  CHECK(text(in.header) == "awake");
  CHECK(waited > 2500);
  CHECK(take_lost(*t0).empty());
}

TEST_CASE("liveness: a neighbour behind a slow link is not reported while our data to it drains") {
  for (bool curve : {true, false}) {
    CAPTURE(curve);
    const setup s(curve);
    child_peer child(s, /*busy=*/false);
    zmq_options o = s.options(0);
    // The kernel paces our connection to the child: a slow link. (Loopback's 64 kB segments leave
    // in bursts of two, so the pace must be high enough that a burst takes well under a timeout:
    // at 400 kB/s, 0.3 s.)
    o.pace_bytes_per_s = 400'000;
    o.unpaced_burst_bytes = 0;
    REQUIRE_FALSE(child.endpoint().empty());
    auto t0 = std::make_unique<zmq_transport>(0, kAnyPort, o);
    child.tell(t0->bound_endpoint());
    t0->connect(1, child.endpoint());
    REQUIRE(t0->send(1, bytes("ping"), bytes("")).is_ok());
    inbound_frames in;
    REQUIRE(t0->receive(transport_clock::now() + 10s, in).is_ok());
    REQUIRE(text(in.header) == "ready");
    // 16 messages of 200 kB: 8 s at the pace. The child's I/O thread reads them into its queue
    // (up to its receive_hwm) as they come; our PINGs wait behind them on the connection.
    const std::vector<std::byte> block(200'000, std::byte{5});
    for (int i = 0; i < 16; ++i) REQUIRE(t0->send(1, bytes("data"), block).is_ok());
    const auto start = transport_clock::now();
    const status st = receive_until_not_ok(*t0, start + 6s);
    MESSAGE(std::string(curve ? "curve" : "none") << ": " << st.to_string() << " after " << ms_since(start) << " ms");
    CHECK(st.code() == errc::timeout);
    CHECK(take_lost(*t0).empty());
  }
}

TEST_CASE("liveness: faulty_transport::lose injects a lost peer") {
  inproc_network net(3);
  inproc_transport t0 = net.endpoint(0), t1 = net.endpoint(1);
  faulty_transport f(t0, {});
  REQUIRE(t1.send(0, bytes("h"), bytes("p")).is_ok());
  f.lose(2);
  f.lose(1);
  f.lose(2);
  inbound_frames in;
  status s = f.receive(transport_clock::now() + 1s, in);
  CHECK(s.code() == errc::peer_lost);
  CHECK(s.message() == "lost the link to rank 1, rank 2 (injected)");
  CHECK(f.receive(transport_clock::now() + 1s, in).code() == errc::peer_lost);  // until taken
  f.forget_peer(2);
  CHECK(take_lost(f) == std::vector<int>{1});
  CHECK(take_lost(f).empty());
  REQUIRE(f.receive(transport_clock::now() + 1s, in).is_ok());  // the message still arrives
  CHECK(in.peer == 1);
  CHECK(f.receive(transport_clock::now() + 10ms, in).code() == errc::timeout);
}
