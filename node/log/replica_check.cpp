#include "node/log/replica_check.hpp"

#include <fstream>
#include <map>
#include <regex>
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
