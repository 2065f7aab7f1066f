#include "node/config/hostile_file.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "node/attack/forger.hpp"
#include "node/config/scenario_list.hpp"

namespace qgossip {

namespace {

// The parameter `key` of an attack that takes it, else its absence; `positive`: > 0, else finite.
void read_parameter(yaml_reader& e, std::string_view key, bool takes, bool positive, double& value) {
  const auto node = e.child(key);
  if (!node) return;
  if (!takes)
    throw e.error_at(*node, e.key_path(key) + ": this attack takes no " + std::string(key) +
                                " (docs/security.md, \"Attacks as experiment input\")");
  value = e.require_double(key);
  if (!std::isfinite(value) || (positive && value <= 0))
    throw e.error_at(*node, e.key_path(key) + ": expected a " + (positive ? "number > 0" : "finite number"));
}

attack_spec read_entry(yaml_reader& e, int n) {
  attack_spec a;
  a.rank = require_rank(e, n);
  const std::string word = e.require_string("attack");
  const std::optional<attack_kind> kind = parse_attack(word);
  if (!kind)
    throw e.error_at(*e.child("attack"),
                     e.key_path("attack") +
                         ": expected one of flip, scale, noise, nan, label_flip, alie, ipm, "
                         "dissensus, equivocate, adaptive; received '" +
                         word + "'");
  a.attack = *kind;
  const std::int64_t from = e.get_int("from_round", 1);
  if (from < 1)
    throw e.error_at(*e.child("from_round"), e.key_path("from_round") + ": expected a round >= 1");
  a.from_round = static_cast<std::uint64_t>(from);
  if (a.attack == attack_kind::equivocate) a.lambda = 1;
  if (a.attack == attack_kind::dissensus) a.epsilon = 1;
  read_parameter(e, "lambda", a.attack == attack_kind::scale || a.attack == attack_kind::equivocate, true,
                 a.lambda);
  read_parameter(e, "sigma", a.attack == attack_kind::noise, true, a.sigma);
  read_parameter(e, "z", a.attack == attack_kind::alie, false, a.z);
  read_parameter(e, "epsilon", a.attack == attack_kind::ipm || a.attack == attack_kind::dissensus, false,
                 a.epsilon);
  e.finish();
  return a;
}

}  // namespace

std::vector<attack_spec> read_hostile(const std::string& path, int n) {
  std::vector<attack_spec> out;
  read_scenario_list(path, "hostile", "{rank, attack, from_round, ...}", [&](yaml_reader& e, std::size_t i) {
    out.push_back(read_entry(e, n));
    const int rank = out.back().rank;
    if (std::count_if(out.begin(), out.end(), [rank](const attack_spec& a) { return a.rank == rank; }) > 1)
      throw e.error("hostile[" + std::to_string(i) + "]: rank " + std::to_string(rank) + " is listed twice");
  });
  return out;
}

void check_hostile(const run_config& c, const std::vector<attack_spec>& list, const std::string& path) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + ": hostile[" + std::to_string(i) + "]: ";
    if (const std::string why = attack_refusal(to_text(c.algorithm), list[i].attack); !why.empty())
      throw config_error(at + why);
    if (list[i].attack != attack_kind::label_flip && c.train.max_staleness == kUnboundedStaleness)
      throw config_error(at +
                         "train.max_staleness: unbounded keeps a public copy per edge, which the forger does "
                         "not model: give a bounded staleness, or 0");
    if (c.train.overlap)
      throw config_error(at + "train.overlap: a hostile node's round (its forger, its poisoned shard) runs on the "
                              "training thread, not beside the steps; run the scenario with overlap: false");
  }
}

std::optional<attack_spec> hostile_entry(const std::vector<attack_spec>& list, int rank) {
  for (const attack_spec& a : list) {
    if (a.rank != rank) continue;
    attack_spec mine = a;
    for (const attack_spec& other : list)
      if (other.rank != rank) mine.colluders.push_back(other.rank);
    return mine;
  }
  return std::nullopt;
}

}  // namespace qgossip
