// A hostile key holder on a real run (docs/security.md, "Attacks as experiment input"; issue 30):
// the grid's cheap cell. 16 `qgossip run` processes on loopback, a ring, CHOCO-SGD with 8-bit QSGD
// and H = 1 (configs/choco-8bit-h1.yaml) for one epoch; rank 5 sends the noise attack (its model
// plus N(0, 1) per entry, each round) with robust mixing off and on, beside the clean run.
//
// Tolerances: the runs are synchronous and seeded, so each reproduces bit for bit; the bounds sit
// far from what was measured (clean 0.781 worst honest node; attacked, off 0.308, on 0.779).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "qgossip/build_config.hpp"
#include "tests/integration/process.hpp"

using namespace qgossip::testing;
namespace fs = std::filesystem;

namespace {

constexpr int kNodes = 16;
constexpr int kHostile = 5;

struct attacked_run {
  std::string output;
  std::map<int, nlohmann::ordered_json> nodes;
  double worst_honest = 1;
};

attacked_run launch(const temp_dir& tmp, const std::string& name, const std::string& scenario, bool robust,
                    const std::vector<int>& hostile = {kHostile}, const char* screen = nullptr) {
  const std::string recipe = std::string(QGOSSIP_SOURCE_DIR) + "/configs/choco-8bit-h1.yaml";
  std::vector<std::string> args{
      "launch",  recipe,
      "--plain", "--no-plot",
      "--set",   "train.epochs=1",
      "--set",   "topology={graph: ring, n: 16, base_port: " + std::to_string(free_port_range(kNodes)) + "}",
      "--set",   "network.on_peer_failure=continue",
      "--set",   "output.dir=" + (tmp.path / "runs").string(),
      "--set",   "name=" + name};
  if (robust) args.insert(args.end(), {"--set", "algorithm.robust.clip=auto"});
  if (screen) args.insert(args.end(), {"--set", std::string("algorithm.robust.screen=") + screen});
  if (!scenario.empty()) args.insert(args.end(), {"--scenario", scenario});
  const process_result r = run_qgossip(args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  attacked_run run{r.output, summaries(tmp.path / "runs" / name, kNodes), 1};
  for (const auto& [rank, s] : run.nodes)
    if (std::find(hostile.begin(), hostile.end(), rank) == hostile.end() || scenario.empty())
      run.worst_honest = std::min(run.worst_honest, number(s, "test_acc"));
  MESSAGE(name << ": worst honest node " << run.worst_honest << " (" << r.seconds << " s)");
  return run;
}

}  // namespace

TEST_CASE("a hostile node's noise drags its honest neighbours down unless robust mixing clips it") {
  temp_dir tmp;
  const fs::path scenario = tmp.path / "noise.yaml";
  write_file(scenario, "hostile:\n  - {rank: 5, attack: noise}\n");
  const attacked_run clean = launch(tmp, "clean", "", false);
  const attacked_run off = launch(tmp, "off", scenario.string(), false);
  const attacked_run on = launch(tmp, "on", scenario.string(), true);

  CHECK(off.output.find("hostile (scenario): rank 5 attacks: noise (sigma 1)") != std::string::npos);
  for (const attacked_run* r : {&off, &on}) {
    // The forged copies are left out of the check; every honest copy is still exact.
    CHECK(r->output.find("not compared: 5") != std::string::npos);
    CHECK(r->output.find("copies checked against their owners: all equal") != std::string::npos);
    for (const auto& [rank, s] : r->nodes)
      CHECK(text(s, "hostile") == (rank == kHostile ? "noise (sigma 1)" : ""));
  }
  CHECK(off.worst_honest < clean.worst_honest - 0.10);  // the attack has teeth
  CHECK(on.worst_honest > clean.worst_honest - 0.02);   // and clipping holds it off

  // qgossip logs reports the honest nodes: 15 of them, their minimum the worst honest node.
  const process_result logs = run_qgossip({"logs", (tmp.path / "runs" / "off").string()});
  CHECK(logs.output.find(
            "hostile (a scenario's attack; left out of the spread and the warnings): rank 5 noise") !=
        std::string::npos);
  CHECK(logs.output.find("spread across the honest nodes") != std::string::npos);
  CHECK(logs.output.find("(15 nodes)") != std::string::npos);
}

// Its neighbours refuse it for good (it would only send NaN again: no rejoining), and with robust
// mixing they no longer count it against `tolerate`: left with one neighbour each, they mix with it
// rather than train alone (before: rank 5 rejoined every 3 rounds and was dropped again, and with
// robust mixing ranks 4 and 6 trained alone, 0.766 worst honest node).
// A neighbour that has not yet seen a NaN message may take rank 5 back once: a slower rank 6 still
// at round 9 hears rank 5's join (after rank 4 dropped it) before its round-10 message is read, and
// admits it, with no evidence against it. What holds on every interleaving: a node that refused
// one of its messages itself never admits it afterwards, and by the end both neighbours have dropped it.
TEST_CASE(
    "a hostile node that sends NaN is refused by its neighbours, dropped for good, and trained around") {
  temp_dir tmp;
  const fs::path scenario = tmp.path / "nan.yaml";
  write_file(scenario, "hostile:\n  - {rank: 5, attack: nan, from_round: 10}\n");
  for (bool robust : {false, true}) {
    const std::string name = robust ? "nan-robust" : "nan";
    const attacked_run r = launch(tmp, name, scenario.string(), robust);
    int refusals = 0;
    for (int rank : {4, 6}) {
      INFO("rank " << rank);
      CHECK(text(r.nodes.at(rank), "departed") == "5");
      const std::string log = read_file(tmp.path / "runs" / name / ("node-" + std::to_string(rank) + ".log"));
      const std::size_t refused = log.find("(rank " + std::to_string(rank) + ": sent a train message");
      if (refused == std::string::npos) continue;  // it learnt of the departure first
      ++refusals;
      CHECK(log.find("took rank 5 back", refused) == std::string::npos);  // never admitted again
      if (robust) CHECK(number(r.nodes.at(rank), "clip_tau") > 0);        // it mixes with its one neighbour
    }
    CHECK(refusals >= 1);
    for (const auto& [rank, s] : r.nodes)
      if (rank != kHostile) CHECK(text(s, "status") == "ok");
    CHECK(r.worst_honest > 0.77);
  }
}

// Two adjacent ranks train on flipped labels: honest models of a poisoned objective, which lie as
// near as honest ones, so clipping passes them (docs/security.md: 8.8 points lost on the demo's
// grid). The loss screen sees what they do: their copies' loss on ranks 4's and 7's check examples
// is far above those ranks' own, and they are left out of the mix; nobody else's neighbour is.
TEST_CASE("the loss screen leaves label-flipping neighbours out of the mix, and only them") {
  temp_dir tmp;
  const fs::path scenario = tmp.path / "flip.yaml";
  write_file(scenario, "hostile:\n  - {rank: 5, attack: label_flip}\n  - {rank: 6, attack: label_flip}\n");
  const attacked_run r = launch(tmp, "screen", scenario.string(), true, {5, 6}, "1.0");
  for (const auto& [rank, s] : r.nodes) {
    if (rank == 5 || rank == 6) continue;
    INFO("rank " << rank);
    CHECK(number(s, "screen_fraction") == (rank == 4 || rank == 7 ? 0.5 : 0.0));  // the last round's
    CHECK(number(s, "screen_loss_gap") < (rank == 4 || rank == 7 ? 1e9 : 1.0));
    if (rank == 4 || rank == 7) CHECK(number(s, "screen_loss_gap") > 1.0);
  }
  CHECK(r.worst_honest > 0.77);
}
