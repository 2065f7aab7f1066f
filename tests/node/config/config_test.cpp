// The run-config loader: strict YAML (unknown keys with positions and hints, duplicate keys,
// non-finite numbers), --set overrides, topology files, and the run id.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/errors.hpp"
#include "node/config/config.hpp"
#include "tests/node/config/config_files.hpp"
#include "node/config/yaml_reader.hpp"

using namespace qgossip;
using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {


const char* kMinimal = "topology: {graph: ring, n: 4}\n";

}  // namespace

TEST_CASE("defaults fill everything a minimal config leaves out") {
  scratch s;
  run_config c = load_run_config(s.write("min.yaml", kMinimal));
  CHECK(c.name == "min");  // the file's stem
  CHECK(c.topology.n == 4);
  CHECK(c.topology.nodes.size() == 4);
  CHECK(c.topology.nodes[3].port == 29503);
  CHECK(c.algorithm == algorithm_kind::dcd);
  CHECK(c.compressor.name == "identity");
  CHECK(c.model.kind == model_kind::mlp);
  CHECK(c.train.batch == 32);
  CHECK(c.run_id != 0);
}

TEST_CASE("unknown keys: file, line, column, and the closest known key") {
  scratch s;
  std::string f = s.write("typo.yaml", "topology: {graph: ring, n: 4}\ntrain:\n  batch: 8\n  lr0: 0.1\n");
  CHECK(error_of(f) == f + ":4:3: unknown key 'lr0' in 'train' (did you mean 'lr'?)");
  f = s.write("top.yaml", "topology: {graph: ring, n: 4}\nalgoritm: ecd\n");
  CHECK(error_of(f) == f + ":2:1: unknown key 'algoritm' (did you mean 'algorithm'?)");
  f = s.write("far.yaml", "topology: {graph: ring, n: 4}\nzzz: 1\n");
  CHECK(error_of(f).find("unknown key 'zzz'; expected one of:") != std::string::npos);
}

TEST_CASE("duplicate keys, non-finite numbers, wrong types and bad choices are errors") {
  scratch s;
  std::string f = s.write("dup.yaml", "topology: {graph: ring, n: 4}\nseed: 1\nseed: 2\n");
  CHECK(error_of(f) == f + ":3:1: duplicate key 'seed'");
  f = s.write("nan.yaml", "topology: {graph: ring, n: 4}\ntrain: {lr: .inf}\n");
  CHECK(error_of(f) == f + ":2:13: train.lr: expected a finite number, got '.inf'");
  f = s.write("type.yaml", "topology: {graph: ring, n: 4}\ntrain: {batch: many}\n");
  CHECK(error_of(f) == f + ":2:16: train.batch: expected an integer, got 'many'");
  f = s.write("choice.yaml", "topology: {graph: ring, n: 4}\nalgorithm: dcd-psgd\n");
  CHECK(error_of(f).find("unknown value 'dcd-psgd'; expected one of dpsgd, naive, dcd, ecd, choco") != std::string::npos);
  f = s.write("choco.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, consensus_step: 0.3}\n");
  CHECK(load_run_config(f).algorithm_params.consensus_step == doctest::Approx(0.3));
  f = s.write("nochoco.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: dcd, consensus_step: 0.3}\n");
  CHECK(error_of(f).find("consensus_step is only read by choco") != std::string::npos);
  f = s.write("dtype.yaml", "topology: {graph: ring, n: 4}\nmodel: {kind: resnet20, dtype: bf16}\n"
              "data: {dataset: cifar10, dir: /nonexistent}\n");
  CHECK(load_run_config(f).model.dtype == model_dtype::bf16);
  f = s.write("dtype_mlp.yaml", "topology: {graph: ring, n: 4}\nmodel: {kind: mlp, dtype: bf16}\n");
  CHECK(error_of(f).find("model.dtype bf16 is for the libtorch models (lenet5, resnet20, torchscript); mlp "
                         "computes in fp32") != std::string::npos);
  f = s.write("dtype_avg.yaml", "topology: {graph: ring, n: 4}\nmodel: {kind: resnet20, dtype: bf16, buffers: average}\n"
              "data: {dataset: cifar10, dir: /nonexistent}\ntrain: {momentum: 0}\n");
  CHECK(error_of(f).find("with model.buffers: average: the averaged running statistics' pseudo-gradient needs "
                         "fp32") != std::string::npos);
  f = s.write("range.yaml", "topology: {graph: ring, n: 4}\ntrain: {batch: 0}\n");
  CHECK(error_of(f).find("train.batch: 0 is out of range") != std::string::npos);
}

TEST_CASE("algorithm.robust: clipping for the decentralized algorithms, auto or a radius, recorded in the canonical config") {
  scratch s;
  std::string f = s.write("robust.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clip: auto, tolerate: 2}}\n");
  run_config c = load_run_config(f);
  CHECK(c.algorithm_params.robust.on);
  CHECK_FALSE(c.algorithm_params.robust.tau);
  CHECK(c.algorithm_params.robust.tolerate == 2);
  CHECK(c.canonical.find("robust") != std::string::npos);
  const std::string again = s.write("again.yaml", c.canonical);
  const run_config back = load_run_config(again);
  CHECK(back.algorithm_params.robust.on);
  CHECK(back.algorithm_params.robust.tolerate == 2);
  CHECK(back.run_id == c.run_id);
  f = s.write("radius.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clip: 0.5}}\n");
  c = load_run_config(f);
  CHECK(c.algorithm_params.robust.tau == 0.5);
  CHECK(c.algorithm_params.robust.tolerate == 1);
  CHECK(c.run_id != load_run_config(s.write("plain.yaml", "topology: {graph: ring, n: 4}\nalgorithm: choco\n")).run_id);
  CHECK_FALSE(load_run_config(s.write("off.yaml", "topology: {graph: ring, n: 4}\nalgorithm: choco\n"))
                  .algorithm_params.robust.on);
  f = s.write("dcd.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: dcd, robust: {clip: auto}}\n");
  CHECK(load_run_config(f).algorithm_params.robust.on);
  f = s.write("ar.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: allreduce, robust: {clip: auto}}\n");
  CHECK(error_of(f).find("algorithm.robust: allreduce mixes no neighbours' models") != std::string::npos);
  f = s.write("neg.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clip: -1}}\n");
  CHECK(error_of(f).find("expected auto or a radius > 0") != std::string::npos);
  f = s.write("tol.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {tolerate: -1}}\n");
  CHECK(error_of(f).find("algorithm.robust.tolerate: expected") != std::string::npos);
  f = s.write("typo.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clips: auto}}\n");
  CHECK(error_of(f).find("unknown key 'clips'") != std::string::npos);
}

TEST_CASE(
    "algorithm.robust.screen: a loss margin > 0, kept in the canonical config, not for a program's model") {
  scratch s;
  std::string f =
      s.write("screen.yaml",
              "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clip: auto, screen: 1.5}}\n");
  const run_config c = load_run_config(f);
  CHECK(c.algorithm_params.robust.screen == 1.5);
  const run_config back = load_run_config(s.write("again.yaml", c.canonical));
  CHECK(back.algorithm_params.robust.screen == 1.5);
  CHECK(back.run_id == c.run_id);
  CHECK_FALSE(load_run_config(
                  s.write("none.yaml",
                          "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {clip: auto}}\n"))
                  .algorithm_params.robust.screen);
  f = s.write("zero.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {screen: 0}}\n");
  const std::string e = error_of(f);
  CHECK(e.rfind(f + ":2:", 0) == 0);
  CHECK(e.find("algorithm.robust.screen: expected a loss margin > 0") != std::string::npos);
  f = s.write("ecd.yaml", "topology: {graph: ring, n: 4}\nalgorithm: {name: ecd, robust: {screen: 1}}\n");
  CHECK(error_of(f).find("ecd mixes extrapolated estimates, not models") != std::string::npos);
  f = s.write("ext.yaml",
              "topology: {graph: ring, n: 4}\nalgorithm: {name: choco, robust: {screen: 1}}\n"
              "model: {kind: external}\n");
  CHECK(error_of(f).find("algorithm.robust.screen evaluates neighbours' copies on the node's own data") !=
        std::string::npos);
}

TEST_CASE("the compressor is validated with its position, inline or as a mapping") {
  scratch s;
  std::string f = s.write("c1.yaml", std::string(kMinimal) + "compressor: {name: qsgd, bits: 8, bucket: 128}\n");
  run_config c = load_run_config(f);
  CHECK(c.compressor.name == "qsgd");
  f = s.write("c2.yaml", std::string(kMinimal) + "compressor: qsgd:bits=4,bucket=512\n");
  CHECK(load_run_config(f).compressor.params.size() == 2);
  f = s.write("c3.yaml", std::string(kMinimal) + "compressor: {name: qsgd, levles: 3}\n");
  std::string e = error_of(f);
  CHECK(e.rfind(f + ":2:13: compressor:", 0) == 0);
  CHECK(e.find("levles") != std::string::npos);
  f = s.write("c4.yaml", std::string(kMinimal) + "algorithm: dpsgd\ncompressor: {name: qsgd, bits: 8}\n");
  e = error_of(f);
  CHECK(e.rfind(f + ":3:13: algorithm: dpsgd is the full-precision reference", 0) == 0);  // at the compressor
}

TEST_CASE("--set overrides nested keys, parses YAML values, and is checked like the file") {
  scratch s;
  std::string f = s.write("base.yaml", kMinimal);
  run_config c = load_run_config(f, {"train.lr=0.05", "model.hidden=[64, 32]", "topology.n=6"});
  CHECK(c.train.lr.lr == doctest::Approx(0.05));
  CHECK(c.model.hidden == std::vector<std::size_t>{64, 32});
  CHECK(c.topology.n == 6);
  CHECK(error_of(f, {"train.lr"}).find("expected key.path=value") != std::string::npos);
  CHECK(error_of(f, {"train.lrr=1"}).find("unknown key 'lrr'") != std::string::npos);
}

TEST_CASE("a topology file is found relative to the run config, and errors point into it") {
  scratch s;
  s.write("t.yaml", "graph: torus\nrows: 2\ncols: 3\nweights: metropolis_hastings\n");
  run_config c = load_run_config(s.write("run.yaml", "topology: t.yaml\n"));
  CHECK(c.topology.graph == graph_kind::torus);
  CHECK(c.topology.n == 6);
  std::string bad = s.write("bad.yaml", "graph: ring\nn: 4\nweight: uniform\n");
  CHECK(error_of(s.write("run2.yaml", "topology: bad.yaml\n")) ==
        bad + ":3:1: unknown key 'weight' in 'topology' (did you mean 'weights'?)");
}

// Issue 31, item 1: every shipped config names its topology as a file, and `--set topology.n=16`
// failed on all of them with "'topology' is not a mapping".
TEST_CASE("--set topology.KEY applies on top of a topology file, whose own errors still point into it") {
  scratch s;
  s.write("ring.yaml", "graph: ring\nn: 8\nweights: uniform\n");
  const std::string f = s.write("run.yaml", "topology: ring.yaml\n");
  run_config c = load_run_config(f, {"topology.n=16", "topology.base_port=21500"});
  CHECK(c.topology.n == 16);
  CHECK(c.topology.base_port == 21500);
  CHECK(c.topology.graph == graph_kind::ring);  // the rest from the file
  s.write("bad.yaml", "graph: ring\nn: 4\nweight: uniform\n");
  CHECK(error_of(s.write("run2.yaml", "topology: bad.yaml\n"), {"topology.n=6"}) ==
        (s.dir / "bad.yaml").string() + ":3:1: unknown key 'weight' in 'topology' (did you mean 'weights'?)");
  CHECK(error_of(f, {"topology.n=zero"}) == "--set topology.n=zero: topology.n: expected an integer, got 'zero'");
  // The last --set wins: a new topology file drops the edits made to the one before.
  s.write("torus.yaml", "graph: torus\nrows: 2\ncols: 2\n");
  CHECK(load_run_config(f, {"topology.n=16", "topology=" + (s.dir / "torus.yaml").string()}).topology.n == 4);
}

// Issue 31, item 5: `--set train.epochs=two` was reported at the file's 1:1, and `--set
// train.epoch=1` at a line of the file that has no such key.
TEST_CASE("an error in a --set value or key names the --set argument, not a place in the file") {
  scratch s;
  const std::string f = s.write("base.yaml", kMinimal);
  CHECK(error_of(f, {"train.epochs=two"}) == "--set train.epochs=two: train.epochs: expected a number, got 'two'");
  CHECK(error_of(f, {"train.epoch=1"}) ==
        "--set train.epoch=1: unknown key 'epoch' in 'train' (did you mean 'epochs'?)");
  CHECK(error_of(f, {"model={kind: mlp, hiden: [8]}"}).starts_with("--set model={kind: mlp, hiden: [8]}: unknown key "
                                                                    "'hiden' in 'model'"));
  // A value from the file keeps its position.
  const std::string g = s.write("bad.yaml", std::string(kMinimal) + "train: {epochs: two}\n");
  CHECK(error_of(g, {"seed=3"}).starts_with(g + ":"));
}

// Issue 31, item 8: `--set topology=PATH` with a PATH relative to the repository's root, given to
// configs/demo.yaml, was read from configs/ (so configs/ twice): a path on the command line is read
// from the current folder, one in the file from the file's folder.
TEST_CASE("--set topology=PATH is read from the current folder; a missing file says which rule applied") {
  scratch s;
  s.write("t.yaml", "graph: ring\nn: 3\n");
  fs::create_directories(s.dir / "configs");
  const std::string f = s.write("configs/run.yaml", "topology: ../t.yaml\n");
  const fs::path here = fs::current_path();
  fs::current_path(s.dir);
  const run_config c = load_run_config(f, {"topology=t.yaml"});
  const std::string missing = error_of(f, {"topology=nowhere.yaml"});
  fs::current_path(here);
  CHECK(c.topology.n == 3);
  CHECK(missing.find("cannot open " + (s.dir / "nowhere.yaml").lexically_normal().string()) != std::string::npos);
  CHECK(missing.find("from the current folder") != std::string::npos);
}

TEST_CASE("the run id is a function of the resolved config") {
  scratch s;
  std::string f = s.write("id.yaml", kMinimal);
  CHECK(load_run_config(f).run_id == load_run_config(f).run_id);
  CHECK(load_run_config(f).run_id != load_run_config(f, {"seed=2"}).run_id);
}

TEST_CASE("closest_match only hints at plausible typos") {
  const std::vector<std::string> keys{"epochs", "batch"};
  CHECK(closest_match("epoch", keys) == "epochs");
  CHECK(closest_match("xyzzy", keys).empty());
}

TEST_CASE("train.local_steps and train.outer: defaults, values, ranges, and what they cannot go with") {
  scratch s;
  run_config d = load_run_config(s.write("d.yaml", kMinimal));
  CHECK(d.train.local_steps == 1);
  CHECK(d.train.outer.is_identity());
  CHECK(d.train.outer.nesterov);
  run_config c = load_run_config(s.write("ls.yaml", std::string(kMinimal) +
                                                        "train: {local_steps: 16, outer: {lr: 0.7, momentum: 0.9, "
                                                        "nesterov: false}}\n"));
  CHECK(c.train.local_steps == 16);
  CHECK(c.train.outer.lr == doctest::Approx(0.7));
  CHECK(c.train.outer.momentum == doctest::Approx(0.9));
  CHECK(!c.train.outer.nesterov);
  CHECK(c.run_id != d.run_id);
  std::string f = s.write("zero.yaml", std::string(kMinimal) + "train: {local_steps: 0}\n");
  CHECK(error_of(f).find("train.local_steps: 0 is out of range") != std::string::npos);
  f = s.write("olr.yaml", std::string(kMinimal) + "train: {outer: {lr: 0}}\n");
  CHECK(error_of(f).find("train.outer.lr") != std::string::npos);
  f = s.write("omom.yaml", std::string(kMinimal) + "train: {outer: {momentum: 1}}\n");
  CHECK(error_of(f).find("train.outer.momentum: 1 is out of range") != std::string::npos);
  f = s.write("okey.yaml", std::string(kMinimal) + "train: {outer: {nestrov: true}}\n");
  CHECK(error_of(f).find("unknown key 'nestrov' in 'train.outer' (did you mean 'nesterov'?)") != std::string::npos);
  f = s.write("isgq.yaml", "topology: {graph: ring, n: 4}\nalgorithm: allgather\ncompressor: {name: isgq}\n"
                           "train: {local_steps: 4}\n");
  CHECK(error_of(f).find("isgq encodes one gradient's factors") != std::string::npos);
}

TEST_CASE("network.pace_mbit: default off, a rate in Mbit/s, recorded in the resolved config, never negative") {
  scratch s;
  std::string f = s.write("pace.yaml", kMinimal);
  CHECK(load_run_config(f).network.pace_mbit == 0);
  run_config c = load_run_config(f, {"network.pace_mbit=10"});
  CHECK(c.network.pace_mbit == doctest::Approx(10));
  CHECK(c.canonical.find("pace_mbit: 10") != std::string::npos);
  CHECK(c.run_id != load_run_config(f).run_id);
  CHECK(error_of(f, {"network.pace_mbit=-1"}).find("network.pace_mbit") != std::string::npos);
}

TEST_CASE("topology.nodes: {from: slurm} puts rank r on the host of the step's task r, port base_port + r") {
  scratch s;
  const std::string f = s.write("slurm.yaml", "topology:\n  graph: ring\n  n: 4\n  nodes: {from: slurm, base_port: 30000}\n");
  const env_lookup step = env_of({{"SLURM_STEP_NODELIST", "gpu[07-08]"}, {"SLURM_STEP_TASKS_PER_NODE", "3,1"},
                                  {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_DISTRIBUTION", "block"}});
  const run_config c = load_run_config(f, {}, step);
  REQUIRE(c.topology.nodes.size() == 4);
  const std::vector<std::string> hosts{"gpu07", "gpu07", "gpu07", "gpu08"};
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(c.topology.nodes[static_cast<std::size_t>(r)].host == hosts[static_cast<std::size_t>(r)]);
    CHECK(c.topology.nodes[static_cast<std::size_t>(r)].port == 30000 + r);
    CHECK(c.topology.nodes[static_cast<std::size_t>(r)].gpu == -1);
  }
  CHECK(c.topology.nodes_from == node_source::slurm);
  // run.json's config shows where each rank ran, and where that came from.
  CHECK(c.canonical.find("  nodes:  # {from: slurm, base_port: 30000}, resolved from SLURM_STEP_NODELIST=gpu[07-08], "
                         "SLURM_STEP_TASKS_PER_NODE=3,1\n") != std::string::npos);
  CHECK(c.canonical.find("- {host: gpu07, port: 30002, gpu: -1}\n    - {host: gpu08, port: 30003, gpu: -1}") !=
        std::string::npos);
  // The run id hashes the nodes as written: a requeued job on other hosts is the same run (its
  // checkpoints resume), while the listed form of the same hosts is another.
  const run_config elsewhere = load_run_config(
      f, {}, env_of({{"SLURM_STEP_NODELIST", "cpu[1-4]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"}}));
  CHECK(elsewhere.topology.nodes[3].host == "cpu4");
  CHECK(elsewhere.run_id == c.run_id);
  CHECK(elsewhere.canonical != c.canonical);
  CHECK(load_run_config(f, {"topology.nodes.base_port=30010"}, step).run_id != c.run_id);
  const std::string listed = s.write("listed.yaml", "topology:\n  graph: ring\n  n: 4\n  nodes: [{host: gpu07, port: "
                                                    "30000}, {host: gpu07, port: 30001}, {host: gpu07, port: 30002}, "
                                                    "{host: gpu08, port: 30003}]\n");
  CHECK(load_run_config(listed).run_id != c.run_id);
  // A topology file of its own reads the same.
  s.write("t.yaml", "graph: ring\nn: 4\nnodes:\n  from: slurm\n");
  const run_config t = load_run_config(s.write("run.yaml", "topology: t.yaml\n"), {}, step);
  CHECK(t.topology.nodes[3].host == "gpu08");
  CHECK(t.topology.nodes[3].port == 29503);  // base_port's default
}

TEST_CASE("topology.group_size: a Slurm step of n groups of g tasks puts node r at its speaker's host, task r x g") {
  scratch s;
  const std::string f = s.write("slurm.yaml", "model: {kind: external}\ntopology:\n  graph: ring\n  n: 2\n"
                                              "  group_size: 2\n  nodes: {from: slurm, base_port: 30000}\n");
  const env_lookup step = env_of({{"SLURM_STEP_NODELIST", "gpu[07-08]"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                  {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_DISTRIBUTION", "block"}});
  const run_config c = load_run_config(f, {}, step);
  CHECK(c.topology.group_size == 2);
  REQUIRE(c.topology.nodes.size() == 2);
  CHECK(c.topology.nodes[0].host == "gpu07");
  CHECK(c.topology.nodes[1].host == "gpu08");
  CHECK(c.topology.nodes[1].port == 30001);
  CHECK(c.canonical.find("group_size: 2") != std::string::npos);
  // Not given: absent from the run id's YAML (run ids of runs before the key are unchanged).
  CHECK(load_run_config(f, {"topology.group_size=1"}, env_of({{"SLURM_STEP_NODELIST", "gpu[07-08]"},
                                                                {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}}))
            .topology.nodes[1].host == "gpu08");
  const std::string none = s.write("none.yaml", "topology: {graph: ring, n: 2}\n");
  CHECK(load_run_config(none).canonical.find("group_size") == std::string::npos);
  CHECK(load_run_config(none).topology.group_size == 0);
  // A step of the wrong size names both numbers and the srun that fits.
  CHECK(error_of(f, {}, env_of({{"SLURM_STEP_NODELIST", "gpu[07-08]"}, {"SLURM_STEP_TASKS_PER_NODE", "1(x2)"}})) ==
        f + ":6:3: topology.nodes: the step runs 2 tasks (SLURM_STEP_TASKS_PER_NODE=1(x2)) but the topology has n = 2 "
            "nodes of topology.group_size = 2 tasks; {from: slurm} needs srun -n 4");
  // Any run YAML reads it (qgossip topology, keys, cluster.sh); `qgossip run` refuses it (host_checks).
  CHECK(load_run_config(s.write("mlp.yaml", "topology: {graph: ring, n: 2, group_size: 2}\n")).topology.group_size == 2);
  CHECK(error_of(s.write("zero.yaml", "topology: {graph: ring, n: 2, group_size: 0}\n")).find("group_size") !=
        std::string::npos);
}

TEST_CASE("topology.nodes: {from: slurm} outside a step, or a step it does not fit, is an error at the nodes key") {
  scratch s;
  const std::string f = s.write("slurm.yaml", "topology:\n  graph: ring\n  n: 4\n  nodes: {from: slurm, base_port: 30000}\n");
  CHECK(error_of(f) == f + ":4:3: topology.nodes: {from: slurm} needs SLURM_STEP_NODELIST, which is not set: run "
                           "under srun (or in a job, which sets SLURM_JOB_NODELIST)");
  CHECK(error_of(f, {}, env_of({{"SLURM_STEP_NODELIST", "vm"}, {"SLURM_STEP_TASKS_PER_NODE", "8"}})) ==
        f + ":4:3: topology.nodes: the step runs 8 tasks (SLURM_STEP_TASKS_PER_NODE=8) but the topology has n = 4 "
            "nodes; {from: slurm} needs one task per rank: srun -n 4");
  CHECK(error_of(f, {}, env_of({{"SLURM_STEP_NODELIST", "a,b"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                {"SLURM_DISTRIBUTION", "cyclic"}})) ==
        f + ":4:3: topology.nodes: {from: slurm} places tasks in blocks (consecutive ranks on one node), but "
            "SLURM_DISTRIBUTION=cyclic: run srun with --distribution=block, or list the hosts under nodes");
  const env_lookup ok = env_of({{"SLURM_STEP_NODELIST", "vm"}, {"SLURM_STEP_TASKS_PER_NODE", "4"}});
  auto with_nodes = [&](const std::string& name, const std::string& nodes) {
    return s.write(name, "topology:\n  graph: ring\n  n: 4\n  nodes: " + nodes + "\n");
  };
  std::string g = with_nodes("typo.yaml", "{from: slrum}");
  CHECK(error_of(g, {}, ok) == g + ":4:17: topology.nodes.from: unknown value 'slrum'; expected one of slurm (did you "
                                   "mean 'slurm'?)");
  g = with_nodes("key.yaml", "{from: slurm, base_prot: 1}");
  CHECK(error_of(g, {}, ok) == g + ":4:24: unknown key 'base_prot' in 'topology.nodes' (did you mean 'base_port'?)");
  g = with_nodes("port.yaml", "{from: slurm, base_port: 65534}");
  CHECK(error_of(g, {}, ok) == g + ":4:35: topology.nodes: base_port 65534 with n = 4 puts node 3 on port 65537, "
                                   "past 65535 (node r listens on base_port + r)");
  g = s.write("host.yaml", "topology: {graph: ring, n: 4, host: 10.0.0.1, nodes: {from: slurm}}\n");
  CHECK(error_of(g, {}, ok) == g + ":1:37: topology.host: not read with nodes: {from: slurm}, which takes every "
                                   "node's host from the Slurm step");
  const std::string no_n = s.write("no-n.yaml", "topology: {graph: ring, nodes: {from: slurm}}\n");
  CHECK(error_of(no_n, {}, ok) == no_n + ":1:11: topology: missing 'n' (the number of nodes: nodes: {from: slurm} "
                                          "gives their hosts, the step must run n tasks)");
  const std::string no_from = s.write("no-from.yaml", "topology: {graph: ring, n: 4, nodes: {base_port: 1}}\n");
  CHECK(error_of(no_from, {}, ok) == no_from + ":1:38: topology.nodes: expected a list of {host, port, gpu}, or "
                                               "{from: slurm, base_port: P}");
}
