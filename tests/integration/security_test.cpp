// Attacks on a real run (docs/security.md): `qgossip launch` of a ring of 4 on loopback TCP while
// this process, holding no allowed key, throws at rank 0 what the issue measured: raw TCP
// connections writing 10,000 random frames, ZeroMQ clients claiming rank 1's routing id (one silent,
// one sending well-formed updates with a valid checksum for the coming rounds, built with the
// project's own wire and codec code), and a CURVE client with a key nobody listed. With the default
// security (curve) the run must finish, every replica equal its owner, and the refusals be counted;
// with security none, the identity takeover must still fail. Also: key files, `qgossip keys`.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.hpp>

#include <array>
#include <chrono>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "algorithms/compress/compressor.hpp"
#include "gossip/wire.hpp"
#include "gossip/zmq/curve_keys.hpp"
#include "node/log/replica_check.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int kNodes = 4;
constexpr std::uint32_t kParams = 32 * 32 + 32 + 32 * 4 + 4;  // mlp 32-32-4

std::string ring_config(const fs::path& out, int base_port, const std::string& security) {
  std::ostringstream y;
  y << "name: attacked\n"
    << "seed: 7\n"
    << "topology: {graph: ring, n: " << kNodes << ", base_port: " << base_port << "}\n"
    << "algorithm: dcd\n"
    << "compressor: identity\n"
    << "model: {kind: mlp, hidden: [32]}\n"
    << "data:\n  dataset: synthetic\n  synthetic: {train: 8000, test: 2000, dim: 32, classes: 4, noise: 1.0}\n"
    // 992 rounds, each at least 5 ms (the emulated delay): a few seconds to attack in.
    << "train: {epochs: 16, batch: 32, lr: 0.1, log_every: 5, eval_every: 4}\n"
    << "network: {round_timeout_s: 20, start_timeout_s: 30, linger_s: 5, emulate: {delay_ms: 5}, security: "
    << security << "}\n"
    << "output: {dir: " << out.string() << "}\n";
  return y.str();
}

std::string text_field(const nlohmann::ordered_json& j, const char* key) {
  const std::string* v = json_string(j, key);
  REQUIRE(v != nullptr);
  return *v;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::seconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// The last iteration in a node's CSV (0 before its first row).
std::uint64_t last_iteration(const fs::path& csv) {
  std::istringstream in(read_file(csv));
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) last = line;
  return last.empty() ? 0 : std::stoull(last.substr(0, last.find(',')));
}

// A raw TCP connection to 127.0.0.1:port writing `frames` random ZMTP-looking frames (a random flag
// byte, a random length, random bytes).
void garbage_connection(int port, int frames, std::mt19937& rng) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::uniform_int_distribution<int> byte(0, 255), len(1, 200);
    std::string out;
    for (int f = 0; f < frames; ++f) {
      const int n = len(rng);
      out += static_cast<char>(byte(rng) & 1);
      out += static_cast<char>(n);
      for (int i = 0; i < n; ++i) out += static_cast<char>(byte(rng));
    }
    // The node may close the connection at its first bad byte: a failed write is part of the test.
    (void)!::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }
  ::close(fd);
}

// A DCD update claiming to come from `sender`, as rank 0 expects it for `iteration` (the run's id,
// the identity codec's id, tag and count, a valid CRC), carrying a poisoned difference.
struct forged_update {
  std::vector<std::byte> payload;
  std::array<std::byte, kWireHeaderBytes> header{};
  forged_update(std::uint64_t run_id, std::uint32_t sender, std::uint64_t iteration) {
    auto codec = make_compressor(codec_spec{"identity", {}});
    const std::vector<float> poison(kParams, 1000.0f);
    codec->encode(poison, codec_context{7, sender, iteration}, payload);
    wire_header h;
    h.run_id = run_id;
    h.sender = sender;
    h.count = kParams;
    h.iteration = iteration;
    h.codec = static_cast<std::uint16_t>(codec->id());
    h.codec_tag = codec->params_tag();
    h.payload_bytes = payload.size();
    encode_header(h, payload, header);
  }
};

struct attack_report {
  int garbage_connections = 0;
  int garbage_frames = 0;
  int forged_sent = 0;
};

// Everything from a process without an allowed key, aimed at rank 0 (port) while the run goes on.
attack_report attack(const fs::path& run_dir, int port, std::uint64_t run_id) {
  attack_report rep;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  std::mt19937 rng(12345);
  zmq::context_t ctx;
  // 1. Connect with rank 1's routing id and say nothing (before the fix: the link was handed over).
  zmq::socket_t silent(ctx, zmq::socket_type::dealer);
  silent.set(zmq::sockopt::routing_id, "1");
  silent.set(zmq::sockopt::linger, 0);
  silent.connect(endpoint);
  // 2. 50 raw TCP connections writing 10,000 random frames in all.
  for (int c = 0; c < 50; ++c) {
    garbage_connection(port, 200, rng);
    ++rep.garbage_connections;
    rep.garbage_frames += 200;
  }
  // 3. Rank 1's routing id again, sending well-formed updates for the coming rounds; and a CURVE
  //    client with a fresh key, which knows rank 0's public key (public keys are public).
  zmq::socket_t impostor(ctx, zmq::socket_type::dealer);
  impostor.set(zmq::sockopt::routing_id, "1");
  impostor.set(zmq::sockopt::linger, 0);
  impostor.set(zmq::sockopt::sndtimeo, 100);
  impostor.connect(endpoint);
  const curve_keypair mine = generate_curve_keypair();
  zmq::socket_t stranger(ctx, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::routing_id, "1");
  stranger.set(zmq::sockopt::linger, 0);
  stranger.set(zmq::sockopt::sndtimeo, 100);
  const fs::path server_key = public_key_path(run_dir / "keys", 0);  // none: no keys, rank 0 is not CURVE
  stranger.set(zmq::sockopt::curve_serverkey,
               fs::exists(server_key) ? read_curve_public_key(server_key) : generate_curve_keypair().public_key);
  stranger.set(zmq::sockopt::curve_publickey, mine.public_key);
  stranger.set(zmq::sockopt::curve_secretkey, mine.secret_key);
  stranger.connect(endpoint);
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < until) {
    const std::uint64_t next = last_iteration(run_dir / "node-0.csv") + 1;
    for (std::uint64_t it = next; it < next + 8; ++it) {
      forged_update f(run_id, 1, it);
      for (zmq::socket_t* s : {&impostor, &stranger}) {
        if (s->send(zmq::buffer(f.header), zmq::send_flags::sndmore | zmq::send_flags::dontwait) &&
            s->send(zmq::buffer(f.payload), zmq::send_flags::none))
          ++rep.forged_sent;
      }
    }
    std::this_thread::sleep_for(50ms);
  }
  return rep;
}

struct attacked_run {
  int exit_code = -1;
  std::string output;
  fs::path dir;
  attack_report report;
  bool attacked_mid_run = false;
};

attacked_run launch_under_attack(const temp_dir& tmp, const std::string& security) {
  attacked_run run;
  const int port = free_port_range(kNodes);
  const fs::path cfg = tmp.path / (security + ".yaml");
  write_file(cfg, ring_config(tmp.path / "runs", port, security));
  run.dir = tmp.path / "runs" / "attacked";
  background_process launch =
      start_qgossip({"launch", cfg.string(), "--plain", "--no-plot"}, tmp.path / ("launch-" + security + ".txt"));
  // Once rank 0 has logged a few rounds, every link is up: the attack comes mid-run.
  const bool running = wait_until([&] { return last_iteration(run.dir / "node-0.csv") >= 20; }, 60s);
  if (running) {
    const nlohmann::ordered_json meta =
        parse_json_object(read_file(run.dir / "run.json")).value_or(nlohmann::ordered_json::object());
    const std::string* id = json_string(meta, "run_id");
    const std::uint64_t run_id = id ? std::stoull(*id, nullptr, 16) : 0;
    run.report = attack(run.dir, port, run_id);
    run.attacked_mid_run = last_iteration(run.dir / "node-0.csv") < 992;
  }
  run.exit_code = wait_for(launch, 120);
  run.output = read_file(launch.log);
  return run;
}

}  // namespace

TEST_CASE("security curve: attacks without an allowed key change no model and stop no run") {
  temp_dir tmp;
  attacked_run run = launch_under_attack(tmp, "curve");
  INFO(run.output);
  REQUIRE(run.attacked_mid_run);
  CHECK(run.report.garbage_frames == 10000);
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("generated 4 CURVE keypairs") != std::string::npos);
  CHECK(read_file(run.dir / "run.json").find("security: curve") != std::string::npos);
  auto nodes = summaries(run.dir, kNodes);
  for (const auto& [rank, s] : nodes) {
    CAPTURE(rank);
    CHECK(text_field(s, "status") == "ok");
    CHECK(number(s, "test_acc") > 0.9);
  }
  // Everything the attacker sent to rank 0 was refused before it reached the exchange: connections
  // that failed the handshake (raw TCP, the plain ZeroMQ clients) or the ZAP check (the stranger's
  // key); nothing was malformed, had a wrong checksum, or named the wrong sender.
  const nlohmann::ordered_json& r0 = nodes.at(0);
  const std::string detail = text_field(r0, "rejected_detail");
  MESSAGE("curve: rank 0 refused " << number(r0, "rejected") << ": " << detail << "; the attacker sent "
                                   << run.report.garbage_frames << " random frames on " << run.report.garbage_connections
                                   << " connections and " << run.report.forged_sent << " forged updates");
  CHECK(number(r0, "rejected") >= 50);
  CHECK(detail.find("handshake=") != std::string::npos);
  CHECK(detail.find("auth=") != std::string::npos);
  CHECK(detail.find("crc") == std::string::npos);
  CHECK(detail.find("peer_mismatch") == std::string::npos);
  CHECK(detail.find("malformed") == std::string::npos);
  const std::string log0 = read_file(run.dir / "node-0.log");
  CHECK(log0.find("is not one of this node's peers' (ranks 1, 3) (auth)") != std::string::npos);
  // Rate-limited: a few lines per reason and 10 s (then one line counting the rest), not one each.
  std::size_t lines = 0;
  for (std::size_t p = log0.find("(handshake)"); p != std::string::npos; p = log0.find("(handshake)", p + 1)) ++lines;
  CHECK(lines >= 1);
  CHECK(lines <= 20);
  // The other nodes were not attacked and refused nothing.
  for (int r = 1; r < kNodes; ++r) CHECK(number(nodes.at(r), "rejected") == 0);
  // Every replica equals its owner's model: nothing forged was ever applied.
  const replica_check_result check = check_replicas(run.dir);
  CHECK(check.problems.empty());
  CHECK(check.mismatches.empty());
  CHECK(check.copies_kind == "replica");
  CHECK(check.edges_checked == 2 * kNodes);
  // The keys the launcher generated: secret keys 0600 in a 0700 folder, public keys readable.
  struct stat st {};
  REQUIRE(::stat((run.dir / "keys").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  for (int r = 0; r < kNodes; ++r) {
    CAPTURE(r);
    REQUIRE(::stat(secret_key_path(run.dir / "keys", r).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat(public_key_path(run.dir / "keys", r).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
  }
}

TEST_CASE("security none: a connection claiming rank 1's routing id still cannot take over its link") {
  temp_dir tmp;
  attacked_run run = launch_under_attack(tmp, "none");
  INFO(run.output);
  REQUIRE(run.attacked_mid_run);
  CHECK(run.exit_code == 0);
  CHECK(run.output.find("warning: network.security is none") != std::string::npos);
  CHECK(!fs::exists(run.dir / "keys"));
  auto nodes = summaries(run.dir, kNodes);
  for (const auto& [rank, s] : nodes) {
    CAPTURE(rank);
    CHECK(text_field(s, "status") == "ok");
  }
  MESSAGE("none: rank 0 rejected " << number(nodes.at(0), "rejected") << ": "
                                   << text_field(nodes.at(0), "rejected_detail") << "; the attacker sent "
                                   << run.report.forged_sent << " forged updates as rank 1");
  const replica_check_result check = check_replicas(run.dir);
  CHECK(check.mismatches.empty());
  CHECK(check.problems.empty());
  CHECK(check.edges_checked == 2 * kNodes);
  CHECK(read_file(run.dir / "node-0.log").find("warning: network.security is none") != std::string::npos);
}

TEST_CASE("qgossip keys writes every rank's keypair once; a node needs its key files, private") {
  temp_dir tmp;
  const int port = free_port_range(kNodes);
  const fs::path cfg = tmp.path / "keys.yaml";
  write_file(cfg, ring_config(tmp.path / "runs", port, "curve"));
  const fs::path keys = tmp.path / "runs" / "attacked" / "keys";

  // The setting is checked like any other, and recorded in the resolved config (the run id).
  process_result bad = run_qgossip({"keys", "--config", cfg.string(), "--set", "network.security=tls"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("security") != std::string::npos);
  CHECK(bad.output.find("curve") != std::string::npos);

  // A node started alone without keys: exit 2, naming the file and what to do.
  process_result r = run_qgossip({"run", "--config", cfg.string(), "--rank", "0"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cannot read the CURVE secret key " + secret_key_path(keys, 0).string()) != std::string::npos);
  CHECK(r.output.find("qgossip keys --config") != std::string::npos);

  r = run_qgossip({"keys", "--config", cfg.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("wrote 4 CURVE keypairs to " + keys.string()) != std::string::npos);
  for (int rank = 0; rank < kNodes; ++rank) {
    struct stat st {};
    REQUIRE(::stat(secret_key_path(keys, rank).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(is_curve_key(read_curve_public_key(public_key_path(keys, rank))));
  }
  const std::string before = read_file(secret_key_path(keys, 2));
  r = run_qgossip({"keys", "--config", cfg.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("exists already") != std::string::npos);
  CHECK(read_file(secret_key_path(keys, 2)) == before);
  r = run_qgossip({"keys", "--config", cfg.string(), "--out", (tmp.path / "elsewhere").string()});
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(public_key_path(tmp.path / "elsewhere", 3)));
  // --missing (what configs/slurm/train.sbatch runs once per job) makes only the missing pairs.
  fs::remove(secret_key_path(keys, 1));
  fs::remove(public_key_path(keys, 1));
  r = run_qgossip({"keys", "--config", cfg.string(), "--missing"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(keys.string() + "/: 1 of 4 CURVE keypairs were missing and were made") != std::string::npos);
  CHECK(is_curve_key(read_curve_public_key(public_key_path(keys, 1))));
  CHECK(read_file(secret_key_path(keys, 2)) == before);
  r = run_qgossip({"keys", "--config", cfg.string(), "--missing"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("0 of 4 CURVE keypairs were missing") != std::string::npos);
  r = run_qgossip({"keys", "--config", cfg.string(), "--missing", "--force"});
  CHECK(r.exit_code == 2);
  r = run_qgossip({"keys", "--config", cfg.string(), "--missing", "--out", (tmp.path / "plain").string(), "--set",
                   "network.security=none"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("network.security: none: no keys needed, none made") != std::string::npos);
  CHECK(!fs::exists(tmp.path / "plain"));
  // --ranks (train.sbatch on several hosts: each host its own ranks' keys only), --print-dir.
  const fs::path host = tmp.path / "host";
  r = run_qgossip({"keys", "--config", cfg.string(), "--missing", "--ranks", "1,2", "--out", host.string()});
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("2 of 2 CURVE keypairs were missing") != std::string::npos);
  CHECK(fs::exists(secret_key_path(host, 1)));
  CHECK(fs::exists(public_key_path(host, 2)));
  CHECK(!fs::exists(secret_key_path(host, 0)));
  CHECK(!fs::exists(secret_key_path(host, 3)));
  r = run_qgossip({"keys", "--config", cfg.string(), "--ranks", "4", "--out", host.string()});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--ranks 4: the topology's ranks are 0..3") != std::string::npos);
  r = run_qgossip({"keys", "--config", cfg.string(), "--print-dir"});
  CHECK(r.exit_code == 0);
  CHECK(r.output == keys.string() + "\n");
  r = run_qgossip({"keys", "--config", cfg.string(), "--print-dir", "--set", "network.security=none"});
  CHECK(r.exit_code == 0);
  CHECK(r.output.empty());  // no keys needed: nothing to print

  // A secret key others may read is refused.
  fs::permissions(secret_key_path(keys, 0), fs::perms::others_read, fs::perm_options::add);
  r = run_qgossip({"run", "--config", cfg.string(), "--rank", "0"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("may be read or written by group or others (mode 0604)") != std::string::npos);
  // A peer's public key that is missing is named.
  fs::permissions(secret_key_path(keys, 0), fs::perms::others_read, fs::perm_options::remove);
  fs::remove(public_key_path(keys, 3));
  r = run_qgossip({"run", "--config", cfg.string(), "--rank", "0"});
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("cannot read the CURVE public key " + public_key_path(keys, 3).string()) != std::string::npos);
}
