#pragma once
// A run directory (runs/<name>/, written by node/log/run_log.hpp) read once: what `qgossip logs`
// (node/log/run_summary.hpp) and `qgossip verify` (node/log/replica_check.hpp) both start from.
//
// read_run_dir lists the directory once, parses run.json and every node-<r>.json, and notes
// which node-<r>.csv and node-<r>.log exist (their contents are read by the command that needs
// them: `logs` reads the CSV's last rows and the log's last line, `verify` neither). It never
// throws on the directory's content: a file that cannot be read or is not one JSON object is
// recorded with why, and everything else is still read.
// Files are recognised by their exact names: run.json, and node-<r>.json / .csv / .log with r a
// rank written as run_log writes it (decimal, no leading zero, at most 6 digits); others are ignored,
// and so are the node files of ranks run.json's n does not have (strays).
// Thread-safety: reads files and returns a value; no shared state.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace qgossip {

// What a run directory holds for one rank.
struct node_files {
  int rank = 0;
  bool has_json = false, has_csv = false, has_log = false;  // node-<r>.json / .csv / .log exist
  std::optional<nlohmann::ordered_json> summary;  // node-<r>.json, parsed; nullopt when absent or unreadable
  std::string summary_error;  // has_json but no summary: why ("cannot read it", or what the parser said)
};

struct run_dir_contents {
  std::filesystem::path dir;
  bool is_directory = false;  // dir names a directory
  std::string list_error;     // the listing failed or stopped early: the system's words; "" when complete
  bool has_run_json = false;  // run.json exists
  std::optional<nlohmann::ordered_json> run_json;  // parsed; nullopt when absent or unreadable
  std::string run_json_error;                      // has_run_json but no run_json: why
  int n = 0;                                       // run.json's "n" (the ranks expected); 0 when unknown
  std::map<int, node_files> nodes;                 // every rank with at least one node-<r> file, by rank
                                                   // (below n when n is known)
  std::vector<int> strays;  // ranks >= n with node-<r> files: not this run's (an earlier run's left there)

  // dir / "node-<rank><suffix>", e.g. file(3, ".csv") is dir/node-3.csv.
  [[nodiscard]] std::filesystem::path file(int rank, std::string_view suffix) const;
};

// Reads `dir` as described at the top of this file. A path that is not a directory (or cannot be
// listed) gives is_directory = false and/or list_error set, and no files.
[[nodiscard]] run_dir_contents read_run_dir(const std::filesystem::path& dir);

// Before a run writes into `dir`: what an earlier run of another run id (another config under the
// same name) left there — run.json, node-<r>.{json,csv,log}, the figures, checkpoints/ — is moved
// into a new sibling folder <dir>.earlier-<k> (k = 1, 2, ...), so two runs never mix. The same
// run id (a rerun of the same config) overwrites its own files; keys/ always stays. Returns the
// folder the files went to, or nullopt when nothing was moved. Throws std::runtime_error when a
// file cannot be moved.
std::optional<std::filesystem::path> set_aside_earlier_run(const std::filesystem::path& dir, const std::string& run_id);

}  // namespace qgossip
