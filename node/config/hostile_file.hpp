#pragma once
// Hostile key holders as experiment input (docs/security.md, "Attacks as experiment input"): the
// `hostile:` list of a scenario file (configs/scenarios/), beside its churn: list. Each entry makes
// one rank, holding its real key, send an attack instead of its honest message from a round on:
//   hostile:
//     - {rank: 5, attack: flip}                      # −x, from round 1
//     - {rank: 6, attack: alie, z: 1.5, from_round: 200}  # a sleeper: honest until round 200
// `qgossip launch --scenario FILE` passes the file to every node; a node attacks only when its own
// rank is listed (node/attack/). The attacks and their parameters: node/attack/attack_kind.hpp.
#include <optional>
#include <string>
#include <vector>

#include "node/attack/attack_kind.hpp"
#include "node/config/config.hpp"

namespace qgossip {

// The hostile list of scenario file `path` for a run of n nodes, by rank; empty when it has none.
// Throws config_error (FILE:LINE:COL: what was expected) for a rank outside 0..n-1 or listed twice,
// an unknown attack, a parameter the attack does not take or out of its range, from_round < 1, or
// an unknown key.
[[nodiscard]] std::vector<attack_spec> read_hostile(const std::string& path, int n);

// Throws config_error ("FILE: hostile[i]: ...") when the run cannot carry an entry of the list: an
// attack its algorithm cannot send (node/attack/forger.hpp attack_refusal), or asynchronous gossip
// that may skip busy links (train.max_staleness: unbounded, whose per-edge copies the forger does
// not model).
void check_hostile(const run_config& c, const std::vector<attack_spec>& list, const std::string& path);

// The entry of `rank` in the list, if any, with the list's other ranks as its colluders.
[[nodiscard]] std::optional<attack_spec> hostile_entry(const std::vector<attack_spec>& list, int rank);

}  // namespace qgossip
