#include "node/log/replica_check.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "node/launch/progress.hpp"

namespace qgossip {

namespace fs = std::filesystem;

namespace {

const std::string* string_field(const flat_json& j, std::string_view key) {
  const json_value* v = j.find(key);
  return v ? std::get_if<std::string>(v) : nullptr;
}

}  // namespace

replica_check_result check_replicas(const fs::path& run_dir) {
  replica_check_result result;
  std::map<int, flat_json> summaries;
  static const std::regex kName(R"(node-(\d+)\.json)");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName)) continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    std::string err;
    auto parsed = parse_flat_json(ss.str(), &err);
    if (!parsed) {
      result.problems.push_back(entry.path().string() + ": " + err);
      continue;
    }
    summaries[std::stoi(m[1].str())] = std::move(*parsed);
  }
  if (ec) result.problems.push_back("cannot read " + run_dir.string() + ": " + ec.message());
  if (summaries.empty()) result.problems.push_back("no node-<rank>.json summaries in " + run_dir.string());
  result.nodes = static_cast<int>(summaries.size());

  // An unfinished run first: its copies legitimately differ (a node stopped mid-round), so comparing
  // them would report mismatches that are no fault. Every rank of run.json's n must have a summary
  // with status ok and as many rounds as the most any node completed.
  int expected = 0;
  {
    std::ifstream in(run_dir / "run.json");
    std::stringstream ss;
    ss << in.rdbuf();
    if (auto run = parse_flat_json(ss.str()))
      if (const json_value* n = run->find("n"); n && std::holds_alternative<double>(*n))
        expected = static_cast<int>(std::get<double>(*n));
  }
  std::set<int> departed;
  for (const auto& [rank, s] : summaries)
    if (const std::string* d = string_field(s, "departed")) {
      std::istringstream words(*d);
      for (int r; words >> r;) departed.insert(r);
    }
  for (int r : departed) summaries.erase(r);  // a leaver's own view is not compared
  result.departed.assign(departed.begin(), departed.end());
  result.nodes = static_cast<int>(summaries.size());
  for (int r = 0; r < expected; ++r)
    if (!summaries.count(r) && !departed.count(r))
      result.unfinished.push_back("node " + std::to_string(r) + " has no summary (node-" + std::to_string(r) +
                                  ".json): it did not finish, or has not yet");
  double last_round = 0;
  for (const auto& [rank, s] : summaries)
    if (const json_value* v = s.find("rounds"); v && std::holds_alternative<double>(*v))
      last_round = std::max(last_round, std::get<double>(*v));
  for (const auto& [rank, s] : summaries) {
    const std::string* status = string_field(s, "status");
    const json_value* rounds = s.find("rounds");
    const double done = rounds && std::holds_alternative<double>(*rounds) ? std::get<double>(*rounds) : -1;
    const std::string who = "node " + std::to_string(rank);
    if (!status || *status != "ok") {
      const std::string* error = string_field(s, "error");
      result.unfinished.push_back(who + " did not finish: status " + (status ? *status : "missing") +
                                  " after " + std::to_string(static_cast<long long>(std::max(0.0, done))) +
                                  " rounds" + (error && !error->empty() ? " (" + *error + ")" : ""));
    } else if (done < last_round) {
      result.unfinished.push_back(
          who + " did not reach the last round: " + std::to_string(static_cast<long long>(done)) +
          " rounds of " + std::to_string(static_cast<long long>(last_round)));
    }
  }
  if (!result.unfinished.empty()) return result;

  for (const auto& [rank, s] : summaries) {
    const std::string* kind = string_field(s, "copies_kind");
    if (!kind) {
      result.problems.push_back("node " + std::to_string(rank) + "'s summary has no copies_kind");
      continue;
    }
    result.copies_kind = *kind;
    if (*kind == "same_model") {
      if (rank == summaries.begin()->first) continue;
      const std::string* mine = string_field(s, "model_hash");
      const std::string* first = string_field(summaries.begin()->second, "model_hash");
      ++result.edges_checked;
      if (!mine || !first || *mine != *first)
        result.mismatches.push_back("node " + std::to_string(rank) + "'s model is " + (mine ? *mine : "?") +
                                    " but node " + std::to_string(summaries.begin()->first) + "'s is " +
                                    (first ? *first : "?"));
      continue;
    }
    for (const auto& [key, value] : s.members) {
      if (key.rfind("copy_", 0) != 0) continue;
      const int owner = std::stoi(key.substr(5));
      if (owner == rank) continue;  // a node's own estimate is what the others are compared with
      auto it = summaries.find(owner);
      if (it == summaries.end()) {
        result.problems.push_back("node " + std::to_string(owner) + "'s summary is missing");
        continue;
      }
      const std::string* held = std::get_if<std::string>(&value);
      const std::string* truth =
          *kind == "replica" ? string_field(it->second, "model_hash") : string_field(it->second, key);
      ++result.edges_checked;
      if (!held || !truth || *held != *truth)
        result.mismatches.push_back("node " + std::to_string(rank) + "'s " + *kind + " of " + std::to_string(owner) +
                                    " is " + (held ? *held : "?") + " but node " + std::to_string(owner) +
                                    " has " + (truth ? *truth : "?"));
    }
  }
  return result;
}

}  // namespace qgossip
