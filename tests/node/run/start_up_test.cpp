// A node's start-up (node/run): a stop requested before round 1 still ends in a summary; host
// names are resolved (and this node's own checked) before anything waits on them; a model too
// large for the data it loaded is refused at node start when the config could not know its shape.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/config/config.hpp"
#include "core/json.hpp"
#include "node/run/node_network.hpp"
#include "node/run/node_runner.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

using qgossip::testing::scratch;
using qgossip::testing::read_text;

std::string config_text(const scratch& s, const std::string& topology, const std::string& transport) {
  return "name: startup\n"
         "topology: " +
         topology +
         "\n"
         "algorithm: dcd\n"
         "model: {kind: softmax}\n"
         "data: {dataset: synthetic, synthetic: {train: 400, test: 100, dim: 8, classes: 3}}\n"
         "train: {epochs: 1, batch: 10}\n"
         "network: {transport: " +
         transport +
         ", start_timeout_s: 1, round_timeout_s: 1, linger_s: 0}\n"
         "output: {dir: " +
         (s.dir / "runs").string() + "}\n";
}

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// An IPv4 address of the documentation range that is not one of this machine's (some sandboxes give
// themselves 192.0.2.x), or "" when every candidate is local.
std::string foreign_address() {
  for (const char* a : {"198.51.100.77", "203.0.113.77", "192.0.2.77"})
    if (!is_local_address(a)) return a;
  return "";
}

}  // namespace

TEST_CASE("a stop requested before round 1 ends the start-up with an interrupted summary, not silence") {
  scratch s;
  run_config c = load_run_config(s.write("run.yaml", config_text(s, "{graph: ring, n: 4}", "ipc")));
  node_run_options o;
  o.progress_json = false;
  request_stop();  // as the SIGTERM handler would, before the node has built anything
  const node_exit e = run_node(c, 2, o);
  clear_stop_request();
  CHECK(e == node_exit::interrupted);
  const std::string summary = read_text(s.dir / "runs" / "startup" / "node-2.json");
  INFO(summary);
  auto j = parse_json_object(summary);
  REQUIRE(j.has_value());
  const std::string* status = json_string(*j, "status");
  REQUIRE(status != nullptr);
  CHECK(*status == "interrupted");
  const std::string* error = json_string(*j, "error");
  REQUIRE(error != nullptr);
  CHECK(contains(*error,
                 "interrupted by a signal during start-up (before building the topology)"));
}

TEST_CASE("a host name that does not resolve is an error at once, naming the host and the rank") {
  CHECK(contains(error_of([] { (void)resolve_host("no-such-host.invalid", "rank 3"); }),
                 "rank 3's host 'no-such-host.invalid' does not resolve (getaddrinfo: "));
  CHECK(!resolve_host("127.0.0.1", "rank 0").empty());
  CHECK(!resolve_host("localhost", "rank 0").empty());

  scratch s;
  const std::string topology =
      "{graph: ring, nodes: [{host: 127.0.0.1, port: 29901}, {host: no-such-host.invalid, port: "
      "29902}, {host: 127.0.0.1, port: 29903}]}";
  run_config c = load_run_config(s.write("run.yaml", config_text(s, topology, "tcp")));
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  const std::string e = error_of([&] { check_hosts(c, 0, {1, 2}, warn); });
  CHECK(contains(e, "rank 1's host 'no-such-host.invalid' does not resolve"));
  CHECK(contains(e, "topology.nodes[1].host"));
  CHECK(contains(e, (s.dir / "run.yaml").string()));
  // Node 2 does not talk to node 1 in this call: only the hosts a node uses are resolved.
  CHECK(error_of([&] { check_hosts(c, 2, {0}, warn); }) == "(no error)");
  // The same run over ipc names no hosts.
  c.network.transport = transport_kind::ipc;
  CHECK(error_of([&] { check_hosts(c, 0, {1, 2}, warn); }) == "(no error)");
  CHECK(warnings.empty());
}

TEST_CASE("this node's own host must be an address of this machine") {
  CHECK(is_local_address("127.0.0.1"));
  CHECK(is_local_address("127.0.0.2"));  // all of 127/8 is loopback's
  CHECK(is_local_address("::1"));
  const std::string foreign = foreign_address();
  if (foreign.empty()) return;  // a machine holding every documentation address: nothing to check
  CHECK(!is_local_address(foreign));

  scratch s;
  const std::string topology = "{graph: ring, nodes: [{host: " + foreign +
                               ", port: 29901}, {host: 127.0.0.1, port: "
                               "29902}, {host: 127.0.0.1, port: 29903}]}";
  run_config c = load_run_config(s.write("run.yaml", config_text(s, topology, "tcp")));
  std::vector<std::string> warnings;
  // It listens on every interface (a non-loopback host), so a routed name might still reach it: the
  // node says so at once rather than failing.
  CHECK(error_of([&] {
          check_hosts(c, 0, {1, 2}, [&](const std::string& w) { warnings.push_back(w); });
        }) == "(no error)");
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings[0],
                 "rank 0's host '" + foreign + "' (" + foreign + ") is not an address of this machine"));
  CHECK(contains(warnings[0], "topology.nodes[0].host"));
  // Rank 1 is on loopback: no warning.
  warnings.clear();
  check_hosts(c, 1, {0, 2}, [&](const std::string& w) { warnings.push_back(w); });
  CHECK(warnings.empty());
}

TEST_CASE("npy data: a model too large for the loaded shape is refused at node start, before allocating it") {
  scratch s;
  // 4 single-channel 20x20 images (dim 400) and their labels, as numpy.save writes them.
  auto npy = [](const std::string& descr, const std::string& shape, const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY\x01";
    out += '\0';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
  };
  fs::create_directories(s.dir / "npy");
  for (const char* part : {"train", "test"}) {
    s.write(std::string("npy/") + part + "_images.npy",
            npy("|u1", "(4, 20, 20)", std::string(4 * 400, '\x07')));
    s.write(std::string("npy/") + part + "_labels.npy",
            npy("|u1", "(4,)", std::string("\x00\x01\x00\x01", 4)));
  }
  std::string y = config_text(s, "{graph: complete, n: 1}", "ipc");
  y.replace(y.find("model: {kind: softmax}"), 22, "model: {kind: mlp, hidden: [1048576]}");
  y.replace(y.find("data: {dataset: synthetic"), std::string::npos, "");
  y = "data: {dataset: npy, dir: " + (s.dir / "npy").string() +
      "}\ntrain: {epochs: 1, batch: 2}\n"
      "network: {transport: ipc}\noutput: {dir: " +
      (s.dir / "runs").string() + "}\n" + y;
  const std::string file = s.write("big.yaml", y);
  run_config c = load_run_config(file);  // the config cannot know npy's shape: no error yet
  node_run_options o;
  o.progress_json = false;
  const std::string e = error_of([&] { (void)run_node(c, 0, o); });
  CHECK(contains(e, file + ": model: mlp 400-1048576-2 has 422576130 parameters"));
  CHECK(contains(e, "more than the limit of 268435456 (2^28)"));
}

TEST_CASE("network.pace_mbit: the transport's payload pace, the unpaced burst, and what run.json says") {
  CHECK(pace_bytes_per_s(0) == 0);
  CHECK(unpaced_burst_bytes(0) == 0);
  // 10 Mbit/s on the wire: 95 % of it for payload, 1.1875 MB/s; bursts up to 100 ms of the link.
  CHECK(pace_bytes_per_s(10) == doctest::Approx(10e6 / 8 * kPacePayloadShare));
  CHECK(pace_bytes_per_s(10) == doctest::Approx(1187500));
  CHECK(unpaced_burst_bytes(10) == 125000u);
  network_config nw;
  CHECK(shaping_description(nw) == "none");
  nw.pace_mbit = 10;
  nw.shaping = "tc tbf";
  CHECK(shaping_description(nw) ==
        "sender paced: each node's TCP connections together at most 10 Mbit/s (network.pace_mbit, SO_MAX_PACING_RATE); "
        "tc tbf");
}
