// Security of the ZeroMQ transport (docs/security.md): CURVE links, the ZAP handler that admits only
// the peers' keys, messages attributed to the rank a key proves, refusals counted and logged, key
// files; and, with and without CURVE, a second connection claiming a connected peer's routing id
// never takes over its link. Everything on loopback with ports picked by ZeroMQ.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.hpp>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <random>
#include <string>
#include <thread>

#include "core/errors.hpp"
#include "gossip/exchange.hpp"
#include "gossip/zmq/curve_keys.hpp"
#include "gossip/zmq/transport.hpp"
#include "tests/gossip/hook_events.hpp"
#include "tests/gossip/spawn.hpp"
#include "tests/gossip/test_bytes.hpp"

using namespace qgossip;
using qgossip::testing::kAnyPort;
using qgossip::testing::bytes;
using qgossip::testing::text;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

zmq_options quick() {
  zmq_options o;
  o.linger = 200ms;
  o.send_timeout = 2000ms;
  return o;
}

// Keypairs of ranks 0..n-1.
std::vector<curve_keypair> keypairs(int n) {
  std::vector<curve_keypair> k;
  for (int r = 0; r < n; ++r) k.push_back(generate_curve_keypair());
  return k;
}

// Options for rank `rank` that admit (and connect to) the ranks in `peers`.
zmq_options curve_options(const std::vector<curve_keypair>& k, int rank, const std::vector<int>& peers) {
  zmq_options o = quick();
  zmq_curve_keys c;
  c.public_key = k[static_cast<std::size_t>(rank)].public_key;
  c.secret_key = k[static_cast<std::size_t>(rank)].secret_key;
  for (int p : peers) c.peers[p] = k[static_cast<std::size_t>(p)].public_key;
  o.curve = c;
  return o;
}

// Polls until pred() holds or `limit` passes; the guard counts on its own thread.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

int port_of(const std::string& endpoint) { return std::stoi(endpoint.substr(endpoint.rfind(':') + 1)); }

// A raw TCP connection to 127.0.0.1:port that writes `junk` and closes.
void raw_tcp(int port, const std::string& junk) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  if (!junk.empty()) CHECK(::write(fd, junk.data(), junk.size()) == static_cast<ssize_t>(junk.size()));
  std::this_thread::sleep_for(20ms);
  ::close(fd);
}

// A DEALER that can lie: any routing id, CURVE with any keypair or none. A send gives up after
// 500 ms: once the node has refused the handshake, ZeroMQ leaves the DEALER no peer, and a send
// without a time-out would wait for one for ever (seen: 1 run in 92 under load).
struct raw_client {
  zmq::context_t ctx;
  zmq::socket_t s{ctx, zmq::socket_type::dealer};
  raw_client(const std::string& endpoint, const std::string& routing_id, const curve_keypair* keys = nullptr,
             const std::string& server_key = "") {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::sndtimeo, 500);
    if (!routing_id.empty()) s.set(zmq::sockopt::routing_id, routing_id);
    if (keys) {
      s.set(zmq::sockopt::curve_serverkey, server_key);
      s.set(zmq::sockopt::curve_publickey, keys->public_key);
      s.set(zmq::sockopt::curve_secretkey, keys->secret_key);
    }
    s.connect(endpoint);
  }
  void send(std::span<const std::byte> header, std::span<const std::byte> payload) {
    if (s.send(zmq::buffer(header.data(), header.size()), zmq::send_flags::sndmore))
      (void)s.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
  }
};

// A well-formed message (valid CRC) of the run `run_id` claiming to come from `sender`.
struct forged {
  std::vector<std::byte> payload;
  std::array<std::byte, kWireHeaderBytes> header{};
  forged(std::uint64_t run_id, std::uint32_t sender, std::uint64_t iteration, std::size_t bytes, std::byte fill) {
    payload.assign(bytes, fill);
    wire_header h;
    h.run_id = run_id;
    h.sender = sender;
    h.count = static_cast<std::uint32_t>(bytes / 4);
    h.iteration = iteration;
    h.codec = 1;
    h.payload_bytes = static_cast<std::uint32_t>(bytes);
    encode_header(h, payload, header);
  }
};

// Everything t receives within `window`, as (peer, payload text).
std::vector<std::pair<int, std::string>> drain(zmq_transport& t, std::chrono::milliseconds window) {
  std::vector<std::pair<int, std::string>> got;
  inbound_frames in;
  const auto end = transport_clock::now() + window;
  for (;;) {
    status s = t.receive(end, in);
    if (s.code() == errc::timeout) break;
    if (s.is_ok()) got.emplace_back(in.peer, text(in.payload));
  }
  return got;
}

std::vector<std::string> refusal_lines(zmq_transport& t) {
  std::vector<std::string> lines;
  t.take_refusal_log(lines);
  return lines;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("curve: keys are Z85 text, a public key follows from its secret key") {
  REQUIRE(curve_available());
  const curve_keypair k = generate_curve_keypair();
  CHECK(k.public_key.size() == 40);
  CHECK(k.secret_key.size() == 40);
  CHECK(is_curve_key(k.public_key));
  CHECK(curve_public_key(k.secret_key) == k.public_key);
  CHECK(generate_curve_keypair().secret_key != k.secret_key);
  CHECK(!is_curve_key(k.public_key.substr(1)));
  CHECK(!is_curve_key(std::string(40, '"')));
  CHECK_THROWS_AS((void)curve_public_key("short"), config_error);
}

TEST_CASE("curve: key files are written 0600 (secret) and 0644 (public) and read back; loose modes are refused") {
  const fs::path dir = fs::temp_directory_path() / ("qgossip-keys-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const curve_keypair k = generate_curve_keypair();
  write_curve_keypair(dir / "keys", 3, k);
  struct stat st {};
  REQUIRE(::stat((dir / "keys").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::stat(secret_key_path(dir / "keys", 3).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat(public_key_path(dir / "keys", 3).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  CHECK(secret_key_path(dir / "keys", 3).filename() == "node-3.key");
  CHECK(read_curve_secret_key(secret_key_path(dir / "keys", 3)) == k.secret_key);
  CHECK(read_curve_public_key(public_key_path(dir / "keys", 3)) == k.public_key);

  const fs::path secret = secret_key_path(dir / "keys", 3);
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const std::string loose = "may be read or written by group or others (mode 0640): run `chmod 600 " + secret.string() + "`";
  CHECK_THROWS_WITH_AS((void)read_curve_secret_key(secret), doctest::Contains(loose.c_str()), config_error);
  const std::string missing = "cannot read the CURVE public key " + (dir / "keys" / "node-9.pub").string();
  CHECK_THROWS_WITH_AS((void)read_curve_public_key(dir / "keys" / "node-9.pub"), doctest::Contains(missing.c_str()),
                       config_error);
  std::ofstream(dir / "bad.pub") << "# a comment\nnot-a-key\n";
  const std::string malformed = (dir / "bad.pub").string() + " is malformed";
  CHECK_THROWS_WITH_AS((void)read_curve_public_key(dir / "bad.pub"), doctest::Contains(malformed.c_str()), config_error);
  std::ofstream(dir / "two.pub") << k.public_key << "\n" << k.public_key << "\n";
  CHECK_THROWS_WITH_AS((void)read_curve_public_key(dir / "two.pub"), doctest::Contains("found 2 lines"), config_error);
  fs::remove_all(dir);
}

TEST_CASE("curve: two transports exchange messages, each named by the rank its key proves") {
  const auto k = keypairs(2);
  zmq_transport t0(0, kAnyPort, curve_options(k, 0, {1}));
  zmq_transport t1(1, kAnyPort, curve_options(k, 1, {0}));
  t0.connect(1, t1.bound_endpoint());
  t1.connect(0, t0.bound_endpoint());
  CHECK(t0.secure());
  REQUIRE(t1.send(0, bytes("h1"), bytes("from one")).is_ok());
  REQUIRE(t0.send(1, bytes("h0"), bytes("from zero")).is_ok());
  inbound_frames in;
  REQUIRE(t0.receive(transport_clock::now() + 5s, in).is_ok());
  CHECK(in.peer == 1);
  CHECK(text(in.header) == "h1");
  CHECK(text(in.payload) == "from one");
  REQUIRE(t1.receive(transport_clock::now() + 5s, in).is_ok());
  CHECK(in.peer == 0);
  CHECK(text(in.payload) == "from zero");
  const transport_refusals r = t0.refusals();
  CHECK(r.auth + r.handshake + r.identity == 0);
}

TEST_CASE("curve: bad key sets are configuration errors") {
  const auto k = keypairs(3);
  zmq_options o = curve_options(k, 0, {1, 2});
  o.curve->peers[2] = k[1].public_key;  // two ranks, one key
  CHECK_THROWS_WITH_AS(zmq_transport(0, kAnyPort, o), doctest::Contains("has the same CURVE public key as rank"),
                       config_error);
  o = curve_options(k, 0, {1});
  o.curve->public_key = k[1].public_key;
  CHECK_THROWS_WITH_AS(zmq_transport(0, kAnyPort, o), doctest::Contains("does not belong to its secret key"),
                       config_error);
  zmq_transport t(0, kAnyPort, curve_options(k, 0, {1}));
  CHECK_THROWS_WITH_AS(t.connect(2, "tcp://127.0.0.1:5000"), doctest::Contains("no CURVE public key for its neighbour rank 2"),
                       config_error);
}

TEST_CASE("curve: a client whose key is not listed is refused, counted, logged, and delivers nothing") {
  const auto k = keypairs(3);
  zmq_transport t0(0, kAnyPort, curve_options(k, 0, {1}));
  zmq_transport t1(1, kAnyPort, curve_options(k, 1, {0}));
  t1.connect(0, t0.bound_endpoint());
  // Rank 2 has a valid keypair and knows rank 0's public key, but rank 0 does not list it.
  zmq_transport t2(2, kAnyPort, curve_options(k, 2, {0}));
  t2.connect(0, t0.bound_endpoint());
  REQUIRE(t2.send(0, bytes("h2"), bytes("let me in")).is_ok());
  REQUIRE(eventually([&] { return t0.refusals().auth >= 1; }));
  REQUIRE(t1.send(0, bytes("h1"), bytes("genuine")).is_ok());
  const auto got = drain(t0, 500ms);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == std::pair<int, std::string>(1, "genuine"));
  const auto lines = refusal_lines(t0);
  CHECK(any_contains(lines, "refused a connection from 127.0.0.1: its CURVE public key " + k[2].public_key +
                                " is not one of this node's peers' (ranks 1) (auth)"));
  CHECK(refusal_lines(t0).empty());  // taken once
}

TEST_CASE("curve: a plain ZeroMQ client, a client without this node's key and raw TCP garbage are refused as handshakes") {
  const auto k = keypairs(2);
  zmq_transport t0(0, kAnyPort, curve_options(k, 0, {1}));
  const std::string ep = t0.bound_endpoint();
  {
    raw_client plain(ep, "1");  // NULL mechanism, claims rank 1
    plain.send(bytes("h"), bytes("p"));
    REQUIRE(eventually([&] { return t0.refusals().handshake >= 1; }));
  }
  const std::uint64_t before = t0.refusals().handshake;
  {
    const curve_keypair stranger = generate_curve_keypair();
    raw_client wrong(ep, "", &k[1], stranger.public_key);  // a listed key, but the wrong server key
    REQUIRE(eventually([&] { return t0.refusals().handshake > before; }));
  }
  const std::uint64_t before_raw = t0.refusals().handshake;
  raw_tcp(port_of(ep), "GET / HTTP/1.0\r\n\r\n");       // not ZeroMQ (no 0xff): ZMTP 1.0 is refused
  raw_tcp(port_of(ep), std::string("\xff\x13garbage", 9));  // a broken greeting
  raw_tcp(port_of(ep), "");                               // connects, says nothing, leaves
  REQUIRE(eventually([&] { return t0.refusals().handshake >= before_raw + 3; }));
  CHECK(drain(t0, 200ms).empty());
  const auto lines = refusal_lines(t0);
  // The plain client: the server sees the mechanism mismatch, or the client, seeing it first, resets.
  CHECK((any_contains(lines, "the client does not use CURVE") || any_contains(lines, "ended during the handshake")));
  CHECK(any_contains(lines, "does not have this node's public key"));
  CHECK(any_contains(lines, "closed before completing a ZeroMQ handshake"));
  CHECK(t0.refusals().auth == 0);
}

TEST_CASE("curve: a client with a listed key claiming another rank's routing id is refused (identity)") {
  const auto k = keypairs(3);
  zmq_transport t0(0, kAnyPort, curve_options(k, 0, {1, 2}));
  zmq_transport t1(1, kAnyPort, curve_options(k, 1, {0}));
  t1.connect(0, t0.bound_endpoint());
  REQUIRE(t1.send(0, bytes("h"), bytes("genuine 1")).is_ok());
  REQUIRE(drain(t0, 500ms) == std::vector<std::pair<int, std::string>>{{1, "genuine 1"}});
  {
    // Rank 2's keypair (an insider), routing id "1" while rank 1 is connected.
    raw_client liar(t0.bound_endpoint(), "1", &k[2], k[0].public_key);
    liar.send(bytes("h"), bytes("i am rank 1"));
    std::this_thread::sleep_for(100ms);
    REQUIRE(t1.send(0, bytes("h"), bytes("genuine 2")).is_ok());
    CHECK(drain(t0, 500ms) == std::vector<std::pair<int, std::string>>{{1, "genuine 2"}});
    CHECK(t0.refusals().identity == 1);  // counted as receive() meets it
    CHECK(any_contains(refusal_lines(t0),
                       "on a link authenticated as rank 2 that claims routing id 1 (identity)"));
  }
  // The same key without a routing id: its messages are rank 2's, as its key proves.
  raw_client honest(t0.bound_endpoint(), "", &k[2], k[0].public_key);
  honest.send(bytes("h"), bytes("rank 2 here"));
  CHECK(drain(t0, 500ms) == std::vector<std::pair<int, std::string>>{{2, "rank 2 here"}});
}

namespace {

// Sets *p (if any) once: at set(), or when it goes out of scope.
struct set_once {
  std::promise<void>* p;
  void set() {
    if (p) p->set_value();
    p = nullptr;
  }
  ~set_once() { set(); }
};

// Ranks 0 and 1 run `rounds` exchange rounds (each sends pattern(rank, it) of 256 bytes). After
// round 0, `attack(endpoint of rank 0)` runs while rank 1 waits; then the rounds go on. Returns the
// exchange stats of rank 0, after checking that every payload it delivered is rank 1's own.
exchange_stats run_under_attack(zmq_options o0, zmq_options o1,
                                const std::function<void(const std::string&)>& attack, int rounds = 4) {
  constexpr std::size_t kBytes = 256;
  zmq_transport t0(0, kAnyPort, o0);
  zmq_transport t1(1, kAnyPort, o1);
  t0.connect(1, t1.bound_endpoint());
  t1.connect(0, t0.bound_endpoint());
  std::promise<void> attacked;
  std::shared_future<void> attack_done = attacked.get_future().share();
  std::promise<void> round0;
  std::shared_future<void> round0_done = round0.get_future().share();
  exchange_stats stats0;
  std::vector<std::string> log0;
  // Whatever way a rank's body ends (a failed round, a REQUIRE thrown in the attack), what the
  // others wait for is set, and every wait is bounded: a failure fails the case, it never hangs it.
  auto results = test::spawn(3, [&](int who) -> std::string {
    if (who == 2) {  // the attacker
      set_once done{&attacked};
      if (round0_done.wait_for(30s) != std::future_status::ready) return "the attacker: no round 0 within 30 s";
      attack(t0.bound_endpoint());
      std::this_thread::sleep_for(200ms);  // its messages reach rank 0 before rank 1's next ones
      return "";
    }
    set_once first_round{who == 0 ? &round0 : nullptr};  // rank 0's round 0 over (or its body left)
    exchange_options eo;
    eo.rank = who;
    eo.neighbours = {1 - who};
    eo.run_id = 42;
    eo.first_deadline = eo.round_deadline = 10000ms;
    testing::hook_events events;
    if (who == 0) events.on_log = [&](const std::string& line) { log0.push_back(line); };
    exchange ex(who == 0 ? static_cast<transport&>(t0) : t1, eo, &events);
    std::vector<inbound_message> out;
    for (int it = 0; it < rounds; ++it) {
      if (it == 1 && who == 1 && attack_done.wait_for(30s) != std::future_status::ready)
        return "rank 1: the attack did not end within 30 s";
      const auto mine = test::pattern(who, static_cast<std::uint64_t>(it), message_kind::train, kBytes);
      status s = ex.round(message_kind::train, static_cast<std::uint64_t>(it), {1, 0, kBytes / 4, mine}, out);
      if (!s) return "rank " + std::to_string(who) + " round " + std::to_string(it) + ": " + s.to_string();
      if (out[0].payload != test::pattern(1 - who, static_cast<std::uint64_t>(it), message_kind::train, kBytes))
        return "rank " + std::to_string(who) + " delivered a payload that is not rank " + std::to_string(1 - who) +
               "'s in round " + std::to_string(it);
      if (it == 0) first_round.set();
    }
    if (who == 0) {
      // What the attacker sent after the last round is still queued: let the exchange see it.
      std::this_thread::sleep_for(100ms);
      stats0 = ex.stats();
    }
    return "";
  });
  for (const auto& r : results) CHECK(r == "");
  for (const auto& line : log0) MESSAGE(line);
  return stats0;
}

}  // namespace

TEST_CASE("security none: a second connection with a connected peer's routing id does not take over its link") {
  // The attack of the issue: connect with rank 1's routing id (ZeroMQ handed the link over while
  // ZMQ_ROUTER_HANDOVER was on, and the run failed 30 s later), then send a well-formed message
  // claiming to be rank 1, with a valid checksum, for each coming round.
  exchange_stats st = run_under_attack(quick(), quick(), [](const std::string& endpoint) {
    raw_client impostor(endpoint, "1");
    for (std::uint64_t it = 1; it < 4; ++it) {
      forged f(42, 1, it, 256, std::byte{0x66});
      impostor.send(f.header, f.payload);
    }
    std::this_thread::sleep_for(100ms);  // before the socket closes (linger 0)
  });
  CHECK(st.rounds == 4);
  CHECK(st.messages_delivered == 4);  // every one rank 1's own payload (checked in run_under_attack)
  // With ZMQ_ROUTER_HANDOVER off, ZeroMQ (4.3) leaves the second connection unnamed and delivers
  // nothing it sends: the exchange never even sees the forged messages.
  CHECK(st.rejected_total() == 0);
}

TEST_CASE("security none: ZeroMQ delivers nothing from a second connection with a connected peer's routing id") {
  zmq_transport t0(0, kAnyPort, quick());
  zmq_transport t1(1, kAnyPort, {{0, t0.bound_endpoint()}}, quick());
  REQUIRE(t1.send(0, bytes("h"), bytes("genuine 1")).is_ok());
  REQUIRE(drain(t0, 500ms) == std::vector<std::pair<int, std::string>>{{1, "genuine 1"}});
  raw_client impostor(t0.bound_endpoint(), "1");
  for (int i = 0; i < 3; ++i) impostor.send(bytes("h"), bytes("impostor"));
  std::this_thread::sleep_for(100ms);
  REQUIRE(t1.send(0, bytes("h"), bytes("genuine 2")).is_ok());
  CHECK(drain(t0, 500ms) == std::vector<std::pair<int, std::string>>{{1, "genuine 2"}});
}

TEST_CASE("security none: a silent connection with a connected peer's routing id changes nothing") {
  exchange_stats st = run_under_attack(quick(), quick(), [](const std::string& endpoint) {
    raw_client squatter(endpoint, "1");
    std::this_thread::sleep_for(300ms);
  });
  CHECK(st.rounds == 4);
  CHECK(st.messages_delivered == 4);
}

TEST_CASE("security curve: impostors without an allowed key are refused and the genuine link keeps working") {
  const auto k = keypairs(2);
  const curve_keypair stranger = generate_curve_keypair();
  exchange_stats st = run_under_attack(curve_options(k, 0, {1}), curve_options(k, 1, {0}), [&](const std::string& endpoint) {
    raw_client plain(endpoint, "1");                                     // no CURVE at all
    raw_client unlisted(endpoint, "1", &stranger, k[0].public_key);      // CURVE, a key nobody listed
    for (std::uint64_t it = 1; it < 4; ++it) {
      forged f(42, 1, it, 256, std::byte{0x66});
      plain.send(f.header, f.payload);
      unlisted.send(f.header, f.payload);
    }
    raw_tcp(port_of(endpoint), std::string(64, '\x42'));
    std::this_thread::sleep_for(300ms);
  });
  CHECK(st.rounds == 4);
  CHECK(st.messages_delivered == 4);
  CHECK(st.rejected_for(reject_reason::auth) >= 1);
  CHECK(st.rejected_for(reject_reason::handshake) >= 2);
  CHECK(st.rejected_for(reject_reason::crc) + st.rejected_for(reject_reason::peer_mismatch) == 0);
}

TEST_CASE("security curve: an insider claiming a connected peer's routing id is refused message by message") {
  // Rank 0 lists rank 2 (a neighbour that does not take part here); whoever holds rank 2's key
  // claims rank 1's routing id and sends messages for rank 1's rounds.
  const auto k = keypairs(3);
  zmq_options o0 = curve_options(k, 0, {1, 2});
  exchange_stats st = run_under_attack(o0, curve_options(k, 1, {0}), [&](const std::string& endpoint) {
    raw_client insider(endpoint, "1", &k[2], k[0].public_key);
    for (std::uint64_t it = 1; it < 4; ++it) {
      forged f(42, 1, it, 256, std::byte{0x66});
      insider.send(f.header, f.payload);
    }
    std::this_thread::sleep_for(300ms);
  });
  CHECK(st.rounds == 4);
  CHECK(st.messages_delivered == 4);
  CHECK(st.rejected_for(reject_reason::identity) == 3);
}

TEST_CASE("a flood of refusals is logged a few lines at a time, all of it counted") {
  const auto k = keypairs(2);
  zmq_transport t0(0, kAnyPort, curve_options(k, 0, {1}));
  for (int i = 0; i < 30; ++i) raw_tcp(port_of(t0.bound_endpoint()), "garbage that is not ZeroMQ");
  REQUIRE(eventually([&] { return t0.refusals().handshake >= 30; }));
  const auto lines = refusal_lines(t0);
  CHECK(lines.size() <= 10);
  CHECK(lines.size() >= 1);
}

TEST_CASE("curve: a payload of exactly max_payload_bytes arrives (the encryption's overhead is allowed for)") {
  const auto k = keypairs(2);
  zmq_options o0 = curve_options(k, 0, {1});
  // Smaller than the CURVE handshake's own commands: the handshake must still get through.
  o0.max_payload_bytes = 64;
  {
    zmq_transport receiver(0, kAnyPort, o0);
    zmq_transport sender(1, kAnyPort, {{0, receiver.bound_endpoint()}}, curve_options(k, 1, {0}));
    const std::vector<std::byte> small(64, std::byte{3});
    REQUIRE(sender.send(0, bytes("h"), small).is_ok());
    inbound_frames in;
    REQUIRE(receiver.receive(transport_clock::now() + 5s, in).is_ok());
    CHECK(in.payload == small);
  }
  o0.max_payload_bytes = 1024;
  zmq_transport receiver(0, kAnyPort, o0);
  zmq_transport sender(1, kAnyPort, {{0, receiver.bound_endpoint()}}, curve_options(k, 1, {0}));
  const std::vector<std::byte> full(1024, std::byte{7});
  REQUIRE(sender.send(0, bytes("h"), full).is_ok());
  inbound_frames in;
  REQUIRE(receiver.receive(transport_clock::now() + 5s, in).is_ok());
  CHECK(in.peer == 1);
  CHECK(in.payload == full);
}
