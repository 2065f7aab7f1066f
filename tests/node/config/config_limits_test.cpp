// What the loader refuses before any node starts (the peer-node issue's "every input error caught at
// load"): ports that collide or do not exist, node counts past the supported maximum (computed in
// 64 bits), models too large, a directory given as the config, and range messages that read as a
// person would write them.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/errors.hpp"
#include "node/config/config.hpp"
#include "tests/node/config/config_files.hpp"
#include "topology/graph.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {


}  // namespace

TEST_CASE("two nodes on one host cannot share a port; localhost and 127.0.0.1 are one host") {
  scratch s;
  std::string f = s.write("dup.yaml",
                          "topology:\n"
                          "  graph: ring\n"
                          "  nodes:\n"
                          "    - {host: 10.0.0.1, port: 29500}\n"
                          "    - {host: localhost, port: 29501}\n"
                          "    - {host: 127.0.0.1, port: 29501}\n");
  CHECK(error_of(f) ==
        f + ":6:31: topology.nodes[2]: 127.0.0.1:29501 is already node 1's (localhost:29501); nodes "
            "on the same host need different ports");
  // The same port on different hosts is fine.
  f = s.write("ok.yaml",
              "topology:\n  graph: ring\n  nodes:\n    - {host: 10.0.0.1, port: 29500}\n"
              "    - {host: 10.0.0.2, port: 29500}\n    - {host: 10.0.0.3, port: 29500}\n");
  CHECK(error_of(f) == "(no error)");
  // A node without a port takes base_port + its index, which may collide with one given.
  f = s.write(
      "implicit.yaml",
      "topology:\n  graph: ring\n  base_port: 29500\n  nodes:\n    - {port: 29502}\n    - {}\n    - {}\n");
  CHECK(error_of(f) ==
        f + ":7:7: topology.nodes[2]: 127.0.0.1:29502 is already node 0's (127.0.0.1:29502); nodes "
            "on the same host need different ports");
}

TEST_CASE("every port is in 1..65535, base_port + n - 1 included") {
  scratch s;
  std::string f =
      s.write("p.yaml", "topology: {graph: ring, nodes: [{port: 70000}, {port: 2}, {port: 3}]}\n");
  CHECK(error_of(f) == f + ":1:40: topology.nodes[0].port: 70000 is out of range [1, 65535]");
  f = s.write("zero.yaml", "topology: {graph: ring, nodes: [{port: 1}, {port: 0}, {port: 3}]}\n");
  CHECK(error_of(f) == f + ":1:51: topology.nodes[1].port: 0 is out of range [1, 65535]");
  f = s.write("base.yaml", "topology: {graph: ring, n: 40, base_port: 65500}\n");
  CHECK(error_of(f) ==
        f + ":1:43: topology: base_port 65500 with n = 40 puts node 39 on port 65539, past 65535 "
            "(node r listens on base_port + r): lower base_port");
  f = s.write("edge.yaml", "topology: {graph: ring, n: 36, base_port: 65500}\n");  // 65535 exactly
  CHECK(error_of(f) == "(no error)");
  f = s.write("listed.yaml", "topology: {graph: ring, base_port: 65535, nodes: [{port: 100}, {}, {}]}\n");
  CHECK(error_of(f) ==
        f + ":1:64: topology.nodes[1]: no port given, and base_port + 1 = 65536 is past 65535 (give "
            "the node a port, or lower base_port)");
}

TEST_CASE("node counts are computed in 64 bits and refused above the supported maximum") {
  scratch s;
  REQUIRE(kMaxNodes == 4096);
  std::string f = s.write("torus.yaml", "topology:\n  graph: torus\n  rows: 65536\n  cols: 32768\n");
  CHECK(error_of(f) ==
        f + ":3:9: topology: a torus of 65536x32768 has 2147483648 nodes; at most 4096 nodes are "
            "supported");
  f = s.write("torus-ok.yaml", "topology:\n  graph: torus\n  rows: 64\n  cols: 64\n");  // 4096 exactly
  CHECK(error_of(f) == "(no error)");
  f = s.write("cube.yaml", "topology: {graph: hypercube, dim: 20}\n");
  CHECK(error_of(f) ==
        f + ":1:35: topology: a hypercube of dim 20 has 2^20 = 1048576 nodes; at most 4096 nodes are "
            "supported");
  f = s.write("cube-huge.yaml", "topology: {graph: hypercube, dim: 40}\n");  // 2^40: no int overflow either
  CHECK(error_of(f).find("has 2^40 = 1099511627776 nodes") != std::string::npos);
  f = s.write("n.yaml", "topology: {graph: ring, n: 5000}\n");
  CHECK(error_of(f) == f + ":1:28: topology.n: 5000 nodes; at most 4096 nodes are supported");
  f = s.write("n-huge.yaml", "topology: {graph: ring, n: 4294967298}\n");  // 2^32 + 2: not wrapped to 2
  CHECK(error_of(f) == f + ":1:28: topology.n: 4294967298 nodes; at most 4096 nodes are supported");
}

TEST_CASE("model size: counted in 64 bits, refused above 2^28 parameters at load") {
  model_spec m;
  m.kind = model_kind::mlp;
  m.hidden = {1048576};
  CHECK(eigen_model_params(m, 784, 10) == 784ull * 1048576 + 1048576 + 1048576ull * 10 + 10);
  m.hidden = {1048576, 1048576, 1048576};
  CHECK(eigen_model_params(m, 1048576, 1048576) == 4ull * (1ull << 40) + 4ull * (1 << 20));
  // Past 2^64 (no config gets there, but the count must not wrap to something small): saturates.
  CHECK(eigen_model_params(m, std::uint64_t{1} << 62, 1024) == std::numeric_limits<std::uint64_t>::max());
  model_spec soft;
  soft.kind = model_kind::softmax;
  soft.hidden.clear();
  CHECK(eigen_model_params(soft, 784, 10) == 7850);
  model_spec torch;
  torch.kind = model_kind::resnet20;
  CHECK(eigen_model_params(torch, 3072, 10) == 0);  // fixed architectures: not counted here

  scratch s;
  std::string f = s.write("big.yaml",
                          "topology: {graph: ring, n: 4}\n"
                          "model: {kind: mlp, hidden: [1048576]}\n");  // Fashion-MNIST: 784 -> 10
  CHECK(error_of(f) ==
        f + ":2:28: model: mlp 784-1048576-10 has 833617930 parameters (3.1 GiB per copy of the "
            "model), more than the limit of 268435456 (2^28); use narrower or fewer hidden layers");
  f = s.write("soft.yaml",
              "topology: {graph: ring, n: 4}\nmodel: {kind: softmax}\n"
              "data: {dataset: synthetic, synthetic: {dim: 1048576, classes: 65536}}\n");
  CHECK(error_of(f).find("model: softmax 1048576-65536 has 68719542272 parameters") != std::string::npos);
  f = s.write("fits.yaml", "topology: {graph: ring, n: 4}\nmodel: {kind: mlp, hidden: [4096, 4096]}\n");
  CHECK(error_of(f) == "(no error)");
  // npy: the shape is known only once the node reads the files (node/run checks it then).
  f = s.write("npy.yaml",
              "topology: {graph: ring, n: 4}\nmodel: {kind: mlp, hidden: [1048576]}\n"
              "data: {dataset: npy, dir: /nowhere}\n");
  CHECK(error_of(f) == "(no error)");
}

TEST_CASE("a directory given as the config says so") {
  scratch s;
  CHECK(error_of(s.dir.string()) == s.dir.string() + " is a directory, expected a run YAML file");
  fs::create_directories(s.dir / "topo.d");
  std::string f = s.write("run.yaml", "topology: topo.d\n");
  CHECK(error_of(f) == f + ":1:11: topology: " + (s.dir / "topo.d").string() +
                           " is a directory, expected a topology YAML file");
}

TEST_CASE("quantities that must be positive say so, and ranges print their numbers as written") {
  scratch s;
  std::string f = s.write("lr.yaml", "topology: {graph: ring, n: 4}\ntrain: {lr: 0}\n");
  CHECK(error_of(f) == f + ":2:13: train.lr: the learning rate must be > 0, got 0");
  f = s.write("neg.yaml", "topology: {graph: ring, n: 4}\ntrain: {lr: -0.5}\n");
  CHECK(error_of(f) == f + ":2:13: train.lr: the learning rate must be > 0, got -0.5");
  f = s.write("tiny.yaml", "topology: {graph: ring, n: 4}\ntrain: {lr: 1e-13}\n");
  CHECK(error_of(f) == f + ":2:13: train.lr: the learning rate must be at least 1e-12, got 1e-13");
  f = s.write("huge.yaml", "topology: {graph: ring, n: 4}\ntrain: {lr: 2e6}\n");
  CHECK(error_of(f) == f + ":2:13: train.lr: the learning rate must be at most 1e+06, got 2e+06");
  f = s.write("epochs.yaml", "topology: {graph: ring, n: 4}\ntrain: {epochs: 0}\n");
  CHECK(error_of(f) == f + ":2:17: train.epochs: the number of epochs must be > 0, got 0");
  f = s.write("timeout.yaml", "topology: {graph: ring, n: 4}\nnetwork: {round_timeout_s: 0}\n");
  CHECK(error_of(f) == f + ":2:28: network.round_timeout_s: the round time-out must be > 0, got 0");
  // Other ranges: the numbers as written (std::to_string would print 0.000000 and 0.999999).
  f = s.write("momentum.yaml", "topology: {graph: ring, n: 4}\ntrain: {momentum: 1}\n");
  CHECK(error_of(f) == f + ":2:19: train.momentum: 1 is out of range [0, 0.999999]");
  f = s.write("skew.yaml", "topology: {graph: ring, n: 4}\ndata: {skew: 1.25}\n");
  CHECK(error_of(f) == f + ":2:14: data.skew: 1.25 is out of range [0, 1]");
  f = s.write("alpha.yaml", "topology: {graph: ring, n: 4}\ndata: {partition: dirichlet, alpha: 0}\n");
  CHECK(error_of(f) == f + ":2:37: data.alpha: 0 is out of range [0.001, 1e+06]");
  f = s.write("alpha-iid.yaml", "topology: {graph: ring, n: 4}\ndata: {alpha: 0.5}\n");
  CHECK(error_of(f) == f + ":2:7: data.alpha is only read by partition: dirichlet");
  f = s.write("dirichlet.yaml", "topology: {graph: ring, n: 4}\ndata: {partition: dirichlet, alpha: 0.3}\n");
  const run_config c = load_run_config(f);
  CHECK(c.data.partition == partition_kind::dirichlet);
  CHECK(c.data.alpha == 0.3);
}

TEST_CASE("network.stall_timeout_s: none (the default), seconds >= 0; each node's own, not in the run id") {
  scratch s;
  const run_config d = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\n"));
  CHECK_FALSE(d.network.stall_timeout_s.has_value());
  CHECK_FALSE(load_run_config(s.write("none.yaml", "topology: {graph: ring, n: 4}\nnetwork: {stall_timeout_s: none}\n"))
                  .network.stall_timeout_s.has_value());
  const run_config c = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\nnetwork: {stall_timeout_s: 600}\n"));
  CHECK(c.network.stall_timeout_s == 600.0);
  CHECK(c.run_id == d.run_id);  // same name, same run
  CHECK(load_run_config(s.write("zero.yaml", "topology: {graph: ring, n: 4}\nnetwork: {stall_timeout_s: 0}\n"))
            .network.stall_timeout_s == 0.0);
  for (const char* bad : {"-1", "forever", "[1]"}) {
    CAPTURE(bad);
    const std::string f = s.write("bad.yaml", std::string("topology: {graph: ring, n: 4}\nnetwork: {stall_timeout_s: ") + bad + "}\n");
    CHECK(error_of(f).find(f + ":2:28: network.stall_timeout_s: expected seconds >= 0 (at most 1e7) or 'none'") == 0);
  }
}

TEST_CASE("node.threads: 0 (the cores the node may use) by default, 1 to 1024; not in the run id") {
  scratch s;
  const run_config d = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\n"));
  CHECK(d.threads == 0);
  const run_config c = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\nnode: {threads: 8}\n"));
  CHECK(c.threads == 8);
  CHECK(c.run_id == d.run_id);  // the same bits on any number of threads: the same run
  for (const char* bad : {"-1", "1025", "two"}) {
    CAPTURE(bad);
    const std::string f = s.write("bad.yaml", std::string("topology: {graph: ring, n: 4}\nnode: {threads: ") + bad + "}\n");
    CHECK(error_of(f).find(f + ":2:17: node.threads") == 0);
  }
  const std::string f = s.write("bad.yaml", "topology: {graph: ring, n: 4}\nnode: {thread: 2}\n");
  CHECK(error_of(f).find("threads") != std::string::npos);  // the closest key named
}

TEST_CASE("train.overlap: off by default and then outside the run id; refused for dcd and ecd") {
  scratch s;
  const run_config d = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\n"));
  CHECK_FALSE(d.train.overlap);
  CHECK(load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\ntrain: {overlap: false}\n")).run_id == d.run_id);
  const run_config on = load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\nalgorithm: choco\ntrain: {overlap: true}\n"));
  CHECK(on.train.overlap);
  CHECK(on.run_id != load_run_config(s.write("d.yaml", "topology: {graph: ring, n: 4}\nalgorithm: choco\n")).run_id);
  for (const char* ok : {"dpsgd", "naive", "{name: choco, consensus_step: 0.5}", "allreduce", "allgather"}) {
    CAPTURE(ok);
    CHECK(load_run_config(s.write("ok.yaml", std::string("topology: {graph: ring, n: 4}\nalgorithm: ") + ok +
                                                 "\ntrain: {overlap: true}\n"))
              .train.overlap);
  }
  for (const char* refused : {"dcd", "ecd"}) {
    CAPTURE(refused);
    const std::string f = s.write("no.yaml", std::string("topology: {graph: ring, n: 4}\nalgorithm: ") + refused +
                                                 "\ntrain: {overlap: true}\n");
    const std::string e = error_of(f);
    CHECK(e.find(f + ":3:18: ") == 0);  // the key's value
    CHECK(e.find("train.overlap: " + std::string(refused)) != std::string::npos);
    CHECK(e.find("use choco, dpsgd, naive or allreduce, or overlap: false") != std::string::npos);
  }
  const std::string f = s.write("typo.yaml", "topology: {graph: ring, n: 4}\ntrain: {overlap: maybe}\n");
  CHECK(error_of(f).find("train.overlap") != std::string::npos);
}

TEST_CASE("network.on_peer_failure: continue only where every round can go on without a node") {
  scratch s;
  std::string f = s.write("ok.yaml", "topology: {graph: ring, n: 4}\nnetwork: {on_peer_failure: continue, heartbeat_s: 2, max_rejected: 3}\n");
  const run_config c = load_run_config(f);
  CHECK(c.network.on_peer_failure == peer_failure_policy::train_on);
  CHECK(c.network.heartbeat_s == 2.0);
  CHECK(c.network.max_rejected == 3);
  CHECK(c.network.max_message_mib == 64);  // the default
  CHECK(load_run_config(s.write("chunk.yaml", "topology: {graph: ring, n: 4}\nnetwork: {max_message_mib: 0.5}\n"))
            .network.max_message_mib == 0.5);
  CHECK(error_of(s.write("chunk0.yaml", "topology: {graph: ring, n: 4}\nnetwork: {max_message_mib: 0}\n"))
            .find("network.max_message_mib") != std::string::npos);
  CHECK(error_of(s.write("chunk5.yaml", "topology: {graph: ring, n: 4}\nnetwork: {max_message_mib: 5000}\n"))
            .find("network.max_message_mib") != std::string::npos);
  CHECK(load_run_config(s.write("default.yaml", "topology: {graph: ring, n: 4}\n")).network.on_peer_failure == peer_failure_policy::stop);
  f = s.write("ar.yaml", "topology: {graph: ring, n: 4}\nalgorithm: allreduce\nnetwork: {on_peer_failure: continue}\n");
  CHECK(error_of(f).find("allreduce needs every node in every round") != std::string::npos);
  f = s.write("probe.yaml", "topology: {graph: ring, n: 4}\ntrain: {consensus_every: 5}\nnetwork: {on_peer_failure: continue}\n");
  CHECK(error_of(f).find("cannot be combined with train.consensus_every") != std::string::npos);
  f = s.write("typo.yaml", "topology: {graph: ring, n: 4}\nnetwork: {on_peer_failure: carry_on}\n");
  CHECK(error_of(f).find("network.on_peer_failure") != std::string::npos);
  f = s.write("hb.yaml", "topology: {graph: ring, n: 4}\nnetwork: {heartbeat_s: 0.01}\n");
  CHECK(error_of(f).find("network.heartbeat_s: expected 0 (off) or at least 0.05 s") != std::string::npos);
  // network.restart: a restarted node rejoins, so continue and synchronous gossip; not in the run id.
  f = s.write("restart.yaml", "topology: {graph: ring, n: 4}\nnetwork: {on_peer_failure: continue, restart: 2}\n");
  const run_config r = load_run_config(f);
  CHECK(r.network.restart == 2);
  f = s.write("restart.yaml", "topology: {graph: ring, n: 4}\nnetwork: {on_peer_failure: continue}\n");  // same name
  CHECK(r.run_id == load_run_config(f).run_id);
  f = s.write("restart-stop.yaml", "topology: {graph: ring, n: 4}\nnetwork: {restart: 1}\n");
  CHECK(error_of(f).find("network.restart: a restarted node rejoins the running graph") != std::string::npos);
  f = s.write("restart-async.yaml",
              "topology: {graph: ring, n: 4}\ntrain: {max_staleness: 2}\nnetwork: {on_peer_failure: continue, restart: 1}\n");
  CHECK(error_of(f).find("network.restart") != std::string::npos);
  f = s.write("restart-neg.yaml", "topology: {graph: ring, n: 4}\nnetwork: {restart: -1}\n");
  CHECK(error_of(f).find("network.restart") != std::string::npos);
}

TEST_CASE("train.max_staleness: whole rounds or unbounded; refused where the algorithm or probes need every node") {
  scratch s;
  const std::string base = "topology: {graph: ring, n: 4}\nalgorithm: dcd\ntrain: {max_staleness: ";
  CHECK(load_run_config(s.write("a.yaml", base + "3}\n")).train.max_staleness == 3);
  CHECK(load_run_config(s.write("b.yaml", base + "unbounded}\n")).train.max_staleness == kUnboundedStaleness);
  CHECK(load_run_config(s.write("c.yaml", base + "0}\n")).train.max_staleness == 0);
  for (const char* bad : {"-1", "1.5", "soon", "[1]"}) {
    CAPTURE(bad);
    const std::string f = s.write("bad.yaml", base + bad + "}\n");
    const std::string e = error_of(f);
    CHECK(e.find(f + ":3:") == 0);  // file:line:col of the value
    CHECK(e.find("train.max_staleness") != std::string::npos);
  }
  CHECK(error_of(s.write("ar.yaml", "topology: {graph: ring, n: 4}\nalgorithm: allreduce\ntrain: {max_staleness: 2}\n"))
            .find("asynchronous gossip is for the decentralized algorithms") != std::string::npos);
  CHECK(error_of(s.write("p.yaml", base + "2, consensus_every: 5}\n")).find("consensus probe") != std::string::npos);
  CHECK(error_of(s.write("k.yaml", base + "2, checkpoint_every: 5}\n")).find("checkpoints of asynchronous nodes") !=
        std::string::npos);
  // CHOCO with τ unbounded encodes a message per edge: a codec with sender state is refused there
  // (its compressor value named), accepted with a bounded τ.
  const std::string choco =
      "topology: {graph: ring, n: 4}\nalgorithm: choco\n"
      "compressor: {name: mcgq, variant: accumulate}\ntrain: {max_staleness: ";
  const std::string state_file = s.write("st.yaml", choco + "unbounded}\n");
  const std::string state_error = error_of(state_file);
  CHECK(state_error.find(state_file + ":3:") == 0);
  CHECK(state_error.find("keeps state from one message to the next") != std::string::npos);
  CHECK(load_run_config(s.write("st2.yaml", choco + "2}\n")).train.max_staleness == 2);
  // A synchronous run's canonical config does not name it (its run id is what it was before).
  CHECK(load_run_config(s.write("d.yaml", base + "0}\n")).canonical.find("max_staleness") == std::string::npos);
  CHECK(load_run_config(s.write("e.yaml", base + "unbounded}\n")).canonical.find("max_staleness: unbounded") !=
        std::string::npos);
}

TEST_CASE("model.kind external: what a program's loop cannot do yet is refused, each by name") {
  scratch s;
  const std::string base = "topology: {graph: ring, n: 4}\nmodel: {kind: external}\n";
  const run_config c = load_run_config(s.write("ok.yaml", base + "train: {local_steps: 8}\n"));
  CHECK(c.model.kind == model_kind::external);
  const std::pair<const char*, const char*> refused[] = {
      {"train: {checkpoint_every: 5}\n", "train.checkpoint_every"},
      {"train: {consensus_every: 5}\n", "train.consensus_every"},
      {"train: {max_staleness: unbounded}\n", "train.max_staleness: unbounded"},
      {"algorithm: allgather\ncompressor: {name: isgq}\n", "compressor: isgq"},
  };
  for (const auto& [extra, named] : refused) {
    CAPTURE(extra);
    const std::string error = error_of(s.write("bad.yaml", base + extra));
    CHECK(error.find("model.kind external") != std::string::npos);
    CHECK(error.find(named) != std::string::npos);
  }
  CHECK(error_of(s.write("hidden.yaml", "topology: {graph: ring, n: 4}\nmodel: {kind: external, hidden: [4]}\n"))
            .find("only mlp has configurable hidden layers") != std::string::npos);
}
