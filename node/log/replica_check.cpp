#include "node/log/replica_check.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/json.hpp"

namespace qgossip {

namespace fs = std::filesystem;

using json = nlohmann::ordered_json;

replica_check_result check_replicas(const fs::path& run_dir) {
  replica_check_result result;
  std::map<int, json> summaries;
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
    auto parsed = parse_json_object(ss.str(), &err);
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
    if (auto run = parse_json_object(ss.str()))
      if (const auto n = json_number(*run, "n")) expected = static_cast<int>(*n);
  }
  std::set<int> departed;
  for (const auto& [rank, s] : summaries)
    if (const std::string* d = json_string(s, "departed")) {
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
    if (const auto v = json_number(s, "rounds")) last_round = std::max(last_round, *v);
  for (const auto& [rank, s] : summaries) {
    const std::string* status = json_string(s, "status");
    const double done = json_number(s, "rounds").value_or(-1);
    const std::string who = "node " + std::to_string(rank);
    if (!status || *status != "ok") {
      const std::string* error = json_string(s, "error");
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
    const std::string* kind = json_string(s, "copies_kind");
    if (!kind) {
      result.problems.push_back("node " + std::to_string(rank) + "'s summary has no copies_kind");
      continue;
    }
    result.copies_kind = *kind;
    if (*kind == "same_model") {
      if (rank == summaries.begin()->first) continue;
      const std::string* mine = json_string(s, "model_hash");
      const std::string* first = json_string(summaries.begin()->second, "model_hash");
      ++result.edges_checked;
      if (!mine || !first || *mine != *first)
        result.mismatches.push_back("node " + std::to_string(rank) + "'s model is " + (mine ? *mine : "?") +
                                    " but node " + std::to_string(summaries.begin()->first) + "'s is " +
                                    (first ? *first : "?"));
      continue;
    }
    for (const auto& [key, value] : s.items()) {
      if (key.rfind("copy_", 0) != 0) continue;
      const int owner = std::stoi(key.substr(5));
      if (owner == rank) continue;  // a node's own estimate is what the others are compared with
      auto it = summaries.find(owner);
      if (it == summaries.end()) {
        result.problems.push_back("node " + std::to_string(owner) + "'s summary is missing");
        continue;
      }
      const std::string* held = value.is_string() ? value.template get_ptr<const std::string*>() : nullptr;
      const std::string* truth =
          *kind == "replica" ? json_string(it->second, "model_hash") : json_string(it->second, key);
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
