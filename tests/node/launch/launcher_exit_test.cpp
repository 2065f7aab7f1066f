// How the launcher names a failure and what it returns: a node killed by a signal is named with the
// signal, never with the last line of its log (its start-up banner says nothing about the kill); the
// launch exits 2 when its first failing node exited 2 (bad input found at node start).
#include "node/launch/launcher.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace qgossip;
namespace fs = std::filesystem;

namespace {

struct scratch {
  fs::path path;
  scratch() {
    std::string tmpl = (fs::temp_directory_path() / "qgossip-launch-exit-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

node_process sh(int rank, const fs::path& dir, std::string script) {
  node_process n;
  n.rank = rank;
  n.argv = {"/bin/sh", "-c", std::move(script)};
  n.stderr_log = (dir / ("node-" + std::to_string(rank) + ".log")).string();
  return n;
}

launch_options quiet(std::ostream& out) {
  launch_options o;
  o.live = false;
  o.out = &out;
  o.kill_grace_s = 5;
  return o;
}

const char* kBanner =
    "echo '[node 0] dcd with qsgd, mlp 784-128-10; listening on tcp://127.0.0.1:29500' >&2; ";

}  // namespace

TEST_CASE("a node killed by a signal is named with the signal, not with its start-up banner") {
  scratch tmp;
  std::vector<node_process> nodes = {sh(0, tmp.path, std::string(kBanner) + "kill -KILL $$"),
                                     sh(1, tmp.path, "exec sleep 30")};
  std::ostringstream out;
  const launch_result res = launch(nodes, quiet(out));
  INFO(out.str());
  CHECK(res.exit_code == 1);
  CHECK(res.failed_rank == 0);
  CHECK(res.failure == "node 0 was killed by signal 9 (SIGKILL)");
  CHECK(out.str().find("node 0 was killed by signal 9 (SIGKILL)") != std::string::npos);  // the live line too
  CHECK(out.str().find("listening on") == std::string::npos);

  // A segfault likewise; an error event the node sent before dying is its own word, and is quoted.
  nodes = {
      sh(0, tmp.path,
         std::string(kBanner) + R"(echo '{"event":"error","rank":0,"message":"round 7: corrupt state"}'; )" +
             "kill -SEGV $$"),
      sh(1, tmp.path, "exec sleep 30")};
  const launch_result seg = launch(nodes, quiet(out));
  CHECK(seg.failure == "node 0 was killed by signal 11 (SIGSEGV) after reporting: round 7: corrupt state");
}

TEST_CASE("an exit code still quotes the node's last log line, which is its error") {
  scratch tmp;
  std::vector<node_process> nodes = {
      sh(0, tmp.path, std::string(kBanner) + "echo 'qgossip: error: run.yaml: no such port' >&2; exit 1")};
  std::ostringstream out;
  const launch_result res = launch(nodes, quiet(out));
  CHECK(res.exit_code == 1);
  CHECK(res.failure == "node 0 failed (exit 1): qgossip: error: run.yaml: no such port");
}

TEST_CASE("the launch exits 2 when its first failing node exited 2 (bad input), else 1") {
  scratch tmp;
  const fs::path ready = tmp.path / "ready";
  std::vector<node_process> nodes = {
      sh(0, tmp.path,
         "while [ ! -e " + ready.string() +
             " ]; do sleep 0.01; done; "
             "echo 'qgossip: error: /data/train-images-idx3-ubyte.gz: cannot open' >&2; exit 2"),
      // The other node is waiting for its neighbours when the launcher stops it: exit 130, not blamed.
      sh(1, tmp.path,
         "sleep 30 & trap 'kill $! 2>/dev/null; exit 130' TERM; touch " + ready.string() + "; wait")};
  std::ostringstream out;
  const launch_result res = launch(nodes, quiet(out));
  INFO(out.str());
  CHECK(res.exit_code == 2);
  CHECK(res.failed_rank == 0);
  CHECK(res.failure ==
        "node 0 failed (exit 2): qgossip: error: /data/train-images-idx3-ubyte.gz: cannot open");

  for (const int code : {1, 3, 70}) {
    CAPTURE(code);
    std::vector<node_process> one = {sh(0, tmp.path, "exit " + std::to_string(code))};
    CHECK(launch(one, quiet(out)).exit_code == 1);
  }
}
