// Bad input gets a clear error and exit code 2 from the real binary, never a crash: the cases the
// peer-node issue names, each written as the user would meet it.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/process.hpp"

using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

const char* kGood =
    "name: good\n"
    "topology: {graph: ring, n: 4, base_port: PORT}\n"
    "algorithm: dcd\n"
    "compressor: {name: qsgd, bits: 8}\n"
    "model: {kind: softmax}\n"
    "data: {dataset: synthetic, synthetic: {train: 400, test: 100, dim: 8, classes: 3}}\n"
    "train: {epochs: 1, batch: 10}\n"
    "network: {start_timeout_s: 2, round_timeout_s: 2, linger_s: 0}\n"
    "output: {dir: OUT}\n";

std::string config(const temp_dir& tmp, std::string text, int port = 29990) {
  auto put = [&](const std::string& key, const std::string& value) {
    for (auto p = text.find(key); p != std::string::npos; p = text.find(key)) text.replace(p, key.size(), value);
  };
  put("PORT", std::to_string(port));
  put("OUT", (tmp.path / "runs").string());
  return text;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("an unknown config key is reported with file, line, column and a hint") {
  temp_dir tmp;
  std::string y = config(tmp, kGood);
  y.replace(y.find("train: {epochs: 1"), 17, "train: {epoch: 1");
  fs::path f = tmp.path / "typo.yaml";
  write_file(f, y);
  process_result r = run_qgossip({"run", "--config", f.string(), "--rank", "0"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, f.string() + ":7:9: unknown key 'epoch' in 'train' (did you mean 'epochs'?)"));
}

TEST_CASE("duplicate keys and non-finite numbers are errors, not silently accepted") {
  temp_dir tmp;
  fs::path f = tmp.path / "dup.yaml";
  write_file(f, config(tmp, kGood) + "algorithm: ecd\n");
  process_result r = run_qgossip({"launch", f.string(), "--plain"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, ":10:1: duplicate key 'algorithm'"));

  std::string y = config(tmp, kGood);
  y.replace(y.find("batch: 10"), 9, "batch: 10, lr: .nan");
  write_file(f, y);
  r = run_qgossip({"launch", f.string(), "--plain"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "train.lr: expected a finite number, got '.nan'"));
}

TEST_CASE("weights that are not doubly stochastic are rejected, naming the row") {
  temp_dir tmp;
  fs::path topo = tmp.path / "bad-weights.yaml";
  write_file(topo,
             "graph: ring\nn: 3\nweights: explicit\nmatrix:\n"
             "  - [0.5, 0.25, 0.25]\n  - [0.25, 0.5, 0.25]\n  - [0.25, 0.25, 0.4]\n");
  process_result r = run_qgossip({"topology", topo.string()});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "row 2 of W sums to 0.9"));
  CHECK(contains(r.output, "FAILED"));

  fs::path run = tmp.path / "run.yaml";
  std::string y = config(tmp, kGood);
  y.replace(y.find("topology: {graph: ring, n: 4, base_port: 29990}"), 47, "topology: bad-weights.yaml");
  write_file(run, y);
  r = run_qgossip({"launch", run.string(), "--plain"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "bad-weights.yaml"));
  CHECK(contains(r.output, "row 2 of W sums to 0.9"));
}

TEST_CASE("a disconnected graph is rejected, naming an unreachable node") {
  temp_dir tmp;
  fs::path topo = tmp.path / "split.yaml";
  write_file(topo, "graph: edge_list\nn: 4\nedges: [[0, 1], [2, 3]]\n");
  process_result r = run_qgossip({"topology", topo.string()});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "disconnected: node 2 is not reachable from node 0"));
}

TEST_CASE("a missing data file names the file and the Debian package") {
  temp_dir tmp;
  std::string y = config(tmp, kGood);
  y.replace(y.find("data: {dataset: synthetic, synthetic: {train: 400, test: 100, dim: 8, classes: 3}}"), 82,
            "data: {dataset: fashion-mnist, dir: " + (tmp.path / "nowhere").string() + "}");
  fs::path f = tmp.path / "nodata.yaml";
  write_file(f, y);
  process_result r = run_qgossip({"run", "--config", f.string(), "--rank", "0"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "nowhere/train-images-idx3-ubyte.gz"));
  CHECK(contains(r.output, "dataset-fashion-mnist"));
}

TEST_CASE("a port in use is a clear start-up error") {
  temp_dir tmp;
  int port = free_port_range(4);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(fd, 1) == 0);
  fs::path f = tmp.path / "busy.yaml";
  write_file(f, config(tmp, kGood, port));
  process_result r = run_qgossip({"run", "--config", f.string(), "--rank", "0"});
  close(fd);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "cannot bind tcp://127.0.0.1:" + std::to_string(port) + ": Address already in use"));
}

TEST_CASE("every command answers --help") {
  for (const char* cmd : {"run", "launch", "topology", "plot", "verify"}) {
    process_result r = run_qgossip({cmd, "--help"});
    CAPTURE(cmd);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "Usage"));
  }
  process_result r = run_qgossip({"--help"});
  CHECK(r.exit_code == 0);
}

TEST_CASE("algorithm and compressor combinations that cannot work are refused before any node starts") {
  temp_dir tmp;
  fs::path f = tmp.path / "good.yaml";
  write_file(f, config(tmp, kGood));
  struct cas {
    std::vector<std::string> sets;
    const char* says;
  };
  for (const cas& c : {cas{{"algorithm=allreduce"}, "allreduce sums full-precision gradients"},
                       cas{{"compressor=isgq:kx=1,kd=1"}, "isgq sends each node's gradient factors to every node"},
                       cas{{"algorithm=allgather", "compressor=isgq:kx=1,kd=1", "train.momentum=0.9"},
                           "train.momentum and train.weight_decay cannot be applied"},
                       cas{{"compressor=isgq:kx=0"}, "isgq"},
                       cas{{"train.momentum=1"}, "train.momentum"},
                       cas{{"network.emulate.rate_mbit=-1"}, "network.emulate.rate_mbit"}}) {
    std::vector<std::string> args{"launch", f.string(), "--plain"};
    for (const auto& s : c.sets) args.insert(args.end(), {"--set", s});
    process_result r = run_qgossip(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, c.says));
  }
}
