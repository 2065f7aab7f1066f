#include "node/log/replica_check.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/json.hpp"
#include "node/log/node_status.hpp"
#include "node/log/run_dir.hpp"

namespace qgossip {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::ordered_json;
using summaries_by_rank = std::map<int, const json*>;

// The readable summaries by rank; each unreadable one, and a directory that could not be listed or
// holds none, is a problem.
summaries_by_rank readable_summaries(const run_dir_contents& run, replica_check_result& result) {
  summaries_by_rank summaries;
  for (const auto& [rank, f] : run.nodes) {
    if (f.summary)
      summaries[rank] = &*f.summary;
    else if (f.has_json)
      result.problems.push_back(run.file(rank, ".json").string() + ": " + f.summary_error);
  }
  if (!run.list_error.empty()) result.problems.push_back("cannot read " + run.dir.string() + ": " + run.list_error);
  if (summaries.empty()) result.problems.push_back("no node-<rank>.json summaries in " + run.dir.string());
  return summaries;
}

// A node that completed its rounds (ok), or stopped after the round every node agreed on (halted:
// SIGUSR1 before a time limit, docs/slurm.md), its copies exact at that round.
bool ended_cleanly(const std::string* status) {
  const std::optional<node_status> s = status ? parse_name<node_status>(*status) : std::nullopt;
  return s == node_status::ok || s == node_status::halted;
}

// The ranks the survivors' summaries say left the run ("departed": "3 5").
// Ranks some node lists as departed at the end, except those that came back and finished (docs/
// failures.md, "Rejoining": a rank whose own summary is ok with the most rounds any node completed;
// an edge of it that stayed down holds no copies, so only the copies held are compared).
std::set<int> departed_ranks(const summaries_by_rank& summaries) {
  std::set<int> departed;
  double last_round = 0;
  for (const auto& [rank, s] : summaries) {
    if (const auto v = json_number(*s, "rounds")) last_round = std::max(last_round, *v);
    if (const std::string* d = json_string(*s, "departed")) {
      std::istringstream words(*d);
      for (int r; words >> r;) departed.insert(r);
    }
  }
  for (auto it = departed.begin(); it != departed.end();) {
    const auto own = summaries.find(*it);
    const std::string* status = own == summaries.end() ? nullptr : json_string(*own->second, "status");
    const bool back = ended_cleanly(status) && json_number(*own->second, "rounds").value_or(-1) >= last_round;
    it = back ? departed.erase(it) : std::next(it);
  }
  return departed;
}

// An unfinished run: its copies legitimately differ (a node stopped mid-round), so comparing them
// would report mismatches that are no fault. Every rank of run.json's n must have a summary with
// status ok (or halted) and as many rounds as the most any node completed; fills result.unfinished
// otherwise.
// An asynchronous node that stopped when every neighbour had finished: its rounds are its own.
bool stopped_with_neighbours(const json& s) {
  const std::string* ended = json_string(s, "ended");
  return ended && *ended == "with its neighbours";
}

void find_unfinished(const summaries_by_rank& summaries, int expected, const std::set<int>& departed,
                     replica_check_result& result) {
  for (int r = 0; r < expected; ++r)
    if (!summaries.count(r) && !departed.count(r))
      result.unfinished.push_back("node " + std::to_string(r) + " has no summary (node-" + std::to_string(r) +
                                  ".json): it did not finish, or has not yet");
  double last_round = 0;
  for (const auto& [rank, s] : summaries)
    if (const auto v = json_number(*s, "rounds")) last_round = std::max(last_round, *v);
  for (const auto& [rank, s] : summaries) {
    const std::string* status = json_string(*s, "status");
    const double done = json_number(*s, "rounds").value_or(-1);
    const std::string who = "node " + std::to_string(rank);
    if (!ended_cleanly(status)) {
      const std::string* error = json_string(*s, "error");
      result.unfinished.push_back(who + " did not finish: status " + (status ? *status : "missing") +
                                  " after " + std::to_string(static_cast<long long>(std::max(0.0, done))) +
                                  " rounds" + (error && !error->empty() ? " (" + *error + ")" : ""));
    } else if (done < last_round && !stopped_with_neighbours(*s)) {
      result.unfinished.push_back(
          who + " did not reach the last round: " + std::to_string(static_cast<long long>(done)) +
          " rounds of " + std::to_string(static_cast<long long>(last_round)));
    }
  }
}

// "same_model": every node's model_hash against the first node's.
void compare_models(const summaries_by_rank& summaries, int rank, const json& s, replica_check_result& result) {
  const auto& [first_rank, first_summary] = *summaries.begin();
  if (rank == first_rank) return;
  const std::string* mine = json_string(s, "model_hash");
  const std::string* first = json_string(*first_summary, "model_hash");
  ++result.edges_checked;
  if (!mine || !first || *mine != *first)
    result.mismatches.push_back("node " + std::to_string(rank) + "'s model is " + (mine ? *mine : "?") +
                                " but node " + std::to_string(first_rank) + "'s is " + (first ? *first : "?"));
}

// Every copy_<owner> node `rank` holds against what the owner holds: its model_hash (a replica) or
// its own copy_<owner> (an estimate, a public copy), or copy_<owner>_at_<rank> when it keeps one
// per edge. A node's own copies (copy_<rank>, copy_<rank>_at_<j>) are what the others are
// compared with.
void compare_copies(const summaries_by_rank& summaries, int rank, const json& s, const std::string& kind,
                    replica_check_result& result) {
  for (const auto& [key, value] : s.items()) {
    if (key.rfind("copy_", 0) != 0) continue;
    const int owner = std::stoi(key.substr(5));
    if (owner == rank) continue;  // a node's own estimate is what the others are compared with
    if (std::binary_search(result.hostile.begin(), result.hostile.end(), owner))
      continue;  // forged on purpose
    auto it = summaries.find(owner);
    if (it == summaries.end()) {
      result.problems.push_back("node " + std::to_string(owner) + "'s summary is missing");
      continue;
    }
    const std::string* held = value.is_string() ? value.template get_ptr<const std::string*>() : nullptr;
    // The owner's copy of itself kept for this edge (a public copy per edge), else its one copy.
    const std::string* edge_copy = json_string(*it->second, key + "_at_" + std::to_string(rank));
    const std::string* truth = kind == "replica" ? json_string(*it->second, "model_hash")
                               : edge_copy       ? edge_copy
                                                 : json_string(*it->second, key);
    ++result.edges_checked;
    if (!held || !truth || *held != *truth)
      result.mismatches.push_back("node " + std::to_string(rank) + "'s " + kind + " of " + std::to_string(owner) +
                                  " is " + (held ? *held : "?") + " but node " + std::to_string(owner) + " has " +
                                  (truth ? *truth : "?"));
  }
}

// A node that speaks for a group: every member's model (its group_model_hashes) is the node's.
void compare_group(int rank, const json& s, replica_check_result& result) {
  const auto it = s.find("group_model_hashes");
  if (it == s.end() || !it->is_array()) return;
  const std::string* model = json_string(s, "model_hash");
  for (std::size_t k = 0; k < it->size(); ++k) {
    const json& member = (*it)[k];
    ++result.group_members_checked;
    if (!member.is_string() || !model || member.get<std::string>() != *model)
      result.mismatches.push_back("node " + std::to_string(rank) + "'s group member " + std::to_string(k) + " holds " +
                                  (member.is_string() ? member.get<std::string>() : "?") + " but the node's model is " +
                                  (model ? *model : "?"));
  }
}

}  // namespace

replica_check_result check_replicas(const run_dir_contents& run) {
  replica_check_result result;
  summaries_by_rank summaries = readable_summaries(run, result);
  const std::set<int> departed = departed_ranks(summaries);
  for (int r : departed) summaries.erase(r);  // a leaver's own view is not compared
  result.departed.assign(departed.begin(), departed.end());
  for (const auto& [rank, s] : summaries)
    if (const std::string* h = json_string(*s, "hostile"); h && !h->empty()) result.hostile.push_back(rank);
  result.nodes = static_cast<int>(summaries.size());
  find_unfinished(summaries, run.n, departed, result);
  if (!result.unfinished.empty()) return result;

  for (const auto& [rank, s] : summaries) {
    const std::string* kind = json_string(*s, "copies_kind");
    if (!kind) {
      result.problems.push_back("node " + std::to_string(rank) + "'s summary has no copies_kind");
      continue;
    }
    result.copies_kind = *kind;
    compare_group(rank, *s, result);
    if (*kind == "same_model")
      compare_models(summaries, rank, *s, result);
    else
      compare_copies(summaries, rank, *s, *kind, result);
  }
  return result;
}

replica_check_result check_replicas(const fs::path& run_dir) { return check_replicas(read_run_dir(run_dir)); }

}  // namespace qgossip
