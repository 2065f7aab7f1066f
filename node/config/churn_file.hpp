#pragma once
// Churn as experiment input (docs/failures.md, "Churn"): the `churn:` list of a scenario file
// (configs/scenarios/; its other keys are scripts/cluster.sh's), what `qgossip launch --churn FILE`
// does to its nodes while they run:
//   churn:
//     - {rank: 3, at_s: 10, down_s: 3, how: kill}   # SIGKILL at 10 s, started again at 13 s
//     - {rank: 5, at_s: 20, down_s: 4, how: stop}   # SIGSTOP at 20 s, SIGCONT at 24 s
// at_s counts from the launch. A killed node is started again with the same command and rejoins
// the running graph (network.on_peer_failure: continue).
#include <string>
#include <vector>

namespace qgossip {

struct churn_event {
  enum class kind { kill, stop };
  int rank = 0;
  double at_s = 0;
  double down_s = 0;
  kind how = kind::kill;
};

// The churn of scenario file `path` for a run of n nodes, sorted by at_s; empty when it has none.
// Throws config_error (FILE:LINE:COL: what was expected) for a rank outside 0..n-1, at_s < 0,
// down_s <= 0, a `how` other than kill or stop, an unknown key, or two events of one rank whose
// down times overlap.
[[nodiscard]] std::vector<churn_event> read_churn(const std::string& path, int n);

}  // namespace qgossip
